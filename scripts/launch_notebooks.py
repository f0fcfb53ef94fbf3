#!/usr/bin/env python3
"""Notebooks that open in Colab and Binder: every chapter and every assignment, with an install cell first.

Colab opens only an .ipynb that lives in a GitHub repository, and the chapters are MyST Markdown (book/*.md).
This script writes, into OUT:

- ``book/<chapter>.ipynb``: each chapter of _toc.yml that is a notebook, converted with jupytext, without
  outputs, every cell kept (the site's hidden cells define names that later cells use);
- ``notebooks/<assignment>/<assignment>.ipynb``: each released assignment, every cell kept as it is;
- ``binder/requirements.txt``: what Binder installs (the course library at REVISION, PyTorch for the CPU);
- ``README.md``: what the folder is.

Every notebook starts with a new code cell that runs only on Colab: it installs the course library at
REVISION, and then only those of its requirements that Colab lacks (nlpcourse/install.py says why).
The publishing workflow (.github/workflows/pages.yml) pushes OUT as the branch ``launch``, which the site's
Colab and Binder buttons open; ``make book`` writes it into the site as _build/html/launch/.

    python scripts/launch_notebooks.py --repository https://github.com/ORG/REPO --revision SHA --out DIR

Without --repository: $NLPCOURSE_REPOSITORY, else `repository: url:` of _config.yml, else a placeholder that
the README asks to replace. Without --revision: $NLPCOURSE_REVISION, else `git rev-parse HEAD`, else the
branch of _config.yml.
"""
from __future__ import annotations

import argparse
import copy
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import yaml
from nbformat import NotebookNode

from nlpcourse.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER = "https://github.com/ORG/REPO"
CPU_INDEX = "--extra-index-url https://download.pytorch.org/whl/cpu"
INSTALL_ID = "install"
#: Chapters whose notebook asks Colab for a GPU, and what to say about it.
GPU_CHAPTERS = {"pretraining"}
GPU_NOTE = """\
**On a GPU.** This notebook asks Colab for a GPU (Runtime → Change runtime type). The chapter's own cells do
not use it: as written, they load the course's small trained models and run them on the CPU, a few minutes
in all, as when the site was built. The GPU is for your own experiments: `nlpcourse.fit` trains on it by itself
(`nlpcourse.get_device()` picks the GPU when there is one), and `.to("cuda")` moves any other model and its
inputs there. On Colab the numbers can differ slightly from the page's in their last digits: Colab's
PyTorch and NumPy versions and its processor add floating-point numbers in another order.
"""


class LaunchError(ConfigError):
    """The repository address, the revision or a source notebook cannot be used; the message says why."""


def install_source(repository: str, revision: str) -> str:
    """The install cell: on Colab only, the course library at ``revision``, then what Colab lacks of its
    requirements (IPython turns the indented %pip lines into calls)."""
    return (
        "# On Colab only: install the course library at this site's version, and what Colab lacks of its needs.\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        f'    %pip install --quiet --no-deps "nlpcourse @ git+{repository}@{revision}"\n'
        "    from nlpcourse.install import missing_requirements\n"
        "\n"
        "    missing = missing_requirements()  # Colab's own torch, numpy... stay as they are\n"
        "    if missing:\n"
        '        %pip install --quiet {" ".join(missing)}\n'
    )


def install_cell(repository: str, revision: str) -> NotebookNode:
    """The install cell, without nbgrader metadata: the grader treats it as a cell of the student's own."""
    return nbformat.v4.new_code_cell(install_source(repository, revision), id=INSTALL_ID)


def check_address(repository: str, revision: str) -> None:
    if not re.fullmatch(r"https://[\w.-]+/[\w.-]+/[\w.-]+", repository):
        raise LaunchError(f"--repository {repository!r} is not a repository address like {PLACEHOLDER}")
    if not re.fullmatch(r"[\w.-]+", revision):
        raise LaunchError(f"--revision {revision!r} is not a commit SHA or a branch name")


