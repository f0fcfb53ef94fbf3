"""Sharding and merging without kernels (grader/autograde.py's ``--shard`` and ``--secret``, grader/merge.py):
the slices, the secret, the shard's claim, and every refusal of ``grader merge``, which all come before anything
is written. Grading 12 students as 3 shards and merging them is tests/test_cluster_local.py (kernels)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.autograde import (
    HANDED_IN,
    SECRET,
    SHARD,
    claim_shard,
    handed_in,
    install_secret,
    parse_shard,
    shard_students,
)
from grader.cli import main
from grader.course import GraderError
from grader.merge import MergeError, merge, summary


@pytest.mark.parametrize("text, expected", [("0/3", (0, 3)), ("2/3", (2, 3)), ("0/1", (0, 1)), ("11/12", (11, 12))])
def test_a_shard_is_i_of_n_counted_from_zero(text, expected):
    assert parse_shard(text) == expected


@pytest.mark.parametrize("text", ["3/3", "1/0", "-1/3", "1", "a/b", "1/3/4", ""])
def test_a_shard_outside_0_to_n_is_refused_by_name(text):
    with pytest.raises(GraderError, match="--shard"):
        parse_shard(text)


@given(st.sets(st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True), max_size=30), st.integers(1, 7))
def test_the_shards_partition_the_class_into_near_equal_slices(tmp_path_factory, ids, n):
    folder = tmp_path_factory.mktemp("subs")
    for s in ids:
        (folder / s).mkdir()
    (folder / ".lms").mkdir()  # hidden folders are nobody's
    slices = [shard_students(folder, (i, n)) for i in range(n)]
    assert sorted(s for sl in slices for s in sl) == sorted(ids)
    assert max(map(len, slices)) - min(map(len, slices)) <= 1
    assert slices == [shard_students(folder, (i, n)) for i in range(n)]  # deterministic


def test_the_secret_is_copied_in_and_a_different_one_refused(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("abc123\n")
    course = tmp_path / "shard0"
    install_secret(course, secret)
    assert (course / SECRET).read_text() == "abc123"
    assert (course / SECRET).stat().st_mode & 0o777 == 0o600
    install_secret(course, secret)  # the same again: a rerun of the shard
    other = tmp_path / "other"
    other.write_text("zzz")
    with pytest.raises(GraderError, match="another grading secret"):
        install_secret(course, other)
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(GraderError, match="empty"):
        install_secret(tmp_path / "x", empty)
    with pytest.raises(GraderError, match="cannot be read"):
        install_secret(tmp_path / "x", tmp_path / "absent")


def test_a_course_folder_grades_one_shard(tmp_path):
    claim_shard(tmp_path, ["backprop"], (1, 3), ["b", "e"])
    claim_shard(tmp_path, ["cnn"], (1, 3), ["b", "e"])  # the same slice, another assignment: fine
    assert json.loads((tmp_path / SHARD).read_text()) == \
        {"assignment": ["backprop", "cnn"], "shard": 1, "of": 3, "students": ["b", "e"]}
    with pytest.raises(GraderError, match="grades shard 1/3, not 2/3"):
        claim_shard(tmp_path, ["backprop"], (2, 3), ["c"])


def test_what_is_known_of_a_hand_in(tmp_path):
    nb = tmp_path / "backprop.ipynb"
    nb.write_text("{}")
    info = handed_in(tmp_path, nb)
    assert info["source"] == "file" and info["submitted_at"].endswith("+00:00") and info["lms_id"] is None
    lms = {"lms": "canvas", "lms_id": "12345", "name": "smithjane", "late_flag": True,
           "submitted_at": "2024-03-01T09:00:00", "file": "smithjane_LATE_12345_1_backprop.ipynb", "roster": {}}
    (tmp_path / "lms.json").write_text(json.dumps(lms))
    assert handed_in(tmp_path, nb) == {"source": "canvas", **{k: v for k, v in lms.items() if k != "lms"}}
    (tmp_path / "lms.json").write_text("{not json")
    assert handed_in(tmp_path, nb)["source"] == "file"


# ------------------------------------------------------------------ merge's refusals (nothing written)


def shard(root: Path, name: str, secret: str = "s3cret", claim: tuple[int, int] | None = None,
          students: dict[str, dict] | None = None, assignment: str = "backprop") -> Path:
    """A shard's course folder with hand-written recorded results (no gradebook: refusals come first)."""
    folder = root / name
    (folder / "work" / assignment).mkdir(parents=True)
    (folder / SECRET).write_text(secret)
    if claim:
        (folder / SHARD).write_text(json.dumps({"assignment": [assignment], "shard": claim[0], "of": claim[1]}))
    for student, r in (students or {}).items():
        wd = folder / "work" / assignment / student
        wd.mkdir()
        (wd / "result.json").write_text(json.dumps({"student": student, "score": r.get("score", 1.0)}))
        if r.get("recorded", True):
            (wd / "recorded.json").write_text(json.dumps({"sha256": r.get("sha", "abc")}))
        (wd / HANDED_IN).write_text("{}")
    return folder


