"""The GitHub Actions workflows (.github/workflows): valid, pinned; the Pages workflow builds and publishes the book.

Every workflow is validated against SchemaStore's GitHub workflow schema as check-jsonschema vendors it (no
network) and against its rule that every job has a `timeout-minutes`; every `run:` script must parse in bash;
every action is pinned to a release tag or a commit, never a branch. The Pages workflow
(`.github/workflows/pages.yml`) must run the README's own `make book`, upload `_build/html` with
`actions/upload-pages-artifact` after it and deploy it with `actions/deploy-pages` in the `github-pages`
environment, with the permissions the deployment needs, on a push to main and by hand; its build gets the
repository and commit (NLPCOURSE_REPOSITORY, NLPCOURSE_REVISION) and then pushes the notebooks the launch buttons
open as the branch `launch` (scripts/launch_notebooks.py). Each check is also run
on a broken copy of the workflow, so that it is seen to fail.
"""
from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
PAGES = WORKFLOWS / "pages.yml"
SCHEMAS = ("vendor.github-workflows", "custom.github-workflows-require-timeout")
# owner/repo[/path]@ref with ref a release tag (v7, v7.0, v7.0.1) or a full commit SHA
PINNED = re.compile(r"[\w.-]+/[\w.-]+(/[\w./-]+)?@(v\d+(\.\d+){0,2}|[0-9a-f]{40})")


def workflow_files(folder: Path = WORKFLOWS) -> list[Path]:
    return sorted([*folder.glob("*.yml"), *folder.glob("*.yaml")])


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def triggers(workflow: dict) -> dict:
    """The `on:` section (YAML 1.1, which PyYAML reads, takes the bare key `on` for True)."""
    on = workflow.get("on", workflow.get(True))
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return dict.fromkeys(on)
    return on or {}


def steps(workflow: dict):
    """(job name, job, step index, step) for every step of every job."""
    for name, job in (workflow.get("jobs") or {}).items():
        for i, step in enumerate(job.get("steps") or []):
            yield name, job, i, step


def action(uses: str) -> str:
    return uses.split("@", 1)[0]


def permission(workflow: dict, job: dict, scope: str) -> str:
    """The GITHUB_TOKEN's access to `scope` in `job`: a job's `permissions:` replaces the workflow's."""
    granted = job["permissions"] if "permissions" in job else workflow.get("permissions")
    if granted is None:
        return "default"  # the repository's setting: not to be relied on
    if isinstance(granted, str):
        return {"write-all": "write", "read-all": "read"}.get(granted, "none")
    return granted.get(scope, "none")


def schema_findings(path: Path) -> list[str]:
    """check-jsonschema's complaints about the file, one per schema that rejects it."""
    found = []
    for schema in SCHEMAS:
        run = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
                             capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            found.append(f"{schema}: {run.stdout}{run.stderr}")
    return found


def script_findings(workflow: dict) -> list[str]:
    """`run:` scripts that bash cannot parse (the ${{ }} expressions stand in as words)."""
    found = []
    for name, _, i, step in steps(workflow):
        if "run" not in step:
            continue
        script = re.sub(r"\$\{\{.*?\}\}", "EXPR", str(step["run"]), flags=re.S)
        run = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True, timeout=30)
        if run.returncode != 0:
            found.append(f"job {name}, step {i}: {run.stderr.strip()}")
    return found


def pin_findings(workflow: dict) -> list[str]:
    """Actions and reusable workflows not pinned to a release tag or a commit."""
    found = []
    uses = [(f"job {n}, step {i}", s["uses"]) for n, _, i, s in steps(workflow) if "uses" in s]
    uses += [(f"job {n}", j["uses"]) for n, j in (workflow.get("jobs") or {}).items() if "uses" in j]
    for where, ref in uses:
        if ref.startswith("./"):
            continue  # an action or workflow of this repository, at this commit
        if ref.startswith("docker://"):
            if "@sha256:" not in ref:
                found.append(f"{where}: {ref} (a docker image needs its @sha256: digest)")
        elif not PINNED.fullmatch(ref):
            found.append(f"{where}: {ref} (pin a release tag like @v7 or a commit SHA, not a branch)")
    return found


