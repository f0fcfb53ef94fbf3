"""Chapters and assignments that open in Colab and Binder (scripts/launch_notebooks.py, nlpcourse/install.py,
book/_ext/course_repository.py); no build needed.

The generator's notebooks are valid, start with the install cell pinned to the given repository and revision,
hold every code cell of the chapter in order and no output; the assignments keep every cell of the release,
and the grader treats the install cell as a cell of the student's own. The install cell does nothing outside
Colab and, on Colab, installs the course and then only what is missing. The site's launch buttons open those
notebooks on the branch `launch`.
"""
from __future__ import annotations

import sys
import tomllib
import types
from pathlib import Path

import jupytext
import nbformat
import pytest
import yaml
from module_support import load_module, load_script
from packaging.requirements import Requirement

from grader.notebook import is_student_added, merge, tampering
from nlpcourse.errors import CourseError
from nlpcourse.install import missing_requirements

ROOT = Path(__file__).resolve().parents[1]
REPOSITORY = "https://github.com/example/course"
REVISION = "0123456789abcdef0123456789abcdef01234567"
PIN = f'"nlpcourse @ git+{REPOSITORY}@{REVISION}"'


launch = load_script("launch_notebooks")
extension = load_module("course_repository", ROOT / "book" / "_ext" / "course_repository.py")


def _toc_notebook_pages() -> list[str]:
    """Pages of _toc.yml whose MyST header names a kernel (read here without the generator's code)."""
    text = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    pages = []
    for name in [line.split(":", 1)[1].strip() for line in text.splitlines()
                 if line.strip().startswith(("root:", "- file:"))]:
        source = (ROOT / f"{name}.md").read_text(encoding="utf-8")
        if source.startswith("---\n") and "\nkernelspec:" in source.split("\n---\n", 1)[0]:
            pages.append(name)
    return pages


CHAPTERS = _toc_notebook_pages()
ASSIGNMENTS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "notebooks").glob("*/*.ipynb"))


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("launch")
    launch.write_all(folder, REPOSITORY, REVISION)
    return folder


def _code(nb) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "code"]


def test_every_chapter_and_assignment_is_written(out):
    assert len(CHAPTERS) >= 7, CHAPTERS
    written = {p.relative_to(out).as_posix() for p in out.rglob("*.ipynb")}
    assert written == {f"{page}.ipynb" for page in CHAPTERS} | set(ASSIGNMENTS)
    requirements = (out / "binder" / "requirements.txt").read_text()
    assert f"nlpcourse @ git+{REPOSITORY}@{REVISION}" in requirements.splitlines()
    assert launch.CPU_INDEX in requirements.splitlines()
    assert "generated: do not edit" in (out / "README.md").read_text()


@pytest.mark.parametrize("page", CHAPTERS)
def test_chapter_notebook_starts_with_the_install_cell(out, page):
    nb = nbformat.read(out / f"{page}.ipynb", as_version=4)
    nbformat.validate(nb)
    first = nb.cells[0]
    assert first.cell_type == "code" and PIN in first.source, first.source
    assert 'if "google.colab" in sys.modules:' in first.source
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code")
    source = jupytext.read(ROOT / f"{page}.md", fmt="md:myst")
    assert _code(nb)[1:] == _code(source), "the chapter's code cells, hidden ones too, in order, after the install"


@pytest.mark.parametrize("page", CHAPTERS)
def test_only_the_pretraining_chapter_asks_for_a_gpu(out, page):
    nb = nbformat.read(out / f"{page}.ipynb", as_version=4)
    if page.endswith("/pretraining"):
        assert nb.metadata["accelerator"] == "GPU" and nb.metadata["colab"]["gpuType"] == "T4"
        note = nb.cells[1]
        assert note.cell_type == "markdown" and "GPU" in note.source and "differ" in note.source
    else:
        assert "accelerator" not in nb.metadata and "colab" not in nb.metadata


@pytest.mark.parametrize("path", ASSIGNMENTS)
def test_assignment_keeps_every_cell_after_the_install_cell(out, path):
    released = nbformat.read(ROOT / path, as_version=4)
    nb = nbformat.read(out / path, as_version=4)
    nbformat.validate(nb)
    assert PIN in nb.cells[0].source and "nbgrader" not in nb.cells[0].metadata
    assert nb.cells[1:] == released.cells  # every nbgrader cell, its metadata and id as released


