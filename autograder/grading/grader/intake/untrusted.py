"""Reading what students handed in without trusting it: plain files only, and folders that
no one else can change while grading reads them.

A submitted name may be a symbolic link (to the instructor's ssh key, the solutions), a hard
link to a file outside the submission, a named pipe (opening it for reading waits forever) or
a device. Such a file is refused with the reason and never opened; a plain file is opened
with ``O_NOFOLLOW`` and checked again on the open descriptor, so that swapping it for a link
between the look and the open does not help either.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_BYTES = 100 * 2**20  # a larger notebook is listed, not read


class Refused(Exception):
    """A file or folder that is not read; the message says why, in the summary's words."""


def why_not_plain(st: os.stat_result) -> str | None:
    """Why a file with this (l)stat is not read (None: a plain file, read)."""
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        return "a symbolic link, not followed"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO), not read"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file, not read"
    if stat.S_ISSOCK(mode):
        return "a socket, not read"
    if not stat.S_ISREG(mode):
        return "not a plain file, not read"
    if st.st_nlink > 1:
        return f"a hard link (one file with {st.st_nlink} names, perhaps outside the submission), not read"
    return None


def read_plain(path: Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of ``path`` if it is a plain file of at most ``limit`` bytes; else ``Refused``."""
    before = os.lstat(path)
    if reason := why_not_plain(before):
        raise Refused(reason)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise Refused(f"could not be opened ({err.strerror})") from None
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
            raise Refused("replaced while it was read, not read")
        if reason := why_not_plain(st):
            raise Refused(reason)
        if st.st_size > limit:
            raise Refused(f"larger than {limit // 2**20} MB, not read")
        chunks, size = [], 0
        while chunk := os.read(fd, min(2**20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise Refused(f"larger than {limit // 2**20} MB, not read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def is_plain(path: Path) -> bool:
    try:
        return why_not_plain(os.lstat(path)) is None
    except OSError:
        return False


def is_folder(path: Path) -> bool:
    """A real folder, not a link to one."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def close_to_others(path: Path) -> str | None:
    """Refuse or repair a folder (or file) that users other than its owner can write, before
    it is read: a classmate could rename or replace what is in it (nbgrader's exchange hands
    out mode 777 folders). Ours: made unwritable to others, and the returned note says so;
    another user's: ``Refused``. None: nothing to do."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return None  # a link is never read (``read_plain`` refuses it); its own mode means nothing
    open_bits = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if not open_bits:
        return None
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid != os.geteuid():
        raise Refused(
            f"writable by others (mode {mode:o}) and owned by another user (uid {st.st_uid}): "
            f"not read; make it yours and not writable by others (chmod go-w), then grade again"
        )
    os.chmod(path, mode & ~open_bits, follow_symlinks=False)
    return (
        f"was writable by others (mode {mode:o}): made {mode & ~open_bits:o} before it was read "
        "(what others may have changed before cannot be known)"
    )


def readable_by_others(path: Path) -> bool:
    try:
        return bool(os.stat(path).st_mode & stat.S_IROTH)
    except OSError:
        return False


def other_people(passwd: Path = Path("/etc/passwd")) -> list[str]:
    """The accounts of people on this machine other than the one grading: a uid from 1000 up
    (not ``nobody``'s) with a login shell. None on a single-user laptop, where files every user
    can read are no one else's to read."""
    try:
        rows = [line.split(":") for line in passwd.read_text(errors="replace").splitlines()]
    except OSError:
        return []
    return [
        row[0]
        for row in rows
        if len(row) >= 7
        and row[2].isdigit()
        and 1000 <= int(row[2]) < 65534
        and int(row[2]) != os.getuid()
        and not row[6].strip().endswith(("nologin", "false"))
    ]