def toc_files(root: Path = ROOT) -> list[str]:
    """Every file of _toc.yml (the root page first), as written there: ``book/intro``, ``book/cnn``..."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    found: list[str] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            for key in ("root", "file"):
                if isinstance(node.get(key), str):
                    found.append(node[key])
            for value in node.values():
                if isinstance(value, (list, dict)):
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(toc)
    return list(dict.fromkeys(found))


def chapters(root: Path = ROOT) -> dict[str, Path]:
    """docname -> source of every page of _toc.yml that is a notebook (its MyST header has a kernelspec)."""
    found = {}
    for docname in toc_files(root):
        path = root / f"{docname.removesuffix('.md')}.md"
        if path.is_file() and "kernelspec" in jupytext.read(path, fmt="md:myst").metadata:
            found[docname.removesuffix(".md")] = path
    return found


def with_install_cell(nb: NotebookNode, repository: str, revision: str) -> NotebookNode:
    """A copy of ``nb`` with the install cell first and no outputs; cell ids made unique and stable."""
    out = copy.deepcopy(nb)
    out.nbformat, out.nbformat_minor = 4, max(5, int(out.get("nbformat_minor", 5)))
    taken = {c.get("id") for c in out.cells}
    if INSTALL_ID in taken:
        raise LaunchError(f"a cell already has the id {INSTALL_ID!r}, which the install cell needs")
    for cell in out.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    out.cells.insert(0, install_cell(repository, revision))
    return out


def chapter_notebook(path: Path, repository: str, revision: str) -> NotebookNode:
    """The chapter ``path`` (MyST) as a notebook that opens in Colab."""
    nb = jupytext.read(path, fmt="md:myst")
    nb.metadata.pop("jupytext", None)  # the .md is not beside it: nothing to pair with
    for i, cell in enumerate(nb.cells):  # jupytext draws random ids: the same ids on every run instead
        cell.id = f"{path.stem}-{i:03d}"
    nb = with_install_cell(nb, repository, revision)
    if path.stem in GPU_CHAPTERS:
        nb.metadata["accelerator"] = "GPU"
        nb.metadata["colab"] = {"gpuType": "T4"}
        nb.cells.insert(1, nbformat.v4.new_markdown_cell(GPU_NOTE, id="on-a-gpu"))
    nbformat.validate(nb)
    return nb


def assignment_notebook(path: Path, repository: str, revision: str) -> NotebookNode:
    """The released assignment ``path`` with the install cell first; its own cells are left as they are."""
    nb = with_install_cell(nbformat.read(path, as_version=4), repository, revision)
    nbformat.validate(nb)
    return nb


def requirements_txt(repository: str, revision: str) -> str:
    return (
        "# Binder: the course library at the site's version, with PyTorch built for the CPU (Binder has no GPU).\n"
        f"{CPU_INDEX}\n"
        f"nlpcourse @ git+{repository}@{revision}\n"
    )


def readme(repository: str, revision: str) -> str:
    text = (
        "# Launch notebooks (generated: do not edit)\n\n"
        "Written by `scripts/launch_notebooks.py` from the course's repository "
        f"{repository} at revision `{revision}`: every chapter (`book/`) and every assignment (`notebooks/`) "
        "as a notebook that opens in Colab and Binder. Each starts with a cell that, on Colab only, installs "
        "the course library at that revision. `binder/requirements.txt` is what Binder installs.\n\n"
        "Edit the chapters (`book/*.md`) and the assignments (`solutions/`) in the repository instead: the "
        "publishing workflow regenerates this folder and pushes it as the branch `launch`.\n"
    )
    if repository == PLACEHOLDER:
        text += (f"\nThe repository address {PLACEHOLDER} is a placeholder: set `repository: url:` in "
                 "_config.yml (or $NLPCOURSE_REPOSITORY) and build again.\n")
    return text


def write_notebook(nb: NotebookNode, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def write_all(out: Path, repository: str, revision: str, root: Path = ROOT) -> list[Path]:
    """Write the launch folder ``out`` (emptied first); returns the files written."""
    check_address(repository, revision)
    if out.exists():
        shutil.rmtree(out)
    written = [write_notebook(chapter_notebook(src, repository, revision), out / f"{docname}.ipynb")
               for docname, src in chapters(root).items()]
    for path in sorted((root / "notebooks").glob("*/*.ipynb")):
        target = out / path.relative_to(root)
        written.append(write_notebook(assignment_notebook(path, repository, revision), target))
    for name, text in (("binder/requirements.txt", requirements_txt(repository, revision)),
                       ("README.md", readme(repository, revision))):
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text, encoding="utf-8")
        written.append(out / name)
    return written


def default_repository(root: Path = ROOT) -> str:
    """$NLPCOURSE_REPOSITORY, else `repository: url:` of _config.yml, else the placeholder."""
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    configured = str((config.get("repository") or {}).get("url") or "")
    url = os.environ.get("NLPCOURSE_REPOSITORY", "").strip() or configured.strip()
    if url in ("", "https://github.com/executablebooks/jupyter-book"):  # Jupyter Book's default: not set
        return PLACEHOLDER
    return url.rstrip("/").removesuffix(".git")


def default_revision(root: Path = ROOT) -> str:
    """$NLPCOURSE_REVISION, else the commit checked out, else (no git) `repository: branch:` of _config.yml."""
    revision = os.environ.get("NLPCOURSE_REVISION", "").strip()
    if revision:
        return revision
    try:
        run = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=30)
    except OSError:  # no git at all
        run = None
    if run is not None and run.returncode == 0:
        return run.stdout.strip()
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    return str((config.get("repository") or {}).get("branch") or "main")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repository", help="https://github.com/ORG/REPO (default: see the docstring)")
    parser.add_argument("--revision", help="the commit the notebooks install (default: see the docstring)")
    parser.add_argument("--out", type=Path, required=True, help="the folder to write (emptied first)")
    args = parser.parse_args(argv)
    try:
        repository = (args.repository or default_repository()).rstrip("/")
        revision = args.revision or default_revision()
        written = write_all(args.out, repository, revision)
    except LaunchError as exc:
        print(f"launch_notebooks: {exc}", file=sys.stderr)
        return 2
    print(f"launch_notebooks: {len(written)} files in {args.out} ({repository} at {revision})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