@pytest.mark.parametrize("path", ASSIGNMENTS)
def test_grader_takes_the_install_cell_for_a_cell_of_the_students_own(out, path):
    """grader/notebook.py: an extra cell is kept without grading metadata, before the first answer cell, and
    flags nothing; it cannot cost points (outside Colab it does nothing: the next test)."""
    name = Path(path).stem
    source = nbformat.read(ROOT / "solutions" / name / f"{name}.ipynb", as_version=4)
    released = nbformat.read(ROOT / path, as_version=4)
    submitted = nbformat.read(out / path, as_version=4)
    merged, report = merge(source, released, submitted)
    assert report == {"missing": [], "extra": 1}
    install = [c for c in merged.cells if PIN in c.source]
    assert len(install) == 1 and is_student_added(install[0])
    assert tampering(released, submitted) == []


class FakeShell:
    """get_ipython() of the install cell: records the line magics it runs, with {expressions} expanded in the
    cell's names by IPython's own formatter (what InteractiveShell.var_expand does)."""

    def __init__(self, namespace: dict):
        self.namespace, self.calls = namespace, []

    def run_line_magic(self, magic: str, line: str) -> None:
        from IPython.utils.text import DollarFormatter

        self.calls.append((magic, DollarFormatter().vformat(line, args=[], kwargs=self.namespace)))


def _run_install_cell(monkeypatch, on_colab: bool, missing: list[str]) -> list[tuple[str, str]]:
    from IPython.core.inputtransformer2 import TransformerManager

    import nlpcourse.install

    monkeypatch.setattr(nlpcourse.install, "missing_requirements", lambda: list(missing))
    if on_colab:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    namespace: dict = {}
    shell = FakeShell(namespace)
    namespace["get_ipython"] = lambda: shell
    exec(TransformerManager().transform_cell(launch.install_source(REPOSITORY, REVISION)), namespace)
    return shell.calls


def test_install_cell_does_nothing_outside_colab(monkeypatch):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    assert _run_install_cell(monkeypatch, on_colab=False, missing=["gensim==4.4.0"]) == []


def test_install_cell_on_colab_installs_the_course_then_what_is_missing(monkeypatch):
    calls = _run_install_cell(monkeypatch, on_colab=True, missing=["gensim==4.4.0", "pysword==0.2.8"])
    assert calls == [("pip", f"install --quiet --no-deps {PIN}"),
                     ("pip", "install --quiet gensim==4.4.0 pysword==0.2.8")]
    assert _run_install_cell(monkeypatch, on_colab=True, missing=[]) == [calls[0]]


def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(r) for r in project["dependencies"]]


def test_missing_requirements_are_those_not_installed_at_all():
    declared = {r.name: str(r) for r in _declared()}
    assert missing_requirements(installed=lambda name: "1.0") == []  # other versions are kept (Colab's own)
    assert sorted(missing_requirements(installed=lambda name: None)) == sorted(declared.values())
    absent = {"gensim", "pysword"}
    found = missing_requirements(installed=lambda name: None if name in absent else "0.0.1")
    assert found == [declared[n] for n in declared if n in absent]


def test_missing_requirements_leave_out_the_extras():
    names = {Requirement(r).name for r in missing_requirements(installed=lambda name: None)}
    assert names.isdisjoint({"jupyter-book", "nbgrader", "pytest", "nlpcourse"}), names


def test_missing_requirements_of_a_package_that_is_not_installed():
    with pytest.raises(CourseError, match="no-such-course-package is not installed"):
        missing_requirements("no-such-course-package")


