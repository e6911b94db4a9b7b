"""A one-node Slurm cluster that a test starts and stops on its own.

Everything lives in one folder the test owns: a munge key, socket and logs, a slurm.conf, the
controller's state and the node's spool. The daemons talk over loopback on free ports, and
clients find the cluster through the SLURM_CONF environment variable (``Cluster.env``), so
nothing outside the folder is read or written and several clusters can run side by side.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("slurmctld", "slurmd", "sbatch", "munged")
ACTIVE = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING"}
NODE = "node1"
PARTITION = "main"
START_TIMEOUT = 30.0


def _which(name: str) -> str | None:
    """Where ``name`` is installed: on PATH, or in the sbin folders a user's PATH often lacks."""
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/local/sbin")


def unavailable() -> str | None:
    """Why a cluster cannot be started here, in one line naming what to install; None when it can."""
    missing = [name for name in DAEMONS if _which(name) is None]
    if missing:
        return (
            f"Slurm is not installed ({', '.join(missing)} not found; apt-get install slurm-wlm munge; .ci/run does it)"
        )
    return None


def _user() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"--- {path.name}: (none)"
    return f"--- {path.name}:\n" + "\n".join(text.splitlines()[-lines:])


def _records(text: str) -> list[dict[str, str]]:
    """The records of ``scontrol show job -o``: one line each, of space-separated Key=Value pairs."""
    out = []
    for line in text.splitlines():
        pairs = re.findall(r"(\S+?)=(\S*)", line)
        if pairs:
            out.append(dict(pairs))
    return out


def _task_ids(spec: str) -> list[str]:
    """The task ids of an ArrayTaskId such as ``1-3``, ``1,4-5`` or ``2-8:2`` (a ``%N`` limit is dropped)."""
    ids = []
    for part in spec.split("%")[0].split(","):
        if "-" not in part:
            ids.append(part)
            continue
        span, _, step = part.partition(":")
        first, last = (int(n) for n in span.split("-"))
        ids.extend(str(n) for n in range(first, last + 1, int(step or 1)))
    return ids


@dataclass
class Cluster:
    """A running one-node cluster: the folder it lives in, and how to submit and follow jobs on it."""

    folder: Path
    conf: Path
    cpus: int
    env: dict[str, str] = field(default_factory=dict)

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a command (a Slurm client, usually) with the cluster's environment; raise with its stderr
        when ``check`` and it fails."""
        proc = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=60)
        if check and proc.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
        return proc

    def sbatch(self, *args: str) -> str:
        """Submit a batch job (``sbatch --parsable ARGS``) and return its job id."""
        return self.run("sbatch", "--parsable", *args).stdout.strip().split(";")[0]

    def cancel(self, job_id: str, signal: str | None = None) -> None:
        """Cancel a job or one array task (``JOBID_TASK``); with ``signal`` (``TERM``, ``USR1``...), only send
        that signal, to the batch script too (``--full``)."""
        args = ["--full", f"--signal={signal}"] if signal else []
        self.run("scancel", *args, job_id)

    def records(self, job_id: str) -> list[dict[str, str]]:
        """The records ``scontrol show job -o`` gives for a job: one per array task once split out."""
        proc = self.run("scontrol", "show", "job", "-o", job_id, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"scontrol show job {job_id} failed: {proc.stderr.strip()}")
        return _records(proc.stdout)

    def states(self, job_id: str) -> dict[str, str]:
        """The state of each task of an array job (``"12_1": "RUNNING"``), or of a plain job by its id.

        Array tasks not yet split out (one pending record ``ArrayTaskId=2-3``) each get that record's state."""
        out: dict[str, str] = {}
        for record in self.records(job_id):
            state = record.get("JobState", "UNKNOWN")
            array = record.get("ArrayJobId")
            if array and "ArrayTaskId" in record:
                for task in _task_ids(record["ArrayTaskId"]):
                    out[f"{array}_{task}"] = state
            else:
                out[record["JobId"]] = state
        return out

    def wait(self, job_id: str, timeout: float) -> dict[str, str]:
        """Poll until no task of the job is pending or running, and return the final states."""
        deadline = time.monotonic() + timeout
        while True:
            states = self.states(job_id)
            if states and not ACTIVE.intersection(states.values()):
                return states
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still active after {timeout} s: {states}")
            time.sleep(0.2)

    def reason(self, job_id: str) -> str:
        """Why a job is pending (its Reason field), e.g. ``Dependency`` or ``DependencyNeverSatisfied``."""
        return self.records(job_id)[0].get("Reason", "")


