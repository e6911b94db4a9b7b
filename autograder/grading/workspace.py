"""``workspace``: copy the released labs into a student's folder, and bring a changed release
in without losing their work.

A lab is copied once; ``.course-releases.json`` in the folder records the sha256 of the
release each copy was made from. When notebooks/LAB changes (an erratum, a changed test, a
new exercise), the student's copy is rebuilt from the new release with their answers carried
over (answer cells matched by nbgrader ``grade_id``), the cells they added kept after the
same graded cell as before, and answers to exercises that left the lab kept at the end. The
previous copy goes to ``backups/LAB.YYYY-MM-DDTHHMM.ipynb``; no backup is ever overwritten.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import nbformat
from nbgrader.utils import compute_checksum

from autograder import notebook_cells as nbcells
from autograder.grading.course import LAB_NAME, UnknownLab
from autograder.grading.layout import CourseLayout

MANIFEST = ".course-releases.json"
BACKUPS = "backups"
MARK = "course"  # cell metadata key of the cells this module writes: {"kept_answer": grade_id or True}
# Jupyter rewrites these on save, so they say nothing about which release a copy came from.
VOLATILE_METADATA = {"kernelspec", "language_info", "widgets"}


@dataclass
class LabUpdate:
    """One notebook rebuilt from a changed release."""

    notebook: str  # LAB/LAB.ipynb
    backup: Path  # the student's copy before the update
    changed: list[str] = field(default_factory=list)  # release cells that changed, "grade_id (what)"
    carried: list[str] = field(default_factory=list)  # grade_ids of answers carried over
    unanswered: list[str] = field(default_factory=list)  # answer cells left as released: new stub taken
    kept_at_end: list[str] = field(default_factory=list)  # answers whose exercise left the release
    own_cells: int = 0  # cells the student added, kept
    unreadable: str | None = None  # why the old copy could not be read (backup only)


@dataclass
class WorkspaceReport:
    copied: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    updated: list[LabUpdate] = field(default_factory=list)


def known_labs(root: Path) -> list[str]:
    """The released labs: the ``NN-slug`` folders of notebooks/."""
    return sorted(p.name for p in CourseLayout(Path(root)).notebooks.iterdir() if p.is_dir() and LAB_NAME.match(p.name))


def sync(root: Path, target: Path, labs: list[str] | None = None, now: datetime | None = None) -> WorkspaceReport:
    """Copy notebooks/ into ``target``: new files are copied, a notebook whose release changed since
    the student's copy is rebuilt with their answers (see the module docstring), the rest is left alone.

    Args:
        labs: only these labs (default: everything in notebooks/); an unknown name is an error.
        now: the time that names the backups (default: now).
    """
    source, target = CourseLayout(Path(root)).notebooks, Path(target)
    known = known_labs(root)
    unknown = [n for n in labs or [] if n not in known]
    if unknown:
        raise UnknownLab(f"no such lab in notebooks/: {', '.join(unknown)} (labs: {', '.join(known)})")
    folders = [source / n for n in labs] if labs else [source]
    manifest = _load_manifest(target)
    before = dict(manifest)
    report = WorkspaceReport()
    for path in sorted(p for folder in folders for p in folder.rglob("*")):
        if not path.is_file() or ".ipynb_checkpoints" in path.parts:
            continue
        rel = path.relative_to(source).as_posix()
        dest = target / rel
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)
            if path.suffix == ".ipynb":
                manifest[rel] = _sha256(path)
            report.copied.append(rel)
            continue
        if path.suffix != ".ipynb" or manifest.get(rel) == (digest := _sha256(path)):
            report.kept.append(rel)
            continue
        release, mine = _read(path), _read(dest)
        if rel not in manifest:  # a copy made before the manifest: compare it with the release
            if mine is None or not _differs(mine, release):
                if mine is not None:
                    manifest[rel] = digest
                report.kept.append(rel)
                continue
        report.updated.append(_refresh(target, rel, path, dest, mine, release, now or datetime.now()))
        manifest[rel] = digest
    if manifest != before:
        _save_manifest(target, manifest)
    return report


def describe(report: WorkspaceReport, target: Path) -> list[str]:
    """The lines that tell a student what ``sync`` did."""
    lines = [f"copied into {target}: {', '.join(report.copied) or 'nothing new'}"]
    for u in report.updated:
        lines.append(f"updated {u.notebook}: the release changed since your copy was made")
        if u.unreadable:
            lines.append(f"  your copy could not be read ({u.unreadable}), so nothing was carried over")
        else:
            lines.append(f"  release cells changed: {', '.join(u.changed) or 'none (notebook metadata only)'}")
            lines.append(f"  your answers carried over: {', '.join(u.carried) or 'none yet'}")
            if u.unanswered:
                lines.append(f"  not answered yet, taken from the new release: {', '.join(u.unanswered)}")
            if u.kept_at_end:
                lines.append(f"  answers kept at the end (their exercise left the lab): {', '.join(u.kept_at_end)}")
            if u.own_cells:
                lines.append(f"  cells you added, kept in place: {u.own_cells}")
        lines.append(f"  your copy before the update: {u.backup}")
    if report.kept:
        lines.append(f"kept (release unchanged, yours): {', '.join(report.kept)}")
    return lines


def merge(mine: nbformat.NotebookNode, release: nbformat.NotebookNode, update: LabUpdate) -> nbformat.NotebookNode:
    """The new release with the student's answers, own cells and orphaned answers from ``mine``;
    fills in ``update``'s lists."""
    answers = {_grade_id(c): c for c in mine.cells if _is_answer(c)}
    new_answers = {_grade_id(c) for c in release.cells if _is_answer(c)}
    release_ids = {_grade_id(c) for c in release.cells if _grade_id(c)}
    own: dict[str | None, list] = {}  # the student's cells by the nearest graded cell above them
    at_end, seen = [], []  # cells kept at the end earlier; grade_ids of mine in order
    for cell in mine.cells:
        if grade_id := _grade_id(cell):
            seen.append(grade_id)
        elif MARK in cell.metadata and "kept_answer" in cell.metadata[MARK]:
            at_end.append(copy.deepcopy(cell))
        else:
            # an anchor that left the release: the nearest one above it that stayed
            anchor = next((g for g in reversed(seen) if g in release_ids), None)
            own.setdefault(anchor, []).append(copy.deepcopy(cell))
    update.own_cells = sum(map(len, own.values()))
    cells = list(own.get(None, []))
    for cell in release.cells:
        grade_id = _grade_id(cell)
        new = copy.deepcopy(cell)
        if _is_answer(cell) and grade_id is not None and grade_id in answers:
            old = answers[grade_id]
            if _untouched(old):
                update.unanswered.append(grade_id)
            else:
                new.source = old.source
                for key in ("outputs", "execution_count", "attachments"):
                    if key in old and (key != "outputs" or new.cell_type == "code"):
                        new[key] = copy.deepcopy(old[key])
                update.carried.append(grade_id)
        cells.append(new)
        cells.extend(own.get(grade_id, []) if grade_id else [])
    orphans = [g for g in answers if g is not None and g not in new_answers]
    if orphans and not at_end:
        at_end.append(
            _marked(
                nbformat.v4.new_markdown_cell(
                    "## Kept from your earlier copy\n\nThe exercises of the answers below are no longer in this "
                    "lab (the release changed). Nothing was deleted: move what you still need into the exercises "
                    "above. These cells are not graded."
                ),
                True,
            )
        )
    for grade_id in orphans:
        at_end.append(_marked(nbformat.v4.new_markdown_cell(f"Your answer to `{grade_id}`:"), grade_id))
        kept = copy.deepcopy(answers[grade_id])
        nbcells.forget(kept)  # an unknown grade_id would trouble nbgrader
        at_end.append(_marked(kept, grade_id))
    update.kept_at_end = orphans
    out = copy.deepcopy(release)
    out.cells = _unique_ids(cells + at_end)
    return out


