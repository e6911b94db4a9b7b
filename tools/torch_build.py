"""Install torch alone, before the other pins (`make venv`): the CPU build where no NVIDIA GPU is
found, the CUDA build where one is, and say which it picked and why.

    python tools/torch_build.py            # pick: CUDA if an NVIDIA GPU is found, else CPU
    TORCH=cpu python tools/torch_build.py  # or TORCH=cuda: the build asked for, whatever is found
    python tools/torch_build.py --dry-run  # say what it would install, install nothing

On Linux, PyPI's wheel of torch is the CUDA build (several gigabytes of CUDA libraries); the CPU
build is on PyTorch's own index, which pip can only be pointed at for every package at once, so
torch is installed in a step of its own. A CPU wheel of the pinned release already at hand (pip's
find-links, an offline machine's wheel folder) is installed from there without any index (its
dependencies come with requirements.txt, whose `torch==` pin it satisfies). On
macOS and Windows PyPI's torch is the one to take. Only the standard library: it runs in the
fresh .venv, before anything is installed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
BUILDS = ("cpu", "cuda")


def pinned(requirements: Path = REPO / "requirements.txt") -> str:
    """The torch release requirements.txt pins (``2.13.0``)."""
    found = re.search(r"^torch==([^\s#]+)", requirements.read_text(), re.MULTILINE)
    if found is None:
        raise SystemExit(f"{requirements}: no torch==VERSION line")
    return found.group(1)


def nvidia_found(which=shutil.which, exists=os.path.exists) -> str | None:
    """What shows an NVIDIA GPU here (``nvidia-smi`` on PATH, the driver's /proc/driver/nvidia), or None."""
    if which("nvidia-smi"):
        return "nvidia-smi is on PATH"
    if exists("/proc/driver/nvidia"):
        return "/proc/driver/nvidia exists"
    return None


def choose(asked: str | None, found: str | None) -> tuple[str, str]:
    """The build to install, ``cpu`` or ``cuda``, and why: ``asked`` (TORCH=cpu|cuda) wins; empty
    or ``auto``: CUDA where an NVIDIA GPU was ``found``, else CPU."""
    asked = (asked or "auto").strip().lower()
    if asked in BUILDS:
        return asked, f"TORCH={asked} asked for it"
    if asked != "auto":
        raise SystemExit(f"TORCH={asked}: say cpu, cuda or auto")
    if found:
        return "cuda", f"an NVIDIA GPU was found ({found}); TORCH=cpu make venv for the CPU build"
    return "cpu", "no NVIDIA GPU was found (no nvidia-smi, no /proc/driver/nvidia); TORCH=cuda make venv for CUDA"


def commands(build: str, version: str, platform: str = sys.platform) -> list[list[str]]:
    """The pip commands to try in turn (the first that succeeds is enough): the arguments after
    ``python -m pip install``."""
    if build == "cuda" or platform != "linux":
        return [[f"torch=={version}"]]  # PyPI's wheel: CUDA on Linux, the only build elsewhere
    local = version if "+" in version else f"{version}+cpu"
    # A CPU wheel at hand (find-links): no index is asked; its dependencies come with the other pins.
    return [["--no-index", "--no-deps", f"torch=={local}"], [f"torch=={version}", "--index-url", CPU_INDEX]]


def install(build: str, version: str, dry_run: bool = False) -> int:
    """Run the commands of ``build`` until one succeeds; the exit status of the last one tried."""
    tries = commands(build, version)
    if dry_run:
        print(
            "\n".join(
                f"  {'then, if it fails, ' if i else ''}pip install {' '.join(args)}" for i, args in enumerate(tries)
            )
        )
        return 0
    for i, args in enumerate(tries):
        line = [sys.executable, "-m", "pip", "install", *args]
        print("  " + " ".join(line[2:]), flush=True)
        last = i == len(tries) - 1
        done = subprocess.run(
            line, stderr=None if last else subprocess.DEVNULL, stdout=None if last else subprocess.DEVNULL
        )
        if done.returncode == 0:
            return 0
    return done.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="say what would be installed, install nothing")
    args = parser.parse_args(argv)
    version = pinned()
    build, why = choose(os.environ.get("TORCH"), nvidia_found())
    print(f"torch {version}: the {build.upper()} build, as {why}", flush=True)
    return install(build, version, args.dry_run)


if __name__ == "__main__":
    sys.exit(main())