def pages_findings(workflow: dict) -> list[str]:
    """What the Pages workflow must do: build with `make book`, upload _build/html, deploy it."""
    found = []
    on = triggers(workflow)
    if "push" not in on:
        found.append("not triggered on push")
    else:
        branches = (on["push"] or {}).get("branches") or []
        if "main" not in branches:
            found.append(f"push triggers on {branches}, not on the default branch main")
    if "workflow_dispatch" not in on:
        found.append("cannot be run by hand (no workflow_dispatch)")
    if not (workflow.get("concurrency") or {}).get("group"):
        found.append("no concurrency group")

    all_steps = list(steps(workflow))
    builds = [(n, i) for n, _, i, s in all_steps
              if any(line.strip() == "make book" for line in str(s.get("run", "")).splitlines())]
    uploads = [(n, i, s) for n, _, i, s in all_steps if action(s.get("uses", "")) == "actions/upload-pages-artifact"]
    deploys = [(n, j, s) for n, j, _, s in all_steps if action(s.get("uses", "")) == "actions/deploy-pages"]
    for name, job, _, step in all_steps:
        if action(step.get("uses", "")) == "actions/configure-pages":
            if permission(workflow, job, "pages") not in ("read", "write"):
                found.append(f"job {name} runs actions/configure-pages without `pages: read`")
    if not builds:
        found.append("no step runs `make book`")
    if len(uploads) != 1:
        found.append(f"{len(uploads)} actions/upload-pages-artifact steps, not one")
    else:
        job, i, step = uploads[0]
        path = str((step.get("with") or {}).get("path", "")).removeprefix("./").rstrip("/")
        if path != "_build/html":
            found.append(f"uploads {path!r}, not _build/html")
        if not any(n == job and b < i for n, b in builds):
            found.append("the upload does not follow `make book` in the same job")
    if len(deploys) != 1:
        found.append(f"{len(deploys)} actions/deploy-pages steps, not one")
    else:
        job, spec, step = deploys[0]
        for scope in ("pages", "id-token"):
            if permission(workflow, spec, scope) != "write":
                found.append(f"the deploy job lacks `{scope}: write`")
        environment = spec.get("environment") or {}
        if environment.get("name") != "github-pages":
            found.append("the deploy job is not in the github-pages environment")
        if "id" not in step or f"steps.{step['id']}.outputs.page_url" not in str(environment.get("url", "")):
            found.append("the github-pages environment's url is not the deploy step's page_url output")
        if uploads and uploads[0][0] != job:
            needs = spec.get("needs") or []
            if uploads[0][0] not in ([needs] if isinstance(needs, str) else needs):
                found.append(f"the deploy job does not need the job that uploads ({uploads[0][0]})")
    return found


def launch_findings(workflow: dict) -> list[str]:
    """The build knows the repository and commit (NLPCOURSE_REPOSITORY, NLPCOURSE_REVISION: the launch buttons),
    and after it the job writes the launch notebooks and force-pushes them as the branch `launch`."""
    found = []
    expected = {"NLPCOURSE_REPOSITORY": "github.repository", "NLPCOURSE_REVISION": "github.sha"}
    all_steps = list(steps(workflow))
    builds = [(n, j, i, s) for n, j, i, s in all_steps
              if any(line.strip() == "make book" for line in str(s.get("run", "")).splitlines())]
    for name, _, i, step in builds:
        env = step.get("env") or {}
        for var, value in expected.items():
            if value not in str(env.get(var, "")):
                found.append(f"job {name}, step {i} (make book): {var} is not set from {value}")
    pushes = []
    for name, job, i, step in all_steps:
        script = str(step.get("run", "")).replace("\\\n", " ")  # a command continued on the next line
        if "scripts/launch_notebooks.py" in script and re.search(r"git\b.*\bpush\b.*--force.*\blaunch\b", script):
            pushes.append((name, job, i, step))
    if len(pushes) != 1:
        return found + [f"{len(pushes)} steps write the launch notebooks and force-push the branch launch, not one"]
    name, job, i, step = pushes[0]
    if not any(n == name and b < i for n, _, b, _ in builds):
        found.append("the launch notebooks are not pushed after `make book` in the same job")
    if permission(workflow, job, "contents") != "write":
        found.append(f"job {name} pushes the branch launch without `contents: write`")
    env = step.get("env") or {}
    for var, value in expected.items():
        if value not in str(env.get(var, "")):
            found.append(f"job {name}, step {i} (launch notebooks): {var} is not set from {value}")
    return found