def test_merge_refuses_a_student_graded_twice(tmp_path):
    a = shard(tmp_path, "s0", claim=(0, 2), students={"ann": {}, "bob": {}})
    b = shard(tmp_path, "s1", claim=(1, 2), students={"bob": {}})
    with pytest.raises(MergeError, match="graded in more than one shard: backprop/bob"):
        merge([a, b], tmp_path / "main")
    assert not (tmp_path / "main").exists()


def test_merge_refuses_different_secrets(tmp_path):
    a = shard(tmp_path, "s0", claim=(0, 2))
    b = shard(tmp_path, "s1", secret="other", claim=(1, 2))
    with pytest.raises(MergeError, match="different grading secrets"):
        merge([a, b], tmp_path / "main")
    main_dir = tmp_path / "main"
    main_dir.mkdir()
    (main_dir / SECRET).write_text("mine")
    with pytest.raises(MergeError, match="different grading secrets from"):
        merge([a], main_dir)
    assert sorted(p.name for p in main_dir.iterdir()) == [SECRET]


@pytest.mark.parametrize("claims, message", [
    (((0, 3), (0, 3)), "both graded shard 0/3"),
    (((0, 3), (1, 2)), "slices of different counts"),
])
def test_merge_refuses_clashing_claims(tmp_path, claims, message):
    folders = [shard(tmp_path, f"s{i}", claim=c) for i, c in enumerate(claims)]
    with pytest.raises(MergeError, match=message):
        merge(folders, tmp_path / "main")


def test_merge_refuses_what_is_not_a_shard(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(MergeError, match="is not a shard's course folder"):
        merge([tmp_path / "empty"], tmp_path / "main")
    a = shard(tmp_path, "s0")
    with pytest.raises(MergeError, match="each shard folder once"):
        merge([a, a], tmp_path / "main")
    with pytest.raises(MergeError, match="none of them the main course folder"):
        merge([a], a)


def test_merge_refuses_to_replace_another_result_unless_forced_and_skips_the_same(tmp_path):
    a = shard(tmp_path, "s0", claim=(0, 2), students={"ann": {"score": 3.0}})
    main_dir = shard(tmp_path, "main", students={"ann": {"score": 2.0}})
    with pytest.raises(MergeError, match="already holds another result for backprop/ann: --force"):
        merge([a], main_dir)
    same = shard(tmp_path, "main2", students={"ann": {"score": 3.0}})
    done = merge([a], same)
    assert [g.student for g in done.unchanged] == ["ann"] and not done.merged and done.exit_status == 0
    assert "not merged yet: shard(s) 1" in summary(done)


def test_a_student_the_shard_did_not_finish_is_named_not_merged(tmp_path):
    a = shard(tmp_path, "s0", claim=(0, 1), students={"ann": {"recorded": False}})
    done = merge([a], tmp_path / "main")
    assert done.unfinished == [("backprop", "ann", a.resolve())] and done.exit_status == 1
    assert any("did not finish" in line and "backprop/ann" in line for line in summary(done))


def test_the_command_line_reports_a_refusal(tmp_path, capsys):
    a = shard(tmp_path, "s0", claim=(0, 2), students={"bob": {}})
    b = shard(tmp_path, "s1", claim=(1, 2), students={"bob": {}})
    assert main(["merge", str(a), str(b), "--course-dir", str(tmp_path / "main")]) == 2
    assert "graded in more than one shard" in capsys.readouterr().err
    assert main(["autograde", "backprop", "--submissions", str(tmp_path), "--shard", "3/3",
                 "--course-dir", str(tmp_path / "c")]) == 2
    assert "--shard '3/3'" in capsys.readouterr().err
