"""A table an LMS exports or imports (a CSV worksheet, a gradebook, a Grade Center download):
read without trusting its encoding or delimiter, written back with every cell of ours neutralised
as ``grades.csv``'s are (``safe_text.csv_cell``), and what an export did (``ExportSummary``)."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.grading.grader.in_parts.atomic import write_atomic
from autograder.grading.grader.safe_text import csv_cell, printable

if TYPE_CHECKING:
    from autograder.grading.lms.records import LmsRecord


class ExportError(ValueError):
    """An export that cannot be written as asked (a template without the column to fill, ...)."""


@dataclass
class LmsTable:
    """A header and its rows, every row as long as the header. A table read from the LMS's own
    file (``read_table``) keeps its cells as the LMS wrote them: only the cells the export
    fills in (``fill``) are ours to neutralise; in a table the export makes, every cell is."""

    header: list[str]
    rows: list[list[str]] = field(default_factory=list)
    filled: set[tuple[int, int]] | None = None  # (row, column) of our cells; None: every cell is ours

    def fill(self, row: int, column: int, value: str) -> None:
        self.rows[row][column] = value
        if self.filled is not None:
            self.filled.add((row, column))

    def column(self, name: str, bare: Callable[[str], str | None] = lambda title: title) -> int | None:
        """The index of the column named ``name`` (case and spaces aside), None when absent; ``bare``
        gives the name a title holds (None: no such column), as ``Lab 0`` of ``Lab 0 (12345)``."""
        wanted = " ".join(name.split()).casefold()
        for index, title in enumerate(self.header):
            if (named := bare(title)) is not None and " ".join(named.split()).casefold() == wanted:
                return index
        return None


def _decoded(data: bytes) -> str:
    """Blackboard's download is UTF-16 with a BOM; Moodle's and Canvas's UTF-8, maybe with one."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    return data.decode("utf-8-sig")


def read_table(path: Path) -> LmsTable:
    """The table in ``path``: comma or tab delimited (whichever the header line holds more of)."""
    try:
        text = _decoded(Path(path).read_bytes())
    except (OSError, UnicodeDecodeError) as err:
        raise ExportError(f"{path}: cannot be read as a table ({err})") from err
    first = text.split("\n", 1)[0]
    delimiter = "\t" if first.count("\t") > first.count(",") else ","
    rows = [row for row in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter) if any(row)]
    if not rows:
        raise ExportError(f"{path}: empty, no header row")
    header, body = rows[0], rows[1:]
    width = len(header)
    return LmsTable(header, [(row + [""] * width)[: max(width, len(row))] for row in body], set())


def write_table(path: Path, table: LmsTable, quote_all: bool = False) -> None:
    """``table`` as UTF-8 CSV, written whole or not at all: every cell of ours neutralised
    (``csv_cell``, as in grades.csv), every cell of the LMS's own file as the LMS wrote it (the
    LMS reads a changed cell as a change: Moodle's ``-`` for "never", a negative score)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_ALL if quote_all else csv.QUOTE_MINIMAL)
    ours = table.filled
    writer.writerow([csv_cell(cell) if ours is None else cell for cell in table.header])
    for r, row in enumerate(table.rows):
        writer.writerow([csv_cell(cell) if ours is None or (r, c) in ours else cell for c, cell in enumerate(row)])
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(Path(path), buffer.getvalue())


def check_points(summary: ExportSummary, lms_points: str, points: float) -> None:
    """A note when the LMS's maximum for the column (its own file's) is not the lab's points:
    the grades are the lab's points, never scaled."""
    try:
        theirs = float(lms_points.strip().replace(",", ""))
    except ValueError:
        return
    note = (
        f"the LMS's maximum for this column is {number(theirs)}, the lab's is {number(points)}: the grades "
        f"written are the lab's points; set the LMS's maximum to {number(points)}"
    )
    if theirs != points and note not in summary.notes:
        summary.notes.append(note)


def fill_grades(
    table: LmsTable,
    mine: list[LmsRecord],
    summary: ExportSummary,
    missing: str | None,
    columns: tuple[int, int, int | None],
    account: Callable[[str], str] = str.strip,
    matched: Callable[[list[str], LmsRecord], None] | None = None,
    skip: Callable[[list[str]], bool] = lambda row: False,
) -> None:
    """Fill in the LMS's own ``table``, row by row: ``columns`` are its key (the LMS's id,
    read by ``account``), grade and comment (None: it has none). A row whose id is graded gets
    the grade and the comment (``matched`` is called on it first); a row of ``skip`` is left as
    it is; any other keeps its grade, or gets ``missing`` where that cell is empty. Every
    graded student the table lacks is listed in the summary."""
    key, grade, comment = columns
    by_account = {r.account: r for r in mine}
    seen = set()
    for index, row in enumerate(table.rows):
        if skip(row):
            continue
        record = by_account.get(account(row[key]))
        if record is None:
            summary.no_submission.append(row[key])
            if missing is not None and not row[grade].strip():
                table.fill(index, grade, missing)
            continue
        seen.add(record.account)
        if matched is not None:
            matched(row, record)
        table.fill(index, grade, number(record.score))
        if comment is not None:
            table.fill(index, comment, record.comment)
    summary.not_in_lms_file += [r.student for r in mine if r.account not in seen]


def number(value: float) -> str:
    """A grade as the LMSs read it: ``4``, ``2.5``."""
    return f"{value:g}"


@dataclass
class ExportSummary:
    """What an export wrote, and every student it did not write, with the reason."""

    lms: str
    lab: str
    files: list[Path] = field(default_factory=list)
    written: list[str] = field(default_factory=list)  # student ids whose grade is in the file
    not_exportable: list[tuple[str, str]] = field(default_factory=list)  # (student id, why)
    not_in_lms_file: list[str] = field(default_factory=list)  # an LMS id the LMS's own file lacks
    no_submission: list[str] = field(default_factory=list)  # rows of the LMS's file no one graded
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The summary an instructor reads; the files written last."""
        out = [f"{self.lms} export of {self.lab}: {len(self.written)} grades written"]
        for student, why in self.not_exportable:
            out.append(f"  not exportable: {printable(student)}: {printable(why)}")
        for student in self.not_in_lms_file:
            out.append(f"  not in the LMS's file, not written: {printable(student)}")
        if self.no_submission:
            out.append(f"  in the LMS's file with no submission graded: {len(self.no_submission)} rows")
        out += [f"  {printable(note)}" for note in self.notes]
        out += [f"{self.lms} import file: {path}" for path in self.files]
        return out