def changes(mine: nbformat.NotebookNode, release: nbformat.NotebookNode) -> list[str]:
    """The release's cells that differ from the student's copy, by grade_id: text, test and code
    cells changed, exercises changed (where unanswered), cells new or removed."""
    ours = {_grade_id(c): c for c in mine.cells if _grade_id(c)}
    theirs = {_grade_id(c) for c in release.cells if _grade_id(c)}
    out = []
    for cell in release.cells:
        grade_id = _grade_id(cell)
        if not grade_id:
            continue
        kind = "exercise" if _is_answer(cell) else _kind(cell)
        old = ours.get(grade_id)
        if old is None:
            out.append(f"{grade_id} (new {kind})")
        elif (old.cell_type, old.source) != (cell.cell_type, cell.source) and (
            not _is_answer(cell) or (_is_answer(old) and _untouched(old))
        ):
            out.append(f"{grade_id} ({kind} changed)")
    out += [f"{g} (removed)" for g in ours if g not in theirs]
    return out


def _differs(mine: nbformat.NotebookNode, release: nbformat.NotebookNode | None) -> bool:
    """Does the release differ from the one a copy (made before the manifest) came from?"""
    assert release is not None, "the course's own release is not a notebook nbformat can read"
    order = [_grade_id(c) for c in mine.cells if _grade_id(c)]
    metadata = {k: v for k, v in release.metadata.items() if k not in VOLATILE_METADATA}
    return (
        bool(changes(mine, release))
        or order != [_grade_id(c) for c in release.cells if _grade_id(c)]
        or any(mine.metadata.get(k) != v for k, v in metadata.items())
    )


