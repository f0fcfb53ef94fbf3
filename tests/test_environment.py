"""environment.yml (conda) must mirror the pip pins of pyproject.toml."""
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pip_pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for items in project["optional-dependencies"].values():
        reqs += [r for r in items if not r.startswith("nlpcourse")]
    pins = {}
    for r in reqs:
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", r)
        assert m, f"pyproject.toml: {r!r} is not pinned with =="
        pins[m.group(1).lower()] = m.group(2)
    return pins


def conda_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "environment.yml").read_text().splitlines():
        m = re.match(r"\s*-\s+([A-Za-z0-9_.\-]+)==([^\s#]+)", line)
        if m:
            pins[m.group(1).lower()] = m.group(2)
    return pins


def test_environment_yml_mirrors_pyproject_pins():
    pip, conda = pip_pins(), conda_pins()
    assert pip["torch"] == "2.13.0"
    assert conda == pip, {
        "only in pyproject": sorted(set(pip) - set(conda)),
        "only in environment.yml": sorted(set(conda) - set(pip)),
        "differ": sorted(k for k in set(pip) & set(conda) if pip[k] != conda[k]),
    }


def test_jupyter_book_is_1x():
    assert pip_pins()["jupyter-book"].startswith("1.")
