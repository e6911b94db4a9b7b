"""Are student ids data: kept when safe, mapped (never refused) when not, shown on one line,
and written into grades.csv so that no spreadsheet reads them as formulas?"""

from __future__ import annotations

import csv
import unicodedata
from pathlib import Path

import pytest

from autograder.grading.grader import grading
from autograder.grading.grader.intake.ids import is_safe, safe_id
from autograder.grading.grader.output import grades_csv as export
from autograder.grading.grader.safe_text import csv_cell, printable

HANGUL = "김민수"
ELODIE = "Élodie Durand"


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


@pytest.mark.parametrize("name", ["ada", "Dee Ng", "a.b_c-d@e", HANGUL, ELODIE, "प्रिया", "Zoë Ngô", "李雷"])
def test_safe_names_are_kept(name: str) -> None:
    """Is a name of letters of any script, digits, space and . _ - @ kept as it is?"""
    assert safe_id(name) == name and is_safe(name)


@pytest.mark.parametrize("name", [HANGUL, ELODIE, "José"])
def test_decomposed_names_give_the_composed_id(name: str) -> None:
    """Does a name written decomposed (NFD, as macOS writes it) give the same id as composed?"""
    assert nfd(name) != name and safe_id(nfd(name)) == name


@pytest.mark.parametrize(
    "name",
    [
        "[Z]ed",
        "a*b",
        "who?",
        "a/b",
        "names\nnewline",
        "tab\there",
        "cr\rhere",
        ".hidden",
        "-rf",
        "=1+1",
        "+1",
        " lead",
        "trail ",
        "x" * 200,
        "",
        "..",
        "a\u202eb",
        "semi;colon",
        'quote"d',
        nfd("[김]민수"),
    ],
)
def test_unsafe_names_are_mapped_to_safe_distinct_ids(name: str) -> None:
    """Is every other name mapped (not refused) to a safe id that no other name gets?"""
    student = safe_id(name)
    assert student != name and is_safe(student), student
    assert safe_id(name) == student  # the same name always gives the same id
    assert all(c not in student for c in "/*?[]\n\r\t")
    others = {safe_id(n) for n in ["[Z]ed", "Zed", "Z_ed", "-rf", "rf", "=1+1", "_1_1"] if n != name}
    assert student not in others


def test_the_mapping_keeps_a_readable_slug() -> None:
    """Does a mapped id still say whose it is (the safe letters of the name)?"""
    assert safe_id("[Z]ed").startswith("Z_ed-") and safe_id("=1+1").startswith("1_1-")
    assert safe_id(nfd("[김]민수")) == safe_id("[김]민수") and "김_민수" in safe_id("[김]민수")


def test_printable_puts_every_name_on_one_line() -> None:
    """Are line breaks, other control characters and bidirectional overrides written as escapes?"""
    assert printable("a\nb\rc\td\x1b\u202ee\u2028") == "a\\nb\\rc\\td\\x1b\\u202ee\\u2028"
    assert printable(f"{HANGUL} {ELODIE}") == f"{HANGUL} {ELODIE}"
    assert "\n" not in printable("x\n  ada / 00-warmup: forged")


@pytest.mark.parametrize(
    "cell, shown",
    [
        ("=1+1", "'=1+1"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("ada", "ada"),
        ("1=1", "1=1"),
    ],
)
def test_csv_cells_that_start_a_formula_are_neutralised(cell: str, shown: str) -> None:
    """Does a cell starting with = + - @, tab or CR get a quote in front, and no other cell?"""
    assert csv_cell(cell) == shown


def test_grades_csv_keeps_the_original_name_and_no_formula(tmp_path: Path) -> None:
    """Does grades.csv end with original_id, holding the name a mapped id came from, with no cell
    that starts a formula?"""
    formula, newline = safe_id("=1+1"), safe_id("names\nnewline")
    scores = {(formula, "00-warmup"): (0.0, 5.0), (newline, "00-warmup"): (0.0, 5.0), ("ada", "00-warmup"): (5, 5)}
    path = tmp_path / "grades.csv"
    export.write_csv(path, scores, {("ada", "00-warmup"): "LATE"}, {formula: "=1+1", newline: "names\nnewline"})
    rows = list(csv.reader(path.open()))
    assert rows[0] == ["student_id", "lab", "score", "max_score", "late", "original_id"]
    assert {r[0]: r[5] for r in rows[1:]} == {"ada": "ada", formula: "'=1+1", newline: "names\\nnewline"}
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for row in rows for cell in row)
    assert len(path.read_text().splitlines()) == 4


def test_summary_lines_cannot_be_forged() -> None:
    """Does a file name or note with a newline stay on its own line of the summary, and is a
    mapped id shown with the name it came from?"""
    mapped = safe_id("x\ny")
    outcomes = [
        grading.Outcome(mapped, "00-warmup", 0, 5, original_id="x\ny"),
        grading.Outcome("", "", graded=False, file="ada/evil\n  ben / 00-warmup: forged", notes=["not a notebook"]),
    ]
    text = grading.summary(outcomes)
    assert not any(line.startswith("  ben /") for line in text.splitlines())
    assert f'  {mapped}: the student id made from the name "x\\ny"' in text
