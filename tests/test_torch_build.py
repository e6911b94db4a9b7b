"""Which torch `make venv` installs (tools/torch_build.py): the CPU build where no NVIDIA GPU is
found, the CUDA build where one is or where asked, torch alone, in a step of its own."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("torch_build", REPO / "tools" / "torch_build.py")
torch_build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(torch_build)


def test_the_gpu_is_found_by_nvidia_smi_or_the_driver():
    """Is an NVIDIA GPU found by nvidia-smi on PATH or by /proc/driver/nvidia, and none without both?"""
    assert torch_build.nvidia_found(lambda _: "/usr/bin/nvidia-smi", lambda _: False)
    assert torch_build.nvidia_found(lambda _: None, lambda path: path == "/proc/driver/nvidia")
    assert torch_build.nvidia_found(lambda _: None, lambda _: False) is None


@pytest.mark.parametrize(
    ("asked", "found", "build"),
    [
        (None, None, "cpu"),
        ("", None, "cpu"),
        ("auto", None, "cpu"),
        (None, "nvidia-smi is on PATH", "cuda"),
        ("cpu", "nvidia-smi is on PATH", "cpu"),
        ("cuda", None, "cuda"),
        ("CUDA", None, "cuda"),
    ],
)
def test_the_build_is_the_one_asked_for_else_the_one_the_machine_runs(asked, found, build):
    """TORCH=cpu|cuda wins; otherwise CUDA where a GPU was found, CPU where none was; the reason is said."""
    chosen, why = torch_build.choose(asked, found)
    assert chosen == build and why


def test_another_word_is_refused():
    with pytest.raises(SystemExit, match="cpu, cuda or auto"):
        torch_build.choose("rocm", None)


def test_the_cpu_build_comes_from_a_wheel_at_hand_else_from_pytorchs_cpu_index():
    """On Linux, is the CPU build taken first from pip's find-links without any index, then from
    PyTorch's CPU index for torch alone; the CUDA build, and any build elsewhere, from PyPI?"""
    version = torch_build.pinned()
    cpu = torch_build.commands("cpu", version, "linux")
    assert cpu[0] == ["--no-index", "--no-deps", f"torch=={version}+cpu"]
    assert cpu[1] == [f"torch=={version}", "--index-url", "https://download.pytorch.org/whl/cpu"]
    assert torch_build.commands("cuda", version, "linux") == [[f"torch=={version}"]]
    assert torch_build.commands("cpu", version, "darwin") == [[f"torch=={version}"]]


def test_the_pin_is_requirements_txts_and_the_makefile_installs_torch_first():
    """Is the version the one requirements.txt pins, and does `make venv` run the script before the other pins?"""
    pin = re.search(r"^torch==(\S+)", (REPO / "requirements.txt").read_text(), re.M).group(1)
    assert torch_build.pinned() == pin
    recipe = re.search(r"^\$\(STAMP\):.*\n((?:\t.+\n)+)", (REPO / "Makefile").read_text(), re.M).group(1)
    assert recipe.index("tools/torch_build.py") < recipe.index("-r requirements.txt")


@pytest.mark.parametrize(
    ("torch", "said"), [("cpu", "the CPU build, as TORCH=cpu"), ("cuda", "the CUDA build, as TORCH=cuda")]
)
def test_the_script_says_what_it_picked(torch, said):
    """Does the script print which build it picked, and why, before installing (here: --dry-run)?"""
    run = subprocess.run(
        [sys.executable, str(REPO / "tools" / "torch_build.py"), "--dry-run"],
        env={"TORCH": torch, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert said in run.stdout.splitlines()[0]
