"""Does unpacking a zip stream each member under its caps, so that a bomb, a lying header or a
damaged member costs that member alone?"""

from __future__ import annotations

import zipfile
from pathlib import Path

from autograder.grading.grader.intake import zipread


def _archive(path: Path, members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", method) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _extract(archive: Path, name: str, dest: Path, budget: zipread.Budget | None = None) -> str | None:
    with zipfile.ZipFile(archive) as zf:
        return zipread.extract(zf, zf.getinfo(name), dest, budget or zipread.Budget())


def test_a_member_is_unpacked_whole(tmp_path: Path) -> None:
    """Is a plain member written out byte for byte?"""
    archive = _archive(tmp_path / "a.zip", {"a.ipynb": b"{}" * 1000})
    assert _extract(archive, "a.ipynb", tmp_path / "out") is None
    assert (tmp_path / "out").read_bytes() == b"{}" * 1000


def test_a_bomb_is_stopped_at_the_ratio(tmp_path: Path) -> None:
    """Is a member that expands more than 100:1 (past the 1 MiB floor) refused, with little written?"""
    archive = _archive(tmp_path / "a.zip", {"bomb.ipynb": b"0" * (20 * 2**20)})
    assert "expands more than 100:1" in _extract(archive, "bomb.ipynb", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_member_and_archive_caps_hold(tmp_path: Path, monkeypatch) -> None:
    """Is a member past the per-member cap refused, and are members refused once the archive's
    budget is spent?"""
    monkeypatch.setattr(zipread, "MEMBER_BYTES", 1000)
    archive = _archive(tmp_path / "a.zip", {"big": b"x" * 1001, "a": b"y" * 900, "b": b"z" * 900}, zipfile.ZIP_STORED)
    assert "more than" in _extract(archive, "big", tmp_path / "out")
    budget = zipread.Budget(1500)
    assert _extract(archive, "a", tmp_path / "a", budget) is None
    assert "archive's cap" in _extract(archive, "b", tmp_path / "b", budget)


def test_a_bad_crc_is_reported(tmp_path: Path) -> None:
    """Is a member whose bytes do not match its CRC refused with the reason, and nothing kept?"""
    archive = _archive(tmp_path / "a.zip", {"a.ipynb": b"GOOD-BYTES" * 10}, zipfile.ZIP_STORED)
    archive.write_bytes(archive.read_bytes().replace(b"GOOD-BYTES", b"EVIL-BYTES", 1))
    reason = _extract(archive, "a.ipynb", tmp_path / "out")
    assert reason is not None and "CRC" in reason and not (tmp_path / "out").exists()


def test_utf8_names_without_the_flag_are_read_as_utf8(tmp_path: Path) -> None:
    """Is a member name written in UTF-8 by an archiver that did not set the flag read as UTF-8?"""
    info = zipfile.ZipInfo("김민수_1_2_00-warmup.ipynb".encode().decode("cp437"))
    assert zipread.member_name(info) == "김민수_1_2_00-warmup.ipynb"
    assert zipread.member_name(zipfile.ZipInfo("ada.ipynb")) == "ada.ipynb"