def test_generator_refuses_a_bad_address(tmp_path, capsys):
    assert launch.main(["--repository", "github.com/example", "--revision", REVISION, "--out",
                        str(tmp_path / "x")]) == 2
    assert "not a repository address" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_generator_defaults(tmp_path, monkeypatch):
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["repository"]["url"] = ""
    (tmp_path / "_config.yml").write_text(yaml.safe_dump(config))
    monkeypatch.delenv("NLPCOURSE_REPOSITORY", raising=False)
    assert launch.default_repository(tmp_path) == launch.PLACEHOLDER
    assert "placeholder" in launch.readme(launch.PLACEHOLDER, REVISION)
    monkeypatch.setenv("NLPCOURSE_REPOSITORY", REPOSITORY + "/")
    assert launch.default_repository(tmp_path) == REPOSITORY
    monkeypatch.setenv("NLPCOURSE_REVISION", REVISION)
    assert launch.default_revision(tmp_path) == REVISION
    monkeypatch.delenv("NLPCOURSE_REVISION")
    assert launch.default_revision(tmp_path) == "main"  # tmp_path is no git checkout: _config.yml's branch


# ------------------------------------------------------------------ the site's launch buttons


def test_launch_urls_open_the_notebook_on_the_launch_branch():
    urls = extension.launch_urls(REPOSITORY + "/", "book/cnn", "https://colab.research.google.com",
                                 "https://mybinder.org/", "jupyterlab")
    assert urls == {
        "Colab": "https://colab.research.google.com/github/example/course/blob/launch/book/cnn.ipynb",
        "Binder": "https://mybinder.org/v2/gh/example/course/launch?urlpath=lab/tree/book/cnn.ipynb",
    }
    other = extension.launch_urls("https://gitlab.com/a/b", "book/cnn", "https://colab.research.google.com",
                                  "https://mybinder.org", "classic")
    assert other == {"Binder": "https://mybinder.org/v2/git/https%3A%2F%2Fgitlab.com%2Fa%2Fb/launch"
                               "?urlpath=tree/book/cnn.ipynb"}  # Colab opens GitHub only
    assert extension.launch_urls(REPOSITORY, "book/cnn") == {}


def _config(url: str = "") -> types.SimpleNamespace:
    launch_buttons = {"colab_url": "https://colab.research.google.com", "binderhub_url": "https://mybinder.org",
                      "notebook_interface": "jupyterlab"}
    options = {"repository_url": url, "launch_buttons": launch_buttons, "use_repository_button": True}
    return types.SimpleNamespace(html_theme_options=options, html_context={})


def test_environment_sets_the_repository(monkeypatch):
    config = _config()
    monkeypatch.setenv("NLPCOURSE_REPOSITORY", REPOSITORY)
    monkeypatch.setenv("NLPCOURSE_REVISION", REVISION)
    extension.use_environment(None, config)
    extension.switch_off_without_repository(None, config)
    assert extension.repository_url(config) == REPOSITORY
    assert config.html_theme_options["launch_buttons"]["colab_url"]  # still on
    assert config.html_context["nlpcourse_revision"] == REVISION


def test_no_repository_switches_the_buttons_off(monkeypatch):
    config = _config()
    monkeypatch.delenv("NLPCOURSE_REPOSITORY", raising=False)
    extension.use_environment(None, config)
    extension.switch_off_without_repository(None, config)
    assert not config.html_theme_options["use_repository_button"]
    assert not config.html_theme_options["launch_buttons"]["colab_url"]


def test_theme_buttons_are_rewritten_to_the_launch_notebooks():
    app = types.SimpleNamespace(config=_config(REPOSITORY))
    theirs = "https://colab.research.google.com/github/example/course/blob/main/book/cnn.md"
    context = {"header_buttons": [
        {"label": "download-buttons", "buttons": [{"text": ".ipynb", "url": "../_sources/book/cnn.ipynb"}]},
        {"label": "launch-buttons", "buttons": [{"text": "Colab", "url": theirs},
                                                {"text": "Binder", "url": "https://mybinder.org/v2/gh/x"}]},
    ]}
    extension.point_launch_buttons_at_notebooks(app, "book/cnn", "page.html", context, None)
    download, launch_group = context["header_buttons"]
    assert download["buttons"][0]["url"] == "../_sources/book/cnn.ipynb"
    assert [b["url"] for b in launch_group["buttons"]] == [
        "https://colab.research.google.com/github/example/course/blob/launch/book/cnn.ipynb",
        "https://mybinder.org/v2/gh/example/course/launch?urlpath=lab/tree/book/cnn.ipynb"]
