"""Unpacking an LMS zip member by member, streamed, under caps: a zip bomb, a member that
lies about its size or a damaged member costs that member, never the class.

Caps (bytes actually unpacked, whatever the archive declares): ``MEMBER_BYTES`` per member,
``ARCHIVE_BYTES`` for the whole archive, and ``RATIO`` times a member's compressed size
(members that unpack to at most ``RATIO_FLOOR`` are never held to the ratio: a small, very
regular notebook may compress well).
"""

from __future__ import annotations

import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

MEMBER_BYTES = 100 * 2**20
ARCHIVE_BYTES = 2 * 2**30
RATIO = 100
RATIO_FLOOR = 2**20
_UTF8_FLAG = 0x800


def member_name(info: zipfile.ZipInfo) -> str:
    """The member's name as its author wrote it: archivers without the UTF-8 flag often
    still write UTF-8 (Python then decodes it as cp437, turning 김민수 into mojibake)."""
    if info.flag_bits & _UTF8_FLAG:
        return info.filename
    try:
        return info.filename.encode("cp437").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return info.filename


def is_link(info: zipfile.ZipInfo) -> bool:
    """Does the member say it is a symbolic link (unix mode in its external attributes)?"""
    return stat.S_ISLNK(info.external_attr >> 16)


@dataclass
class Budget:
    """What is left of the archive's cap."""

    left: int = ARCHIVE_BYTES


def extract(zf: zipfile.ZipFile, info: zipfile.ZipInfo, dest: Path, budget: Budget) -> str | None:
    """Stream ``info`` into the file ``dest``; None when it unpacked whole with a good CRC,
    else why not (``dest`` is then removed)."""
    ratio_cap = max(RATIO * info.compress_size, RATIO_FLOOR)
    caps = [
        (MEMBER_BYTES, f"unpacks to more than {MEMBER_BYTES // 2**20} MB, not unpacked"),
        (ratio_cap, f"expands more than {RATIO}:1 (a zip bomb?), not unpacked"),
        (budget.left, f"the archive's cap of {ARCHIVE_BYTES // 2**30} GB unpacked was reached, not unpacked"),
    ]
    limit, reason = min(caps, key=lambda cap: cap[0])
    size = 0
    try:
        with zf.open(info) as src, dest.open("wb") as out:
            while chunk := src.read(min(2**20, limit + 1 - size)):
                size += len(chunk)
                if size > limit:
                    break
                out.write(chunk)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError, ValueError) as err:
        dest.unlink(missing_ok=True)
        budget.left -= size
        return f"could not be read from the zip ({type(err).__name__}: {err}), not graded"
    budget.left -= min(size, limit)
    if size > limit:
        dest.unlink(missing_ok=True)
        return reason
    return None
