"""What a sandbox may use, agreed by the grader that asks for it (``grader.run.bwrap.wrap``) and
the launcher that enforces it (``sandboxed.launcher``): the limits, the output cap, and how
to fix a machine where bubblewrap cannot start."""

from __future__ import annotations

from dataclasses import dataclass

MEMORY_MB = 4096  # address space of each grading process, MiB: the one default of --memory-mb
JOB_SECONDS = 600  # wall clock for one student's lab, seconds: the one default of --job-timeout
OUTPUT_CAP = 64 * 1024  # bytes of the sandbox's stdout and stderr passed on (enough for a traceback at start)

FIXES = """\
Fixes:
- Ubuntu 23.10+ and Debian 13 restrict unprivileged user namespaces with AppArmor ("setting
  up uid map: Permission denied", "loopback: Failed RTM_NEWADDR"). Either load AppArmor's
  bwrap-userns-restrict profile (shipped and loaded by the apparmor package from Ubuntu 25.04;
  on 24.04 it comes with apparmor-profiles):
      sudo apt-get install apparmor-profiles
      sudo ln -s /usr/share/apparmor/extra-profiles/bwrap-userns-restrict /etc/apparmor.d/
      sudo apparmor_parser -r /etc/apparmor.d/bwrap-userns-restrict
  or allow them for everyone: sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0
- Inside a container (Docker, Podman) namespaces are often refused: grade on the host, or run
  the container with user namespaces allowed (--security-opt seccomp=unconfined
  --security-opt apparmor=unconfined).
- bubblewrap missing: sudo apt-get install bubblewrap (Fedora: dnf install bubblewrap).
- For a class whose code you trust, `python -m autograder grade --no-sandbox` grades without
  it (the summary says so on every line)."""


@dataclass
class Limits:
    """What one sandboxed command may use."""

    memory_mb: int = MEMORY_MB  # address space of each process (RLIMIT_AS)
    cpu_seconds: int = 900  # CPU time of each process (RLIMIT_CPU)
    processes: int = 64  # processes and threads of the sandbox together (RLIMIT_NPROC)
    file_mb: int = 256  # largest file it may write (RLIMIT_FSIZE)
    scratch_mb: int = 512  # its scratch folder in all, and its rw folders in all
