"""What a ready-made Python (Colab's) still lacks of the course library's requirements.

The notebooks that open in Colab install the course library with ``pip install --no-deps`` and then only the
requirements that are missing (:func:`missing_requirements`). Colab already has PyTorch, NumPy, SciPy,
Matplotlib, scikit-learn and Transformers; installing the course's own pins of those under a running kernel
would replace NumPy and force a restart of the session. A package that is there at another version is kept:
the chapters run on Colab's versions, whose numbers can differ slightly from the site's.
"""
from __future__ import annotations

from collections.abc import Callable
from importlib import metadata

from packaging.requirements import Requirement

from .errors import ConfigError


def installed_version(name: str) -> str | None:
    """The version of the installed distribution ``name``, or None when it is not installed."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def requirements(dist: str = "nlpcourse") -> list[Requirement]:
    """The requirements of ``dist`` that this Python needs: those of an extra and those whose marker does not
    hold here (another Python version or system) are left out."""
    try:
        declared = metadata.requires(dist) or []
    except metadata.PackageNotFoundError:
        raise ConfigError(f"{dist} is not installed: install it first "
                          f"(pip install --no-deps {dist} from the course's repository)") from None
    needed = []
    for line in declared:
        req = Requirement(line)
        # An empty extra makes every `extra == "..."` marker false: the plain install only.
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            needed.append(req)
    return needed


def missing_requirements(dist: str = "nlpcourse",
                         installed: Callable[[str], str | None] = installed_version) -> list[str]:
    """The requirements of ``dist`` whose distribution is not installed at all, as ``name==version`` (the
    pins of pyproject.toml), ready for ``pip install``. ``installed(name)`` gives a distribution's version or
    None (the real lookup by default; tests pass their own)."""
    missing = []
    for req in requirements(dist):
        if installed(req.name) is None:
            extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
            missing.append(f"{req.name}{extras}{req.specifier}")
    return missing
