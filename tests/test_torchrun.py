"""nlpcourse.torchrun: a failed launch names the workers' error; one that could not connect its processes is tried
once more, any other failure raises at once."""
from __future__ import annotations

import os

import pytest

from nlpcourse.torchrun import LaunchError, root_cause, torchrun

ENV = os.environ | {"OMP_NUM_THREADS": "1"}


def test_a_failed_torchrun_is_reported_by_its_workers_error_not_by_the_launchers_traceback():
    stderr = "\n".join([
        "[rank1]: Traceback (most recent call last):", '[rank1]:   File "scripts/pretrain_bert.py", line 9',
        "[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:538] Connection closed by peer",
        "Traceback (most recent call last):", '  File "torch/distributed/run.py", line 367, in wrapper',
        "    return f(*args, **kwargs)", "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "=" * 60, "Root Cause (first observed failure):", "[0]:", "  rank      : 1 (local_rank: 1)",
        "  exitcode  : 1 (pid: 4242)", "  error_file: <N/A>"])
    cause = root_cause(stderr)
    assert cause.startswith("[rank1]: RuntimeError: [../third_party/gloo") and "Connection closed by peer" in cause
    assert "rank      : 1 (local_rank: 1) | exitcode  : 1 (pid: 4242)" in cause and "line 367" not in cause
    assert root_cause("no error here\nlast line") == "no error here\nlast line"


def script(tmp_path, body: str):
    path = tmp_path / "job.py"
    path.write_text("import os, sys\nfrom pathlib import Path\n" + body)
    return path


def test_a_launch_that_could_not_connect_is_tried_again_after_deleting_what_it_wrote(tmp_path, capfd):
    """The first try leaves a half-written file and fails as a taken port does; the second finds no file."""
    marker, half = tmp_path / "tried", tmp_path / "half.txt"
    job = script(tmp_path, f"""
if Path({str(half)!r}).exists():
    sys.exit("the half-written file survived the retry")
if not Path({str(marker)!r}).exists():
    Path({str(marker)!r}).touch(); Path({str(half)!r}).write_text("half")
    raise RuntimeError("The server socket has failed to listen on any local network address. "
                       "Address already in use")
print("rank", os.environ["RANK"], "of", os.environ["WORLD_SIZE"])
""")
    assert torchrun(job, [], 2, env=ENV, fresh=[half]).count("of 2") == 2
    assert "trying again" in capfd.readouterr().err


def test_a_script_error_raises_at_once_with_the_workers_error(tmp_path):
    marker = tmp_path / "tries"
    job = script(tmp_path, f"""
with open({str(marker)!r}, "a") as f:
    f.write("x")
raise ValueError("the tokenizer file is empty")
""")
    with pytest.raises(LaunchError, match=r"exited with 1 after 1 try: .*ValueError: the tokenizer file is empty"):
        torchrun(job, [], 1, env=ENV)
    assert marker.read_text() == "x", "not retried"


def test_a_launch_that_never_connects_fails_after_two_tries(tmp_path):
    job = script(tmp_path, 'raise ConnectionError("Connection refused")\n')
    with pytest.raises(LaunchError, match="after 2 tries: .*Connection refused"):
        torchrun(job, [], 1, env=ENV)
    with pytest.raises(LaunchError, match="at least one process"):
        torchrun(job, [], 0)
