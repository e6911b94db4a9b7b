"""Does intake read plain files only, never what a link, a pipe or a device leads to, and
close a folder others can write before reading it?"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autograder.grading.grader.intake import untrusted as files
from autograder.grading.grader.intake.untrusted import Refused, close_to_others, read_plain


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "id_rsa"
    path.parent.mkdir()
    path.write_text("FAKE-KEY-0451")
    return path


def test_a_plain_file_is_read(tmp_path: Path) -> None:
    """Is a plain file's content returned as it is?"""
    (tmp_path / "a.ipynb").write_bytes(b"{}")
    assert read_plain(tmp_path / "a.ipynb") == b"{}"


def test_links_pipes_and_devices_are_refused_unopened(tmp_path: Path, secret: Path) -> None:
    """Are a symbolic link, a hard link, a named pipe and a device each refused with its name
    for it (a pipe without waiting for a writer)?"""
    (tmp_path / "soft").symlink_to(secret)
    os.link(secret, tmp_path / "hard")
    os.mkfifo(tmp_path / "pipe")
    expected = {"soft": "a symbolic link", "hard": "a hard link", "pipe": "a named pipe (FIFO)"}
    for name, reason in expected.items():
        with pytest.raises(Refused, match=reason.replace("(", r"\(").replace(")", r"\)")):
            read_plain(tmp_path / name)
    with pytest.raises(Refused, match="a device file"):
        read_plain(Path("/dev/null"))


def test_a_file_swapped_for_a_link_after_the_look_is_refused(tmp_path: Path, secret: Path, monkeypatch) -> None:
    """Is a file replaced by a link between the look (lstat) and the open refused, not followed?"""
    path = tmp_path / "a.ipynb"
    path.write_text("{}")
    real_lstat = os.lstat

    def lstat_then_swap(target, *args, **kwargs):
        st = real_lstat(target, *args, **kwargs)
        if Path(target) == path:
            path.unlink()
            path.symlink_to(secret)
        return st

    monkeypatch.setattr(files.os, "lstat", lstat_then_swap)
    with pytest.raises(Refused):
        read_plain(path)


def test_a_file_over_the_limit_is_refused(tmp_path: Path) -> None:
    """Is a file larger than the limit refused rather than read?"""
    (tmp_path / "big").write_bytes(b"x" * 3000)
    with pytest.raises(Refused, match="larger than"):
        read_plain(tmp_path / "big", limit=2000)


def test_a_folder_others_can_write_is_closed_before_it_is_read(tmp_path: Path) -> None:
    """Is our own folder of mode 777 made 755, with a note saying so, and one of 755 left alone?"""
    folder = tmp_path / "ada"
    folder.mkdir()
    folder.chmod(0o777)
    note = close_to_others(folder)
    assert note is not None and "777" in note and "755" in note
    assert folder.stat().st_mode & 0o777 == 0o755
    assert close_to_others(folder) is None


def test_another_users_open_folder_is_refused(tmp_path: Path, monkeypatch) -> None:
    """Is a folder that others can write and that belongs to another user refused, not changed?"""
    folder = tmp_path / "ada"
    folder.mkdir()
    folder.chmod(0o777)
    monkeypatch.setattr(files.os, "geteuid", lambda: os.lstat(folder).st_uid + 1)
    with pytest.raises(Refused, match="owned by another user"):
        close_to_others(folder)
    assert folder.stat().st_mode & 0o777 == 0o777
