"""Tests of the verdicts file (``grader/verdicts_json.py``): written, read back, and refused
when its schema is unknown or its content malformed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from autograder.grading.grader.verdicts_json import (
    SCHEMA,
    ExerciseVerdict,
    LabVerdicts,
    VerdictsFileError,
    parse_verdicts,
    read_verdicts,
    write_verdicts,
)


def _sample() -> LabVerdicts:
    return LabVerdicts(
        student="ada",
        original_id="Ada Lovelace (1815)",
        lab="02-self-attention",
        exercises=[
            ExerciseVerdict(
                "test_softmax",
                ["softmax"],
                "failed",
                0.0,
                2.0,
                "softmax/no-max-shift",
                "CheckFailed: check_softmax failed.\n  likely mistake: the maximum is not subtracted",
            ),
            ExerciseVerdict("test_attention", ["attention"], "passed", 3.0, 3.0, None, ""),
            ExerciseVerdict("test_mha", ["split", "merge"], "blank", 0.0, 4.0, None, "NotImplementedError: "),
        ],
        answers={
            "softmax": "def softmax(x, dim=-1):\n    return x.exp()",
            "attention": "...",
            "split": "",
            "merge": "",
        },
    )


def test_written_file_reads_back_the_same(tmp_path: Path) -> None:
    """Does a written verdicts file read back as the same verdicts, with the schema id first?"""
    path = tmp_path / "verdicts.json"
    write_verdicts(path, _sample())
    assert read_verdicts(path) == _sample()
    data = json.loads(path.read_text(encoding="utf-8"))
    assert next(iter(data)) == "schema" and data["schema"] == SCHEMA == "autograder.verdicts/1"


def test_unknown_schema_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    """Is a file of another schema version refused, saying which schema it found and which it reads?"""
    data = json.loads(_sample().to_json())
    data["schema"] = "autograder.verdicts/2"
    with pytest.raises(VerdictsFileError, match=r"'autograder.verdicts/2' is not 'autograder.verdicts/1'"):
        parse_verdicts(json.dumps(data))


@pytest.mark.parametrize(
    "change, said",
    [
        (lambda d: d["exercises"][0].update(status="skipped"), "status"),
        (lambda d: d["exercises"][0].update(mistake=None), "mistake"),  # failed without an id
        (lambda d: d["exercises"][1].update(mistake="softmax/no-max-shift"), "mistake"),  # passed with one
        (lambda d: d["exercises"][0].update(points="2"), "points"),
        (lambda d: d["exercises"][0].update(points=True), "points"),
        (lambda d: d.update(answers=["softmax"]), "answers"),
        (lambda d: d.pop("student"), "student"),
    ],
    ids=["status", "failed-no-id", "passed-with-id", "points-text", "points-bool", "answers-list", "no-student"],
)
def test_malformed_files_are_refused(change, said: str) -> None:
    """Is a file whose fields break the schema refused, naming the field?"""
    data = json.loads(_sample().to_json())
    change(data)
    with pytest.raises(VerdictsFileError, match=said):
        parse_verdicts(json.dumps(data))


def test_not_json_is_refused() -> None:
    """Is text that is not JSON refused as a VerdictsFileError (not a bare JSONDecodeError)?"""
    with pytest.raises(VerdictsFileError, match="not JSON"):
        parse_verdicts("{")


def test_writing_replaces_a_planted_link_without_following_it(tmp_path: Path) -> None:
    """Does writing replace a symbolic link at the file's place, leaving its target untouched?"""
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me", encoding="utf-8")
    path = tmp_path / "verdicts.json"
    os.symlink(target, path)
    write_verdicts(path, _sample())
    assert not path.is_symlink() and read_verdicts(path) == _sample()
    assert target.read_text(encoding="utf-8") == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere.txt", "verdicts.json"]  # no temporary left


def test_a_file_without_the_on_its_own_fields_reads_as_not_rerun() -> None:
    """Does a schema-1 file written before ``points_alone``/``status_alone`` read with both None, and
    do written values read back?"""
    data = json.loads(_sample().to_json())
    for exercise in data["exercises"]:
        del exercise["points_alone"], exercise["status_alone"]
    old = parse_verdicts(json.dumps(data))
    assert old == _sample() and all(e.points_alone is None and e.status_alone is None for e in old.exercises)
    rerun = _sample()
    rerun.exercises[2].points_alone, rerun.exercises[2].status_alone = 4.0, "passed"
    back = parse_verdicts(rerun.to_json())
    assert (back.exercises[2].points_alone, back.exercises[2].status_alone) == (4.0, "passed")
    assert back.schema == SCHEMA


@pytest.mark.parametrize("field, value", [("points_alone", "4"), ("points_alone", True), ("status_alone", "ok")])
def test_malformed_on_its_own_fields_are_refused(field: str, value: object) -> None:
    """Is a ``points_alone`` that is not a number, or a ``status_alone`` that is no status, refused by name?"""
    data = json.loads(_sample().to_json())
    data["exercises"][0][field] = value
    with pytest.raises(VerdictsFileError, match=field):
        parse_verdicts(json.dumps(data))