def python_findings(workflow: dict) -> list[str]:
    """actions/setup-python's version satisfies requires-python and is environment.yml's python."""
    found = []
    requires = SpecifierSet(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"])
    conda = re.search(r"^\s*-\s+python=(\S+)", (ROOT / "environment.yml").read_text(), re.M).group(1)
    for name, _, i, step in steps(workflow):
        if action(step.get("uses", "")) == "actions/setup-python":
            version = str((step.get("with") or {}).get("python-version", ""))
            if version not in requires or version != conda:
                found.append(f"job {name}, step {i}: Python {version!r} (requires-python {requires}, "
                             f"environment.yml python={conda})")
    return found


def test_there_is_a_pages_workflow():
    assert PAGES in workflow_files()


@pytest.mark.parametrize("path", workflow_files(), ids=lambda p: p.name)
def test_workflow_is_valid_and_pinned(path):
    workflow = load(path)
    assert schema_findings(path) == []
    assert script_findings(workflow) == []
    assert pin_findings(workflow) == []
    assert python_findings(workflow) == []


def test_pages_workflow_builds_and_publishes_the_book():
    assert pages_findings(load(PAGES)) == []


def test_pages_workflow_pushes_the_launch_notebooks():
    assert launch_findings(load(PAGES)) == []


def test_pages_workflow_pins_official_actions():
    used = {s["uses"] for _, _, _, s in steps(load(PAGES)) if "uses" in s}
    assert {action(u) for u in used} >= {"actions/checkout", "actions/setup-python", "actions/setup-node",
                                          "actions/configure-pages", "actions/upload-pages-artifact",
                                          "actions/deploy-pages"}
    assert all(u.startswith("actions/") for u in used), used


BROKEN = {
    # (what is replaced, by what): the finding it must cause
    "branch pin": (("actions/checkout@v7", "actions/checkout@main"), pin_findings, "actions/checkout@main"),
    "wrong folder": (("path: _build/html", "path: _build"), pages_findings, "uploads '_build'"),
    "other build": (("run: make book", "run: .venv/bin/jupyter-book build ."), pages_findings, "make book"),
    "no dispatch": (("  workflow_dispatch:", "  pull_request:"), pages_findings, "workflow_dispatch"),
    "no id-token": (("      id-token: write\n", ""), pages_findings, "id-token"),
    "no pages: read": (("      pages: read", "      actions: read"), pages_findings, "pages: read"),
    "other environment": (("name: github-pages", "name: production"), pages_findings, "github-pages"),
    "other python": (('python-version: "3.11"', 'python-version: "3.10"'), python_findings, "3.10"),
    "broken script": (("          fi\n", ""), script_findings, "job build"),
    "no revision": (("NLPCOURSE_REVISION: ${{ github.sha }}\n        run: make book",
                     "NLPCOURSE_SHA: ${{ github.sha }}\n        run: make book"),
                    launch_findings, "NLPCOURSE_REVISION"),
    "no push": (("HEAD:refs/heads/launch", "HEAD:refs/heads/pages"), launch_findings, "force-push"),
    "contents: read": (("contents: write", "contents: read"), launch_findings, "contents: write"),
}


@pytest.mark.parametrize("name", BROKEN)
def test_checks_catch_a_broken_pages_workflow(name, tmp_path):
    (old, new), check, expected = BROKEN[name]
    text = PAGES.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} is not in pages.yml once: update this test"
    broken = tmp_path / "pages.yml"
    broken.write_text(text.replace(old, new), encoding="utf-8")
    findings = check(load(broken))
    assert any(expected in f for f in findings), findings


@pytest.mark.parametrize("old, new", [
    ("    steps:\n      - uses: actions/checkout@v7", "    step:\n      - uses: actions/checkout@v7"),  # no steps
    ("    timeout-minutes: 15\n", ""),  # a job without a time limit
    ("pages: write", "pages: publish"),  # not a permission level
], ids=["no steps", "no job timeout", "no such permission level"])
def test_schema_check_catches_an_invalid_workflow(old, new, tmp_path):
    text = PAGES.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} is not in pages.yml once: update this test"
    broken = tmp_path / "pages.yml"
    broken.write_text(text.replace(old, new), encoding="utf-8")
    assert schema_findings(broken)


def test_instructor_guide_says_how_to_publish():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "## Publishing the site" in readme
    section = " ".join(readme.split("## Publishing the site", 1)[1].split("\n## ", 1)[0].split())
    for needed in (".github/workflows/pages.yml", "Settings → Pages", "Source: GitHub Actions", "Run workflow",
                   "make book"):
        assert needed in section, needed
