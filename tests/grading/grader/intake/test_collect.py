"""Does collecting bring every layout of submissions into submitted/STUDENT/LAB/LAB.ipynb,
and list every file it does not grade with its reason?"""

from __future__ import annotations

import csv
import os
import unicodedata
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder import cli
from autograder.grading.grader import grading, pipeline
from autograder.grading.grader.intake import selection
from autograder.grading.grader.intake.collect import collect, parse_name, recorded_late, recorded_originals
from autograder.grading.grader.intake.ids import safe_id
from autograder.grading.grader.intake.untrusted import other_people
from tests.grading.helpers import LAB, answered, make_course, released


def _zip(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return path


def _graded(root: Path, student: str) -> str:
    return (root / "submitted" / student / LAB / f"{LAB}.ipynb").read_text()


def _reasons(collected) -> dict[str, str]:
    return dict(collected.not_graded)


def test_folder_layouts_are_copied_into_submitted(tmp_path: Path) -> None:
    """Are STUDENT/LAB/*.ipynb and STUDENT/LAB.ipynb both collected, replacing an older copy?"""
    root = make_course(tmp_path / "course")
    inbox = tmp_path / "inbox"
    (inbox / "ada" / LAB).mkdir(parents=True)
    nbformat.write(answered(), str(inbox / "ada" / LAB / f"{LAB}.ipynb"))
    (inbox / "ben").mkdir()
    nbformat.write(released(), str(inbox / "ben" / f"{LAB}.ipynb"))
    (root / "submitted" / "ada" / LAB).mkdir(parents=True)
    (root / "submitted" / "ada" / LAB / "old.ipynb").write_text("{}")
    collected = collect(root, inbox, [LAB])
    assert sorted(p.relative_to(root / "submitted").as_posix() for p in (root / "submitted").rglob("*.ipynb")) == [
        f"ada/{LAB}/{LAB}.ipynb",
        f"ben/{LAB}/{LAB}.ipynb",
    ]
    assert collected.pairs == [("ada", LAB), ("ben", LAB)] and collected.not_graded == []


@pytest.mark.parametrize(
    "name, expected",
    [
        (f"ada_12345_678_{LAB}.ipynb", (LAB, 0, "ada", "")),
        (f"ada_LATE_12345_678_{LAB}-1.ipynb", (LAB, 1, "ada", "LATE")),
        (f"ben_1_2_Copy of {LAB}.ipynb", (LAB, 0, "ben", "")),
        ("cy_3_4_00_warmup.ipynb", (LAB, 0, "cy", "")),
        ("dee_Copy%20of%2000-warmup%20(2).ipynb", (LAB, 2, "dee", "")),
        (f"Lab 0_eve_attempt_2024-03-01-15-04-05_{LAB}.ipynb", (LAB, 0, "eve", "2024-03-01 15:04:05")),
        (f"ada_{LAB}-final.ipynb", None),
        (f"ada_{LAB}.py", None),
    ],
)
def test_lms_names(name: str, expected: tuple | None) -> None:
    """Which lab, resubmission number, student and late flag does each LMS file name give?"""
    info = parse_name(name, [LAB, "02-self-attention"])
    assert (None if info is None else (info.lab, info.version, info.student, info.late)) == expected


def test_lms_zip_with_odd_names_and_strays(tmp_path: Path) -> None:
    """Does a zip with a resubmission suffix, a Colab "Copy of", underscores for dashes and an
    LMS LATE tag give four submissions, each stray file listed with its reason?"""
    root = make_course(tmp_path / "course")
    archive = _zip(
        tmp_path / "class.zip",
        {
            f"ada_LATE_12345_678_{LAB}-1.ipynb": "ada",
            f"week0/ben_1_2_Copy of {LAB}.ipynb": "ben",
            "cy_3_4_00_warmup.ipynb": "cy",
            f"Dee Ng_99_assignsubmission_file_/{LAB}.ipynb": "dee",  # Moodle: the student in the folder
            "readme.txt": "not a notebook",
            "eve_5_6_99-unknown-lab.ipynb": "{}",
            f"{LAB}.ipynb": "nobody's",
            f"__MACOSX/._ada_{LAB}.ipynb": "resource fork",
        },
    )
    collected = collect(root, archive, [LAB])
    assert collected.pairs == [("Dee Ng", LAB), ("ada", LAB), ("ben", LAB), ("cy", LAB)]
    assert [_graded(root, s) for s in ("ada", "ben", "cy", "Dee Ng")] == ["ada", "ben", "cy", "dee"]
    assert _reasons(collected) == {
        "readme.txt": "not a notebook",
        "eve_5_6_99-unknown-lab.ipynb": f"no lab of the course in its name (labs: {LAB})",
        f"{LAB}.ipynb": "no student id in its name (STUDENT_..._LAB.ipynb) or its folder's",
    }
    assert collected.late == {("ada", LAB): "LATE"}
    assert recorded_late(root) == {("ada", LAB): "LATE"}
    assert sorted(p.name for p in (root / "submitted" / "ada" / LAB).iterdir()) == [f"{LAB}.ipynb"]


def test_zip_archive_is_closed(tmp_path: Path, monkeypatch) -> None:
    """Is every ZipFile that collecting a zip opens closed again, not left to the garbage collector?"""
    opened: list[zipfile.ZipFile] = []

    class Tracked(zipfile.ZipFile):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            opened.append(self)  # kept alive here, so only an explicit close() closes it

    monkeypatch.setattr(zipfile, "ZipFile", Tracked)
    root = make_course(tmp_path / "course")
    archive = _zip(tmp_path / "class.zip", {f"ada_1_2_{LAB}.ipynb": nbformat.writes(answered())})
    assert collect(root, archive, [LAB]).pairs == [("ada", LAB)]
    assert opened and all(zf.fp is None for zf in opened), "a ZipFile was left open"


def test_latest_resubmission_wins(tmp_path: Path) -> None:
    """With -1 and -2 (and the original) from one student, is -2 graded and the others listed?"""
    root = make_course(tmp_path / "course")
    archive = _zip(
        tmp_path / "class.zip",
        {
            f"ada_1_2_{LAB}-2.ipynb": "second resubmission",
            f"ada_1_2_{LAB}-1.ipynb": "first resubmission",
            f"ada_1_2_{LAB}.ipynb": "original",
        },
    )
    collected = collect(root, archive, [LAB])
    assert collected.pairs == [("ada", LAB)] and _graded(root, "ada") == "second resubmission"
    assert sorted(_reasons(collected)) == [f"ada_1_2_{LAB}-1.ipynb", f"ada_1_2_{LAB}.ipynb"]
    assert all(f"ada_1_2_{LAB}-2.ipynb is graded instead" in r for r in _reasons(collected).values())


def test_blackboard_time_is_kept_for_a_regrade(tmp_path: Path) -> None:
    """Does a submission time in the name reach `late`, and is it still known when submitted/
    is graded again in place?"""
    root = make_course(tmp_path / "course")
    archive = _zip(tmp_path / "class.zip", {f"Lab 0_eve_attempt_2024-03-01-15-04-05_{LAB}.ipynb": "{}"})
    assert collect(root, archive, [LAB]).late == {("eve", LAB): "2024-03-01 15:04:05"}
    assert collect(root, root / "submitted", [LAB]).late == {("eve", LAB): "2024-03-01 15:04:05"}


def test_stray_files_in_a_folder_are_listed(tmp_path: Path) -> None:
    """In a folder source, are a text file, a notebook for no lab and an extra notebook listed?"""
    root = make_course(tmp_path / "course")
    inbox = tmp_path / "inbox"
    (inbox / "ada" / LAB).mkdir(parents=True)
    (inbox / "ada" / LAB / f"{LAB}.ipynb").write_text("ada")
    (inbox / "ada" / LAB / "scratch.ipynb").write_text("scratch")
    (inbox / "ada" / "notes.txt").write_text("notes")
    (inbox / "ada" / "99-other.ipynb").write_text("{}")
    (inbox / ".DS_Store").write_text("")
    collected = collect(root, inbox, [LAB])
    assert collected.pairs == [("ada", LAB)]
    assert _reasons(collected) == {
        "ada/99-other.ipynb": f"no lab of the course in its name (labs: {LAB})",
        "ada/notes.txt": "not a notebook",
        f"ada/{LAB}/scratch.ipynb": f"another notebook beside {LAB}.ipynb, which is graded",
    }


def test_symbolic_links_are_listed_not_followed(tmp_path: Path) -> None:
    """Is a submitted link to one of the grader's files listed, and its target never copied?"""
    root = make_course(tmp_path / "course")
    secret = tmp_path / "gradebook-secret.txt"
    secret.write_text("secret")
    (tmp_path / "inbox" / "ada" / LAB).mkdir(parents=True)
    (tmp_path / "inbox" / "ada" / LAB / f"{LAB}.ipynb").write_text("ada")
    (tmp_path / "inbox" / "ada" / LAB / "data.txt").symlink_to(secret)
    (tmp_path / "inbox" / "ben").mkdir()
    (tmp_path / "inbox" / "ben" / f"{LAB}.ipynb").symlink_to(secret)
    collected = collect(root, tmp_path / "inbox", [LAB])
    assert collected.pairs == [("ada", LAB)]
    assert _reasons(collected) == {
        f"ada/{LAB}/data.txt": "a symbolic link, not followed",
        f"ben/{LAB}.ipynb": "a symbolic link, not followed",
    }
    assert not any("secret" in p.read_text() for p in (root / "submitted").rglob("*") if p.is_file())


def test_flat_layout_inside_submitted(tmp_path: Path) -> None:
    """Is submitted/STUDENT/LAB.ipynb graded in place, and is a rerun silent about it?"""
    root = make_course(tmp_path / "course")
    submitted = root / "submitted"
    (submitted / "ada").mkdir(parents=True)
    (submitted / "ada" / f"{LAB}.ipynb").write_text("ada")
    (submitted / "ben" / LAB).mkdir(parents=True)
    (submitted / "ben" / LAB / f"{LAB}.ipynb").write_text("ben")
    for _ in range(2):
        collected = collect(root, submitted, [LAB])
        assert collected.pairs == [("ada", LAB), ("ben", LAB)] and collected.not_graded == []
        assert _graded(root, "ada") == "ada" and (submitted / "ada" / f"{LAB}.ipynb").is_file()


def test_newer_flat_file_replaces_the_lab_folder_in_submitted(tmp_path: Path) -> None:
    """When submitted/ada/LAB.ipynb is newer than submitted/ada/LAB/, is it graded and the folder listed?"""
    root = make_course(tmp_path / "course")
    folder = root / "submitted" / "ada" / LAB
    folder.mkdir(parents=True)
    (folder / f"{LAB}.ipynb").write_text("old")
    os.utime(folder / f"{LAB}.ipynb", (1_000_000, 1_000_000))
    (folder.parent / f"{LAB}.ipynb").write_text("new")
    collected = collect(root, root / "submitted", [LAB])
    assert _graded(root, "ada") == "new" and [n for n, _ in collected.not_graded] == [f"ada/{LAB}/"]


def test_unknown_student_or_lab_is_an_error(tmp_path: Path, capsys) -> None:
    """Does `grade --student` or `--lab` with an unknown name exit 2 naming the known ones?"""
    root = make_course(tmp_path / "course")
    inbox = tmp_path / "inbox"
    for student in ("ada", "ben"):
        (inbox / student).mkdir(parents=True)
        nbformat.write(released(), str(inbox / student / f"{LAB}.ipynb"))
    assert cli.main(["--course", str(root), "grade", str(inbox), "--student", "zed", "--no-progress"]) == 2
    assert "no student zed" in (err := capsys.readouterr().err) and "ada, ben" in err
    assert cli.main(["--course", str(root), "grade", str(inbox), "--lab", "99-x", "--no-progress"]) == 2
    assert "no lab 99-x" in (err := capsys.readouterr().err) and LAB in err
    assert not (root / "grades.csv").exists()


def test_lms_zip_grades_odd_names_with_late_column(tmp_path: Path) -> None:
    """Are all the odd LMS names graded (Hangul written decomposed, an accented Moodle folder),
    the LATE tag in grades.csv's late column but not a time the student put in their file name,
    a file named for Bob in Ada's Moodle folder graded as Ada's, and the stray files, the
    superseded resubmission, a zip bomb, a member with a bad CRC, a link and a member whose
    name climbs out of the folder in the summary, the rest graded?"""
    root = make_course(tmp_path / "course")
    archive = _zip(
        tmp_path / "class.zip",
        {
            f"ada_LATE_12345_678_{LAB}-1.ipynb": nbformat.writes(answered()),
            f"ada_12345_678_{LAB}.ipynb": nbformat.writes(released()),
            f"ben_1_2_Copy of {LAB}.ipynb": nbformat.writes(answered("relu")),
            "cy_3_4_00_warmup.ipynb": nbformat.writes(released()),
            "readme.txt": "not a notebook",
            unicodedata.normalize("NFD", f"김민수_5_6_{LAB}.ipynb"): nbformat.writes(answered()),
            f"Élodie Durand_7_assignsubmission_file_/{LAB}.ipynb": nbformat.writes(answered("relu")),
            f"Ada Lovelace_8_assignsubmission_file_/Bob Smith_{LAB}-99.ipynb": "{}",
            f"Bob Smith_9_assignsubmission_file_/{LAB}.ipynb": nbformat.writes(answered()),
            f"dee_1_2_2020-01-01-00-00-00_{LAB}.ipynb": "{}",  # a time in the student's own file name
            f"../../eve_1_2_{LAB}.ipynb": "{}",
        },
    )
    with zipfile.ZipFile(archive, "a") as zf:
        zf.writestr(f"bomb_1_2_{LAB}.ipynb", "0" * (20 * 2**20), zipfile.ZIP_DEFLATED)
        zf.writestr(f"crc_1_2_{LAB}.ipynb", "GOOD-BYTES", zipfile.ZIP_STORED)
        link = zipfile.ZipInfo(f"link_1_2_{LAB}.ipynb")
        link.external_attr = 0o120777 << 16
        zf.writestr(link, str(root / "solutions" / LAB / f"{LAB}.ipynb"))
    archive.write_bytes(archive.read_bytes().replace(b"GOOD-BYTES", b"EVIL-BYTES", 1))
    outcomes = pipeline.grade(root, archive, grading.Options(jobs=1, progress=False))
    rows = {r["student_id"]: r for r in csv.DictReader((root / "grades.csv").open())}
    assert {s: (float(r["score"]), r["late"]) for s, r in rows.items()} == {
        "ada": (5.0, "LATE"),
        "ben": (2.0, ""),
        "cy": (0.0, ""),
        "김민수": (5.0, ""),
        "Élodie Durand": (2.0, ""),
        "Ada Lovelace": (0.0, ""),
        "Bob Smith": (5.0, ""),
        "dee": (0.0, ""),
        "eve": (0.0, ""),
    }
    text = grading.summary(outcomes)
    assert "  not graded: readme.txt: not a notebook" in text
    assert f"  not graded: ada_12345_678_{LAB}.ipynb: an older or duplicate submission" in text
    assert f"  not graded: bomb_1_2_{LAB}.ipynb: expands more than 100:1" in text
    assert f"  not graded: crc_1_2_{LAB}.ipynb: could not be read from the zip (BadZipFile: Bad CRC" in text
    assert f"  not graded: link_1_2_{LAB}.ipynb: a symbolic link, not followed" in text
    assert not (tmp_path / f"eve_1_2_{LAB}.ipynb").exists() and not (root.parent / f"eve_1_2_{LAB}.ipynb").exists()
    # graded again in place, as nbgrader's exchange leaves submitted/: what the student's submit
    # put beside the notebook is listed, never staged for nbgrader (but a checked claimed time), and
    # the LMS's flag still holds
    folder = root / "submitted" / "ada" / LAB
    (folder / "timestamp.txt").write_text("2000-01-01 00:00:00.000000 UTC")
    (folder / "submission_secret.txt").write_text("c2VjcmV0")
    (folder / "autograder").mkdir()
    (folder / "autograder" / "__init__.py").write_text("raise SystemExit('imported from the submission')")
    options = grading.Options(students=["ada"], progress=False)
    again = grading.summary(pipeline.grade(root, root / "submitted", options))
    assert f"  not graded: ada/{LAB}/timestamp.txt: " in again and "claims '2000-01-01" in again
    assert f"  not graded: ada/{LAB}/submission_secret.txt: nbgrader's submission secret" in again
    assert f"  not graded: ada/{LAB}/autograder/__init__.py: an extra file" in again
    # the claimed time and the exchange's secret alone travel on, checked, for nbgrader's exchange
    # to hand the feedback back
    autograded = root / "autograded" / "ada" / LAB
    assert sorted(p.name for p in autograded.iterdir()) == [
        f"{LAB}.ipynb",
        "submission_secret.txt",
        "timestamp.txt",
        "verdicts.json",
    ]
    assert (autograded / "timestamp.txt").read_text() == "2000-01-01 00:00:00.000000 UTC\n"
    assert (autograded / "submission_secret.txt").read_text() == "c2VjcmV0"
    rows = {r["student_id"]: r for r in csv.DictReader((root / "grades.csv").open())}
    assert (rows["ada"]["score"], rows["ada"]["late"]) == ("5", "LATE")


def test_a_file_in_a_students_folder_counts_for_that_student(tmp_path: Path) -> None:
    """Does a file named for another student inside Ada's folder (Moodle's zip folders, or a
    folder source) count for Ada alone, leaving Bob's own submission in place?"""
    root = make_course(tmp_path / "course")
    archive = _zip(
        tmp_path / "class.zip",
        {
            f"Ada Lovelace_11_assignsubmission_file_/Bob Smith_{LAB}-99.ipynb": "ada's",
            f"Bob Smith_22_assignsubmission_file_/{LAB}.ipynb": "bob's",
        },
    )
    assert collect(root, archive, [LAB]).pairs == [("Ada Lovelace", LAB), ("Bob Smith", LAB)]
    assert (_graded(root, "Ada Lovelace"), _graded(root, "Bob Smith")) == ("ada's", "bob's")
    inbox = tmp_path / "inbox"
    (inbox / "ada").mkdir(parents=True)
    (inbox / "ada" / f"ben_1_2_{LAB}-99.ipynb").write_text("ada's")
    (inbox / "ben" / LAB).mkdir(parents=True)
    (inbox / "ben" / LAB / f"{LAB}.ipynb").write_text("ben's")
    assert collect(root, inbox, [LAB]).pairs == [("ada", LAB), ("ben", LAB)]
    assert (_graded(root, "ada"), _graded(root, "ben")) == ("ada's", "ben's")


@pytest.mark.parametrize(
    "name", [f"cy_3_4_2020-01-01-00-00-00_{LAB}.ipynb", f"cy_3_4_LATE_{LAB}.ipynb", f"cy_LATE_{LAB}.ipynb"]
)
def test_lateness_is_never_read_from_the_students_part_of_a_name(tmp_path: Path, name: str) -> None:
    """Does a time or a LATE tag in the part of a Canvas name the student chose leave `late` empty?"""
    root = make_course(tmp_path / "course")
    collected = collect(root, _zip(tmp_path / "class.zip", {name: "cy"}), [LAB])
    assert collected.pairs == [("cy", LAB)] and collected.late == {}


def test_names_of_any_script_and_form_are_students(tmp_path: Path) -> None:
    """Are Hangul and accented names, composed or decomposed, with or without the zip's UTF-8
    flag, each one student under the composed name?"""
    root = make_course(tmp_path / "course")
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(unicodedata.normalize("NFD", f"김민수_1_2_{LAB}.ipynb"), "kim")
        zf.writestr(f"Élodie Durand_7_assignsubmission_file_/{LAB}.ipynb", "elodie")
        zf.writestr(f"{'X' * len('이서연'.encode())}_3_4_{LAB}.ipynb", "lee")
    # written by an archiver that puts UTF-8 bytes in the name without setting the UTF-8 flag
    archive.write_bytes(archive.read_bytes().replace(b"X" * len("이서연".encode()), "이서연".encode()))
    collected = collect(root, archive, [LAB])
    assert collected.pairs == sorted([("김민수", LAB), ("이서연", LAB), ("Élodie Durand", LAB)])
    assert _graded(root, "김민수") == "kim" and collected.not_graded == []
    inbox = tmp_path / "inbox"
    (inbox / unicodedata.normalize("NFD", "Zoë Ngô") / LAB).mkdir(parents=True)
    (inbox / unicodedata.normalize("NFD", "Zoë Ngô") / LAB / f"{LAB}.ipynb").write_text("zoe")
    assert collect(root, inbox, [LAB]).pairs == [("Zoë Ngô", LAB)]


def test_unsafe_names_are_mapped_and_remembered(tmp_path: Path) -> None:
    """Are a glob, a newline and a formula in folder names mapped to safe ids (the originals kept
    for grades.csv), next to a student whose name the glob would match, and does a regrade of
    submitted/ in place find the same students again?"""
    root = make_course(tmp_path / "course")
    inbox = tmp_path / "inbox"
    names = ["[Z]ed", "Zed", "names\nnewline", "=1+1"]
    for name in names:
        (inbox / name / LAB).mkdir(parents=True)
        (inbox / name / LAB / f"{LAB}.ipynb").write_text(name)
    collected = collect(root, inbox, [LAB])
    ids = {name: safe_id(name) for name in names}
    assert collected.pairs == sorted((ids[n], LAB) for n in names)
    assert ids["Zed"] == "Zed" and all(_graded(root, ids[n]) == n for n in names)
    assert recorded_originals(root) == {ids[n]: n for n in names if n != "Zed"}
    assert sorted(p.name for p in (root / "submitted").iterdir() if not p.name.startswith(".")) == sorted(ids.values())
    again = collect(root, root / "submitted", [LAB])
    assert again.pairs == collected.pairs and again.not_graded == []


def test_only_the_notebook_is_copied_and_every_other_file_listed(tmp_path: Path) -> None:
    """From a lab folder with an extra file, a nested folder, a link, a hard link and a named
    pipe, is only the notebook copied, each other file listed by name, none opened?"""
    root = make_course(tmp_path / "course")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("FAKE-KEY-0451")
    lab = tmp_path / "inbox" / "ada" / LAB
    (lab / "pkg").mkdir(parents=True)
    (lab / f"{LAB}.ipynb").write_text("ada")
    (lab / "pkg" / "__init__.py").write_text("import os")
    (lab / "id_rsa").symlink_to(home / ".ssh" / "id_rsa")
    os.link(home / ".ssh" / "id_rsa", lab / "notes.txt")
    os.mkfifo(lab / "pipe")
    (tmp_path / "inbox" / "ben" / LAB).mkdir(parents=True)
    (tmp_path / "inbox" / "ben" / LAB / f"{LAB}.ipynb").symlink_to(root / "solutions" / LAB / f"{LAB}.ipynb")
    os.link(root / "solutions" / LAB / f"{LAB}.ipynb", tmp_path / "inbox" / "ben" / f"{LAB}.ipynb")
    collected = collect(root, tmp_path / "inbox", [LAB])
    assert collected.pairs == [("ada", LAB), ("ben", LAB)]  # ben handed in a lab folder: scored 0, with the reason
    assert sorted(p.name for p in (root / "submitted" / "ada" / LAB).iterdir()) == [f"{LAB}.ipynb"]
    assert list((root / "submitted" / "ben" / LAB).iterdir()) == []
    reasons = _reasons(collected)
    assert reasons[f"ada/{LAB}/id_rsa"] == "a symbolic link, not followed"
    assert reasons[f"ada/{LAB}/notes.txt"].startswith("a hard link")
    assert reasons[f"ada/{LAB}/pipe"] == "a named pipe (FIFO), not read"
    assert reasons[f"ada/{LAB}/pkg/__init__.py"] == "an extra file beside the notebook: not copied, not graded"
    assert reasons[f"ben/{LAB}/{LAB}.ipynb"] == "a symbolic link, not followed"
    assert reasons[f"ben/{LAB}.ipynb"].startswith("a hard link")
    assert not any(
        b"FAKE-KEY" in p.read_bytes() or b"BEGIN SOLUTION" in p.read_bytes()
        for p in (root / "submitted").rglob("*")
        if p.is_file()
    )


def test_exchange_files_in_place_are_listed_and_the_timestamp_only_claimed(tmp_path: Path) -> None:
    """Graded in place after nbgrader's collect, are timestamp.txt (shown as a claim, not used
    for `late`) and submission_secret.txt listed, with a word on the late column, and is a
    folder others can write closed before it is read?"""
    root = make_course(tmp_path / "course")
    lab = root / "submitted" / "ada" / LAB
    lab.mkdir(parents=True)
    (lab / f"{LAB}.ipynb").write_text("ada")
    (lab / "timestamp.txt").write_text("2020-01-01 00:00:00.000000 UTC")
    (lab / "submission_secret.txt").write_text("c2VjcmV0")
    lab.chmod(0o777)
    collected = collect(root, root / "submitted", [LAB])
    assert collected.pairs == [("ada", LAB)] and collected.late == {}
    reasons = _reasons(collected)
    assert "a claim" in reasons[f"ada/{LAB}/timestamp.txt"] and "2020-01-01" in reasons[f"ada/{LAB}/timestamp.txt"]
    assert "submission secret" in reasons[f"ada/{LAB}/submission_secret.txt"]
    assert any("late column is empty" in note for note in collected.notes)
    assert any(note.startswith(f"ada/{LAB}/: was writable by others (mode 777)") for note in collected.notes)
    assert lab.stat().st_mode & 0o777 == 0o755


def test_a_bomb_and_a_bad_crc_cost_their_members_only(tmp_path: Path) -> None:
    """In a zip with a 1000:1 member and a member with a bad CRC, are both listed and the rest
    collected?"""
    root = make_course(tmp_path / "course")
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(f"ada_1_2_{LAB}.ipynb", "ada")
        zf.writestr(f"bomb_1_2_{LAB}.ipynb", "0" * (20 * 2**20), zipfile.ZIP_DEFLATED)
        zf.writestr(f"crc_1_2_{LAB}.ipynb", "GOOD-BYTES", zipfile.ZIP_STORED)
    archive.write_bytes(archive.read_bytes().replace(b"GOOD-BYTES", b"EVIL-BYTES", 1))
    collected = collect(root, archive, [LAB])
    assert collected.pairs == [("ada", LAB)]
    assert "expands more than 100:1" in _reasons(collected)[f"bomb_1_2_{LAB}.ipynb"]
    assert "Bad CRC" in _reasons(collected)[f"crc_1_2_{LAB}.ipynb"]


def test_solutions_and_gradebook_readable_by_others_are_warned(tmp_path: Path, monkeypatch) -> None:
    """On a machine with other people's accounts, does grading warn when every user can read the
    solutions (hidden tests) or the gradebook, and say nothing once they are closed?"""
    monkeypatch.setattr(selection, "other_people", lambda: ["bob"])
    root = make_course(tmp_path / "course")
    (root / "gradebook.db").write_bytes(b"")
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for path in (root / "solutions", root / "gradebook.db"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    _, outcomes = selection.select(root, inbox, grading.Options())
    text = grading.summary(outcomes)
    assert outcomes == []  # notes about the course, not outcomes of a submission
    assert "  solutions/ (" in text and "  the gradebook (" in text and "chmod o-rwx" in text
    for path in (root / "solutions", root / "gradebook.db"):
        path.chmod(0o750 if path.is_dir() else 0o640)
    assert selection.select(root, inbox, grading.Options())[1].notes == []


def test_a_single_user_machine_is_not_warned_about_other_users(tmp_path: Path, monkeypatch) -> None:
    """On a laptop with no one else's account, is a solutions/ folder every user can read left
    unmentioned (there is no one to read it), so that a first grading raises no false alarm?"""
    monkeypatch.setattr(selection, "other_people", lambda: [])
    root = make_course(tmp_path / "course")
    (root / "solutions").chmod(0o755)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    assert selection.select(root, inbox, grading.Options())[1].notes == []


def test_other_people_are_the_login_accounts_of_others(tmp_path: Path) -> None:
    """Are the people on a machine the accounts with a uid from 1000 and a login shell, other
    than the one grading: not system accounts, not nobody, not a shell that refuses logins?"""
    me = os.getuid()
    passwd = tmp_path / "passwd"
    passwd.write_text(
        "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/usr/sbin/nologin\n"
        "ann:x:1000:1000::/home/ann:/bin/bash\nbob:x:1001:1001::/home/bob:/usr/sbin/nologin\n"
        f"me:x:{me}:{me}::/home/me:/bin/zsh\nnobody:x:65534:65534::/:/bin/sh\nbroken line\n"
    )
    assert other_people(passwd) == (["ann"] if me != 1000 else [])
    assert other_people(tmp_path / "missing") == []


def test_two_students_with_one_name_keep_two_ids(tmp_path: Path) -> None:
    """Do two Moodle participants named John Smith (201, 202) and two Canvas users named smithjohn
    (501, 502) get four ids, each with their own notebook and the LMS's account beside the name,
    and does a later download give each the same id again, whatever the order?"""
    root = make_course(tmp_path / "course")
    members = {
        f"John Smith_201_assignsubmission_file_/{LAB}.ipynb": "john 201",
        f"John Smith_202_assignsubmission_file_/{LAB}.ipynb": "john 202",
        f"smithjohn_501_9001_{LAB}.ipynb": "smith 501",
        f"smithjohn_LATE_502_9002_{LAB}.ipynb": "smith 502",
    }
    collected = collect(root, _zip(tmp_path / "class.zip", members), [LAB])
    assert len(collected.pairs) == 4 and collected.not_graded == []
    who = {collected.originals.get(s, s): _graded(root, s) for s, _ in collected.pairs}
    assert who == {
        "John Smith (Moodle 201)": "john 201",
        "John Smith (Moodle 202)": "john 202",
        "smithjohn (Canvas 501)": "smith 501",
        "smithjohn (Canvas 502)": "smith 502",
    }
    ids = {collected.originals[s]: s for s, _ in collected.pairs}
    again = collect(root, _zip(tmp_path / "again.zip", dict(reversed(members.items()))), [LAB])
    assert {again.originals[s]: s for s, _ in again.pairs} == ids
    assert recorded_late(root) == {(ids["smithjohn (Canvas 502)"], LAB): "LATE"}


def test_an_earlier_row_is_kept_by_the_one_student_of_that_name(tmp_path: Path) -> None:
    """Does a gradebook that holds the old id (the bare name) carry on: the one student of that
    name keeps it, and a namesake who joins later gets an id of their own?"""
    root = make_course(tmp_path / "course")
    (root / "submitted" / "John Smith" / LAB).mkdir(parents=True)  # an earlier version's collection
    first = collect(
        root, _zip(tmp_path / "a.zip", {f"John Smith_201_assignsubmission_file_/{LAB}.ipynb": "201"}), [LAB]
    )
    assert first.pairs == [("John Smith", LAB)]
    assert recorded_originals(root) == {"John Smith": "John Smith (Moodle 201)"}
    second = collect(
        root,
        _zip(
            tmp_path / "b.zip",
            {
                f"John Smith_202_assignsubmission_file_/{LAB}.ipynb": "202",
                f"John Smith_201_assignsubmission_file_/{LAB}.ipynb": "201 again",
            },
        ),
        [LAB],
    )
    other = next(s for s, _ in second.pairs if s != "John Smith")
    assert _graded(root, "John Smith") == "201 again" and _graded(root, other) == "202"


def test_a_name_shaped_like_a_mapped_id_never_takes_that_id(tmp_path: Path) -> None:
    """Does a participant whose literal name is the id another's name maps to (Ann O'Neil's)
    get an id of their own, from a zip and from folders in place, with nothing overwritten?"""
    root = make_course(tmp_path / "course")
    ann = safe_id("Ann O'Neil")
    collected = collect(
        root,
        _zip(
            tmp_path / "class.zip",
            {
                f"Ann O'Neil_301_assignsubmission_file_/{LAB}.ipynb": "ann",
                f"{ann}_302_assignsubmission_file_/{LAB}.ipynb": "blank",
            },
        ),
        [LAB],
    )
    assert len(collected.pairs) == 2 and collected.not_graded == []
    assert sorted(_graded(root, s) for s, _ in collected.pairs) == ["ann", "blank"]
    assert safe_id(ann) != ann

    place = make_course(tmp_path / "in-place")
    for name, text in (("Ann O'Neil", "ann"), (ann, "another student")):
        (place / "submitted" / name / LAB).mkdir(parents=True)
        (place / "submitted" / name / LAB / f"{LAB}.ipynb").write_text(text)
    collected = collect(place, place / "submitted", [LAB])
    assert (place / "submitted" / ann / LAB / f"{LAB}.ipynb").read_text() == "another student"
    assert [(s, _graded(place, s)) for s, _ in collected.pairs] == [(safe_id(ann), "another student")]
    reason = _reasons(collected)["Ann O'Neil/"]
    assert "Ann O'Neil" in reason and ann in reason and "another submission" in reason
