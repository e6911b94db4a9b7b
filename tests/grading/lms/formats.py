"""Readers of the files each LMS imports, written from the formats' documentation and not from
the writers (book/guides/instructor.md, "After grading", quotes the sources), and the zips
each LMS's "download all submissions" gives, for the round trip.

Moodle: the grading worksheet's ``Identifier`` is ``Participant N`` and its ``Grade`` column
holds the grade; a feedback zip's path splits at ``_`` into full name, participant id, plugin
type, plugin name and the file. Canvas: ``ID`` is the user id, the assignment's column is titled
``Name (ID)`` or ``Name``, a ``Points Possible`` row may follow the header. Blackboard: ``Username``
names the student, a grade column is titled ``Name [Total Pts: N Score] |ID``, a comma-delimited
file quotes every cell.
"""

from __future__ import annotations

import csv
import io
import re
import zipfile
from pathlib import Path

FORMULA = ("=", "+", "-", "@", "\t", "\r")


def plain(cell: str) -> str:
    """What a spreadsheet shows of a neutralised cell: the quote in front of a formula dropped."""
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(FORMULA) else cell


def rows(path: Path, delimiter: str = ",") -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(Path(path).read_text(encoding="utf-8-sig")), delimiter=delimiter))


def cells(path: Path) -> list[str]:
    """Every cell of a CSV file, as written."""
    return [c for row in csv.reader(io.StringIO(Path(path).read_text(encoding="utf-8-sig"))) for c in row]


def moodle_worksheet(path: Path) -> dict[str, tuple[str, str, str]]:
    """Participant id: (grade, maximum grade, feedback comments), as Moodle's upload reads them."""
    out = {}
    for row in rows(path):
        match = re.fullmatch(r"Participant (\d+)", row["Identifier"])
        assert match, row["Identifier"]
        assert match[1] not in out, f"participant {match[1]} twice"
        out[match[1]] = (row["Grade"], row.get("Maximum Grade", ""), row.get("Feedback comments", ""))
    return out


def moodle_feedback(path: Path) -> dict[str, tuple[str, list[str]]]:
    """Participant id: (full name, files), as Moodle's feedback zip import splits each path."""
    out: dict[str, tuple[str, list[str]]] = {}
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            folder, _, filename = name.partition("/")
            fullname, participant, plugintype, pluginname, rest = folder.split("_", 4)
            assert participant.isdigit() and (plugintype, pluginname, rest) == ("assignsubmission", "file", ""), name
            out.setdefault(participant, (fullname, []))[1].append(filename)
    return out


def canvas_gradebook(path: Path, assignment: str) -> tuple[dict[str, str], str | None]:
    """Canvas user id: grade of ``assignment``, and its Points Possible (None: no such row)."""
    table = rows(path)
    title = next(t for t in table[0] if re.sub(r"\s*\(\d+\)$", "", t) == assignment)
    points = None
    out = {}
    for row in table:
        if row["Student"].strip() == "Points Possible":
            points = row[title]
            continue
        assert row["ID"] not in out, f"user {row['ID']} twice"
        out[row["ID"]] = row[title]
    return out, points


def blackboard_grades(path: Path, assignment: str) -> tuple[dict[str, str], str, str]:
    """User name: grade of ``assignment``, its Total Pts and its column id ("" when new)."""
    text = Path(path).read_text(encoding="utf-8")
    assert all(line.startswith('"') and line.endswith('"') for line in text.splitlines()), "every cell quoted"
    table = rows(path)
    for title in table[0]:
        match = re.fullmatch(r"(.*) \[Total Pts: ([\d.]+) Score\](?: \|(\d+))?", title)
        if match and match[1] == assignment:
            break
    else:
        raise AssertionError(f"no column for {assignment}")
    out = {}
    for row in table:
        assert row["Username"] not in out, f"user {row['Username']} twice"
        out[row["Username"]] = row[title]
    return out, match[2], match[3] or ""


# --- the downloads: one member name per student, as each LMS names it ---


def moodle_member(full_name: str, participant: int, lab: str) -> str:
    return f"{full_name}_{participant}_assignsubmission_file_/{lab}.ipynb"


def canvas_member(login: str, user_id: int, submission: int, lab: str, late: bool = False, version: int = 0) -> str:
    return f"{login}{'_LATE' if late else ''}_{user_id}_{submission}_{lab}{f'-{version}' if version else ''}.ipynb"


def blackboard_member(username: str, when: str, lab: str, column: str = "Lab 0") -> str:
    return f"{column}_{username}_attempt_{when}_{lab}.ipynb"
