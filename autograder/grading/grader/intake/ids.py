"""Student ids are data: the names an LMS or a folder gives, made safe for nbgrader and paths
(the summary and a spreadsheet show them through ``safe_text``).

An id is normalised to Unicode NFC (macOS writes names decomposed, NFD; the same student must
get the same id). Letters of any script (with their combining marks), digits, the space and
``. _ - @`` are kept as they are. Any other id is mapped, never refused, to a slug of its safe
characters plus a short hash of the original: control characters, ``/``, the glob characters
``* ? [ ]`` (nbgrader matches ids as glob patterns), a leading ``.`` or ``-`` (a hidden file,
an option), a leading or trailing space and a name longer than ``MAX_BYTES`` always force it.
The original is kept (the summary shows the mapping, grades.csv has it in ``original_id``).

A mapped id always ends in ``-`` and eight hexadecimal digits, and a name of that shape is itself
mapped too: so a kept name never equals a mapped one, and a student cannot take another's id by
naming themselves after it (``Ann_O_Neil-0a1b2c3d``). Two different names giving one mapped id
(the hash's eight digits alike) is a collision that intake refuses, naming both.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

MAX_BYTES = 120  # in UTF-8: far below a file name's 255 bytes, with room for suffixes
_PUNCTUATION = frozenset(" ._-@")
_MAPPED = re.compile(r"-[0-9a-f]{8}$")  # the tail of a mapped id


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _kept(char: str) -> bool:
    return char in _PUNCTUATION or unicodedata.category(char)[0] in "LM" or unicodedata.category(char) == "Nd"


def is_safe(student: str) -> bool:
    """May this (NFC) id be used as it is, as a folder name and by nbgrader?"""
    return (
        bool(student)
        and all(_kept(c) for c in student)
        and student[0] not in ".-"
        and student == student.strip()
        and len(student.encode()) <= MAX_BYTES
    )


def safe_id(original: str) -> str:
    """The id grading uses for the name ``original``: itself in NFC when safe, else a slug and
    a hash of the original (the same name always gives the same id)."""
    student = nfc(original)
    return student if is_safe(student) and not _MAPPED.search(student) else mapped_id(student)


def mapped_id(original: str) -> str:
    """A slug of ``original``'s safe characters and a hash of the whole of it: an id that no kept
    name can equal (``safe_id`` maps every name of that shape)."""
    student = nfc(original)
    digest = hashlib.sha256(student.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    slug = "".join(c if _kept(c) and c != " " else "_" for c in student)
    slug = "_".join(part for part in slug.split("_") if part).lstrip(".-")[:40].rstrip(".-_ ")
    return f"{slug or 'student'}-{digest}"