def _refresh(target: Path, rel: str, source: Path, dest: Path, mine, release, now: datetime) -> LabUpdate:
    """Back ``dest`` up, then replace it by the release merged with it (the release alone if unreadable)."""
    update = LabUpdate(rel, _backup(target, dest, now))
    scratch = dest.with_name(f".{dest.name}.updating")
    if mine is None:
        update.unreadable = "not a notebook nbformat can read"
        shutil.copy2(source, scratch)
    else:
        update.changed = changes(mine, release)
        nbformat.write(merge(mine, release, update), str(scratch))
    os.replace(scratch, dest)
    return update


def _backup(target: Path, dest: Path, now: datetime) -> Path:
    """Copy ``dest`` to backups/STEM.TIME.ipynb, never over an existing file."""
    folder = target / BACKUPS
    folder.mkdir(exist_ok=True)
    stamp, data = now.strftime("%Y-%m-%dT%H%M"), dest.read_bytes()
    for n in range(1, 10_000):
        path = folder / f"{dest.stem}.{stamp}{'' if n == 1 else f'-{n}'}{dest.suffix}"
        try:
            with open(path, "xb") as f:
                f.write(data)
            return path
        except FileExistsError:
            continue
    raise RuntimeError(f"no free backup name for {dest} in {folder}")


def _read(path: Path) -> nbformat.NotebookNode | None:
    try:
        return nbformat.read(str(path), as_version=4)
    except Exception:  # not JSON, not a notebook: the caller keeps the file as it is
        return None


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _load_manifest(target: Path) -> dict[str, str]:
    try:
        data = json.loads((target / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def _save_manifest(target: Path, manifest: dict[str, str]) -> None:
    target.mkdir(parents=True, exist_ok=True)
    scratch = target / f"{MANIFEST}.updating"
    scratch.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
    os.replace(scratch, target / MANIFEST)


def _grade_id(cell) -> str | None:
    return nbcells.grade_id(cell)


def _is_answer(cell) -> bool:
    return nbcells.is_answer(cell)


def _kind(cell) -> str:
    if cell.cell_type == "markdown":
        return "text"
    return "test" if nbcells.is_graded(cell) else "code"


def _untouched(cell) -> bool:
    """Is this answer cell still as released (nbgrader's checksum of its source matches)?"""
    try:
        return compute_checksum(cell) == nbcells.checksum(cell)
    except (KeyError, TypeError, ValueError):
        return False


def _marked(cell, value) -> nbformat.NotebookNode:
    cell.metadata[MARK] = {"kept_answer": value}
    return cell


def _unique_ids(cells: list) -> list:
    seen = set()
    for cell in cells:
        if "id" in cell and cell.id in seen:
            cell.id = uuid.uuid4().hex[:8]
        seen.add(cell.get("id"))
    return cells