def _slurm_conf(folder: Path, user: str, cpus: int, munge_socket: Path) -> str:
    host = socket.gethostname().split(".")[0]
    auth = f"socket={munge_socket}"
    settings = {
        "ClusterName": "selftest",
        "SlurmctldHost": f"{host}(127.0.0.1)",
        "SlurmctldPort": _free_port(),
        "SlurmdPort": _free_port(),
        "SlurmUser": user,
        "SlurmdUser": user,
        "AuthType": "auth/munge",
        "AuthInfo": auth,
        "CredType": "cred/munge",
        "StateSaveLocation": folder / "state",
        "SlurmdSpoolDir": folder / "spool",
        "SlurmctldPidFile": folder / "slurmctld.pid",
        "SlurmdPidFile": folder / "slurmd.pid",
        "SlurmctldLogFile": folder / "slurmctld.log",
        "SlurmdLogFile": folder / "slurmd.log",
        "SlurmctldDebug": "info",
        "SlurmdDebug": "info",
        "ProctrackType": "proctrack/linuxproc",
        "TaskPlugin": "task/none",
        "JobAcctGatherType": "jobacct_gather/none",
        "AccountingStorageType": "accounting_storage/none",
        "JobCompType": "jobcomp/none",
        "SwitchType": "switch/none",
        "MpiDefault": "none",
        "SelectType": "select/cons_tres",
        "SelectTypeParameters": "CR_CPU",
        "SchedulerType": "sched/backfill",
        "SchedulerParameters": "batch_sched_delay=0",
        "MinJobAge": 3600,
        "ReturnToService": 2,
        "MailProg": "/bin/true",
        "KillWait": 2,
        "InactiveLimit": 0,
    }
    lines = [f"{key}={value}" for key, value in settings.items()]
    lines.append(f"NodeName={NODE} NodeHostname={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN")
    lines.append(f"PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def _environ_has(pid: str, entry: bytes) -> bool:
    try:
        return entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def _stragglers(conf: Path) -> list[int]:
    """Processes (daemons' children, job steps, job scripts) whose environment names this cluster's slurm.conf."""
    entry = f"SLURM_CONF={conf}".encode()
    own = os.getpid()
    return [int(p.name) for p in Path("/proc").glob("[0-9]*") if int(p.name) != own and _environ_has(p.name, entry)]


def _stop(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@contextmanager
def cluster(folder: Path, cpus: int = 2) -> Iterator[Cluster]:
    """Start munged, slurmctld and slurmd with their own configuration in ``folder``; stop them, and any
    job still running, on the way out.

    Jobs run as the current user (root or not). Each daemon's output (its log, as they run in the
    foreground) goes to ``folder/NAME.out``. Raises RuntimeError, with the tails of those, when a daemon
    exits or the node is not idle within ``START_TIMEOUT`` seconds."""
    reason = unavailable()
    if reason:
        raise RuntimeError(reason)
    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    for sub in ("state", "spool", "munge"):
        (folder / sub).mkdir(exist_ok=True)
    user = _user()
    munge = folder / "munge"
    key = munge / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    munge_socket = munge / "munge.socket"
    conf = folder / "slurm.conf"
    conf.write_text(_slurm_conf(folder, user, cpus, munge_socket))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    logs = [folder / f"{name}.out" for name in ("munged", "slurmctld", "slurmd")]
    daemons: list[subprocess.Popen[bytes]] = []

    def start(*argv: str) -> None:
        with open(folder / f"{Path(argv[0]).name}.out", "wb") as out:
            daemons.append(
                subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
            )

    the = Cluster(folder=folder, conf=conf, cpus=cpus, env=env)
    try:
        start(
            str(_which("munged")),
            "--foreground",
            "--force",
            f"--socket={munge_socket}",
            f"--key-file={key}",
            f"--pid-file={munge / 'munged.pid'}",
            f"--log-file={munge / 'munged.log'}",
            f"--seed-file={munge / 'munged.seed'}",
        )
        _wait_for(lambda: munge_socket.exists(), "munged's socket", daemons, logs)
        start(str(_which("slurmctld")), "-D", "-i", "-f", str(conf))
        start(str(_which("slurmd")), "-D", "-N", NODE, "-f", str(conf))
        _wait_for(lambda: _node_state(the) == "IDLE", f"node {NODE} idle", daemons, logs)
        yield the
    finally:
        _shut_down(the, daemons)


def _node_state(the: Cluster) -> str:
    proc = the.run("scontrol", "show", "node", "-o", NODE, check=False)
    match = re.search(r"\bState=(\S+)", proc.stdout)
    return match.group(1) if match else ""


def _wait_for(ready: Callable[[], bool], what: str, daemons: list[subprocess.Popen[bytes]], logs: list[Path]) -> None:
    """Wait until ``ready()``; raise with the tails of ``logs`` when a daemon exits or time runs out."""
    deadline = time.monotonic() + START_TIMEOUT
    while not ready():
        dead = [p.args for p in daemons if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            why = f"{dead} exited" if dead else f"not within {START_TIMEOUT:.0f} s"
            raise RuntimeError(
                f"Slurm cluster did not come up (waiting for {what}: {why})\n" + "\n".join(_tail(f) for f in logs)
            )
        time.sleep(0.2)


def _shut_down(the: Cluster, daemons: list[subprocess.Popen[bytes]]) -> None:
    """Cancel every job and let it end, stop the daemons in reverse order, and kill whatever job process is left."""
    if len(daemons) == 3 and all(p.poll() is None for p in daemons):
        the.run("scancel", "--full", f"--user={_user()}", check=False)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and the.run("squeue", "--noheader", check=False).stdout.strip():
            time.sleep(0.2)
    for proc in reversed(daemons):
        _stop(proc)
    _kill(_stragglers(the.conf))
