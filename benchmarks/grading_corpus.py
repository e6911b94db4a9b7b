"""Grading output on a fixed corpus, normalised and hashed: the proof that a change of the
grader's shape did not change what it writes (issue 27).

    python benchmarks/grading_corpus.py FOLDER --json OUT.json [--compare GOLDEN.json] [--jobs 2]

FOLDER (new or empty) receives the course, the class's submissions and the grader's output;
OUT.json the sha256 of every normalised input and output file. With ``--compare`` the files
whose hashes differ from GOLDEN.json are printed, with a diff of the first when GOLDEN.json's
own FOLDER is still on this machine, and the exit status is 1.

The corpus is generated afresh on each run, deterministically, from committed files: the
course's ``solutions/`` and ``notebooks/``, the variants below and the hostile class of
``tests/grading/scenarios/hostile_class.py``. Its inputs are hashed too (after the same normaliser), so a
changed corpus shows as changed inputs, not as a change of the grader. The class:

- ``solutions``: every lab fully answered from its solution;
- ``wrong-a`` and ``wrong-b``: every lab with the exercises at even (a) or odd (b) positions
  answered wrongly (one of the mistakes of ``MISTAKES``, the first that applies, else the stub
  left untouched), the others answered correctly: every exercise is wrong in one of them;
- the hostile class of the warm-up lab (one student per attack, as in test_hostile.py).

The grading is ``python -m autograder grade`` in a child process, as an instructor runs it; this
script imports nothing of ``autograder`` itself (the test helpers it builds the class with do),
so that moving the grader's modules cannot break it.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # a script: the repository's tests package importable

from tests.grading.helpers import answered  # noqa: E402
from tests.grading.scenarios import hostile_class  # noqa: E402 - the hostile suite's builders

# Wrong answers written as edits of a solution's code (between its markers), each one of the
# mistakes that the checks' tests (tests/checks/, autograder/checks/kit/variants.py) hand to a check;
# the first that applies to an exercise is made, once. Specific edits come before generic ones.
MISTAKES = [
    (".clamp_min(torch.finfo(x.dtype).tiny)", "", "a fully masked row gives NaN"),
    ("x @ W_q, x @ W_k", "x @ W_k, x @ W_q", "queries and keys swapped"),
    ("W_q @ W_k.T", "W_k @ W_q.T", "queries and keys swapped"),
    ("scale * ", "", "scores not scaled"),
    (" * S[:rank]", "", "singular values dropped"),
    (".sum().sqrt()", ".sum()", "squared error, not its root"),
    (".transpose(1, 2)", "", "heads reshaped without the transpose"),
    ("pe[:, 0::2] = torch.sin", "pe[:, 0::2] = torch.cos", "sine and cosine swapped"),
    ("pe @ pe.T", "pe.T @ pe", "the wrong product"),
    ("x + self.pe[", "x + 0 * self.pe[", "no positional encoding"),
    ("* math.sqrt(", "/ math.sqrt(", "embeddings divided by sqrt(d_model)"),
    ("/ math.sqrt(", "/ (", "scores divided by Dh instead of sqrt(Dh)"),
    ("~attn_mask", "attn_mask", "mask polarity inverted"),
    ("~mask", "mask", "mask polarity inverted"),
    ("!= pad_id", "== pad_id", "mask polarity inverted"),
    (".tril()", ".triu()", "the future may be attended"),
    (" & causal_mask", " | causal_mask", "masks joined by or"),
    ("torch.relu(", "(", "no nonlinearity"),
    ("self.norm2(x + ", "self.norm2(", "no residual connection"),
    ("self.norm3(y + ", "self.norm3(", "no residual connection"),
    ("min(", "max(", "max instead of min"),
    ("+ count", "+ 1", "pairs counted once per word"),
    ("dim=-1", "dim=-2", "the wrong axis"),
    (".mean()", ".sum()", "summed instead of averaged"),
    ("x > 0", "x < 0", "kept the negative values"),
    ("** 2", "** 1", "not squared"),
    ("torch.tanh(", "torch.sigmoid(", "the wrong nonlinearity"),
    ("- 1)", ")", "off by one"),
    ("+ 1", "+ 2", "off by one"),
]
_BEGIN, _END = "### BEGIN SOLUTION", "### END SOLUTION"
# The port the network attack aims at: fixed, so that the students' code is the same in every
# run; a listener holds it during the grading when it is free (the sandbox has no network, so
# what the attack prints does not depend on it).
PORT = 47291


def labs() -> list[str]:
    """The course's labs: the folders of solutions/ that hold their notebook."""
    return sorted(p.name for p in (REPO / "solutions").iterdir() if (p / f"{p.name}.ipynb").is_file())


def _solution_cells(lab: str) -> dict[str, str]:
    """grade_id -> the solution cell's source, markers included, in the notebook's order."""
    nb = nbformat.read(str(REPO / "solutions" / lab / f"{lab}.ipynb"), as_version=4)
    return {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in nb.cells
        if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")
    }


def wrong(source: str) -> str | None:
    """The solution cell ``source`` with the first of MISTAKES that applies to its code (the
    lines between its markers) made once, markers dropped; None when none applies."""
    lines = source.splitlines()
    inside = [False] * len(lines)
    state = False
    for i, line in enumerate(lines):
        state = (state or _BEGIN in line) and _END not in line
        inside[i] = state and _BEGIN not in line
    for old, new, _ in MISTAKES:
        hit = next((i for i, line in enumerate(lines) if inside[i] and old in line), None)
        if hit is not None:
            lines[hit] = lines[hit].replace(old, new, 1)
            return "\n".join(line for line in lines if _BEGIN not in line and _END not in line)
    return None


def wrong_variant(lab: str, parity: int) -> nbformat.NotebookNode:
    """The lab answered, with the exercises at positions of ``parity`` (0 even, 1 odd) wrong:
    a mistake of MISTAKES when one applies, else the released stub left as it is."""
    cells = _solution_cells(lab)
    chosen = [gid for i, gid in enumerate(cells) if i % 2 == parity]
    nb = answered(*[gid for gid in cells if gid not in chosen], lab=lab)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in chosen and (mistaken := wrong(cells[gid])) is not None:
            cell.source = mistaken
    return nb


def build(folder: Path, package: Path) -> tuple[Path, Path, Path, int]:
    """Write the course, HOME and the class's submissions under ``folder``; returns the course,
    HOME, inbox and the number of submissions."""
    course, home, inbox = folder / "course", folder / "home", folder / "inbox"
    course.mkdir(parents=True)
    shutil.copy2(REPO / "nbgrader_config.py", course)
    for name in ("solutions", "notebooks"):
        shutil.copytree(REPO / name, course / name)
    home.mkdir()
    (home / "secret.txt").write_text("HOME-SECRET-0451")
    count = 0
    for lab in labs():
        for student, nb in (
            ("solutions", answered(lab=lab)),
            ("wrong-a", wrong_variant(lab, 0)),
            ("wrong-b", wrong_variant(lab, 1)),
        ):
            path = inbox / student / lab / f"{lab}.ipynb"
            path.parent.mkdir(parents=True)
            nbformat.write(nb, str(path))
            count += 1
    students = hostile_class.cases(course, home, PORT, package)
    hostile_class.write_class(inbox, course, home, students)
    _fixed_cell_ids(inbox)
    return course, home, inbox, count + len(students)


def _fixed_cell_ids(inbox: Path) -> None:
    """Give the cells that the builders added (nbformat draws a random id for a new cell) an id
    made from their position, so that the corpus is the same in every run. Links and hard links
    (the intake attacks) are left alone: they are not the corpus's own files."""
    for path in sorted(inbox.rglob("*.ipynb")):
        if path.is_symlink() or path.stat().st_nlink > 1:
            continue
        nb = nbformat.read(str(path), as_version=4)
        lab = next(name for name in labs() if name in path.name)  # LAB.ipynb, or an LMS name with LAB in it
        known = {c.get("id") for c in nbformat.read(str(REPO / "notebooks" / lab / f"{lab}.ipynb"), as_version=4).cells}
        for i, cell in enumerate(nb.cells):
            if cell.get("id") not in known:
                cell["id"] = f"corpus-{i}"
        nbformat.write(nb, str(path))


# nbclient's record of when each cell ran, in an autograded notebook's cell metadata
_CELL_TIMES = re.compile(
    rb'("(?:iopub\.execute_input|iopub\.status\.busy|iopub\.status\.idle|shell\.execute_reply)": )'
    rb'"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z"'
)
# the grading's scratch folder, tempfile.mkdtemp(prefix="autograder-grade-") under /tmp
_SCRATCH = re.compile(rb"/tmp/autograder-grade-[A-Za-z0-9_]+")
# an object's address in Python's default repr, such as <torch._C.Generator at 0x7f04841f05b0>
_ADDRESS = re.compile(rb" at 0x[0-9a-f]{6,16}\b")
# the seam between two outputs of one stream, in nbconvert's HTML of the feedback
_STREAM_SEAM = re.compile(
    rb'(<div class="output_subarea output_stream output_(std[a-z]+) output_text">\n<pre>'
    rb'(?:(?!</pre>).)*?)</pre>\n</div>\n</div>\n<div class="output_area">\n<div class="prompt">'
    rb'</div>\n<div class="output_subarea output_stream output_\2 output_text">\n<pre>',
    re.S,
)


def _joined_streams(data: bytes) -> bytes:
    """A notebook (JSON) with each run of consecutive outputs of one stream made one output."""
    nb = json.loads(data)
    for cell in nb.get("cells", []):
        joined: list[dict] = []
        for out in cell.get("outputs", []):
            if (
                joined
                and out.get("output_type") == "stream" == joined[-1].get("output_type")
                and out.get("name") == joined[-1].get("name")
            ):
                text = "".join(joined[-1]["text"]) + "".join(out["text"])
                joined[-1]["text"] = text.splitlines(keepends=True)
            else:
                joined.append(out)
        if "outputs" in cell:
            cell["outputs"] = joined
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False).encode()


def normalise(data: bytes, name: str, folder: Path, repo: Path) -> bytes:
    """The one normaliser of this comparison: what two gradings of the same corpus may write
    differently although the grader behaved the same. It rewrites, and nothing else:

    - the corpus folder's absolute path (given on the command line; it is in the hostile
      students' code, in what they print, and in the summary) -> ``<CORPUS>``;
    - the grader's checkout (the package's folder, in tracebacks, error messages and the
      hostile students' code) -> ``<REPO>``; the two checkouts compared sit in different folders;
    - the times at which nbclient ran each cell (``iopub.execute_input``, ``iopub.status.busy``,
      ``iopub.status.idle``, ``shell.execute_reply`` in an autograded notebook's cell metadata)
      -> ``"<TIME>"``, the keys kept;
    - the name of the grading's scratch folder (``/tmp/autograder-grade-`` and random letters
      from tempfile, the kernel's HOME and TMPDIR, which the snoop prints) -> ``<SCRATCH>``;
    - an object's address in a default repr (``<torch._C.Generator at 0x7f04841f05b0>``, the
      value of the labs' ``torch.manual_seed(0)`` line, printed as the set-up cell's output):
      where the kernel's memory lies differs in every process -> `` at 0x<ADDRESS>``;
    - the cuts in a cell's printed text: the kernel sends what a cell prints in pieces, cut
      where its flush timer happens to fall, and nbclient keeps each piece as an output of its
      own (``print("row sums:", t)`` came back once whole, once in two). Consecutive outputs of
      one stream are joined: in an autograded notebook (``name`` ending in ``.ipynb``, which is
      then written back as sorted JSON) and at the seams of nbconvert's HTML (``.html``).
    """
    for path, token in ((folder.resolve(), b"<CORPUS>"), (repo.resolve(), b"<REPO>")):
        data = data.replace(str(path).encode(), token)
    data = _CELL_TIMES.sub(rb'\1"<TIME>"', data)
    data = _SCRATCH.sub(b"<SCRATCH>", data)
    data = _ADDRESS.sub(b" at 0x<ADDRESS>", data)
    if name.endswith(".ipynb") and data.lstrip().startswith(b"{"):
        data = _joined_streams(data)
    elif name.endswith(".html"):
        while (joined := _STREAM_SEAM.sub(rb"\1", data)) != data:
            data = joined
    return data


def _describe(path: Path) -> bytes:
    """A file's content, or what stands in for it: a link's target, a pipe's kind."""
    mode = path.lstat().st_mode
    if stat.S_ISLNK(mode):
        return b"symlink -> " + os.readlink(path).encode()
    if stat.S_ISFIFO(mode):
        return b"fifo"
    return path.read_bytes()


def _hashes(root: Path, names: list[Path], folder: Path, repo: Path) -> dict[str, str]:
    out = {}
    for path in sorted(names):
        data = normalise(_describe(path), path.name, folder, repo)
        out[str(path.relative_to(root))] = hashlib.sha256(data).hexdigest()
    return out


def _tree(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_symlink() or not p.is_dir()]


def grade(course: Path, home: Path, inbox: Path, jobs: int) -> tuple[float, subprocess.CompletedProcess]:
    """``python -m autograder grade`` on the inbox, in a child process; HOME and the secret in
    the environment as test_hostile.py sets them."""
    env = dict(os.environ, HOME=str(home), AUTOGRADER_TEST_SECRET="ENV-SECRET-0451")
    hostile_class.ESCAPED.unlink(missing_ok=True)
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "--course",
            str(course),
            "grade",
            str(inbox),
            "--jobs",
            str(jobs),
            "--no-progress",
        ],
        cwd=course,
        env=env,
        capture_output=True,
    )
    return time.perf_counter() - start, done


def inputs(folder: Path) -> list[Path]:
    """What the corpus is made of: the submissions, HOME (but for ``.cache``, where the grader's
    own libraries write while it grades: matplotlib's font list, in an order of its own each run),
    and the course's own files."""
    course = folder / "course"
    home = folder / "home"
    return [
        *_tree(folder / "inbox"),
        *(p for p in _tree(home) if p.relative_to(home).parts[0] != ".cache"),
        course / "nbgrader_config.py",
        *_tree(course / "solutions"),
        *_tree(course / "notebooks"),
    ]


def outputs(folder: Path) -> list[Path]:
    """What the grading wrote that a student or the instructor reads: grades.csv, the feedback
    pages, the autograded notebooks, and the command's summary (saved as summary.txt)."""
    course = folder / "course"
    return [course / "grades.csv", folder / "summary.txt", *_tree(course / "feedback"), *_tree(course / "autograded")]


def compare(mine: dict, golden: dict, folder: Path, repo: Path) -> int:
    """Print the files whose hashes differ (and a diff of the first, if the golden run's folder
    is here); 1 if any differ."""
    bad = 0
    for kind in ("inputs", "outputs"):
        a, b = golden[kind], mine[kind]
        differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        for name in differ:
            print(f"{kind} differ: {name}" + ("" if name in a else " (new)") + ("" if name in b else " (gone)"))
        if differ and kind == "inputs":
            print("the corpus itself changed: a difference of the outputs is then no proof of a change of the grader")
        if differ and kind == "outputs" and not bad:
            _diff_first(differ[0], golden, folder, repo)
        bad += len(differ)
    print(f"{bad} file(s) differ from the golden run" if bad else "byte-identical to the golden run (normalised)")
    return 1 if bad else 0


def _diff_first(name: str, golden: dict, folder: Path, repo: Path) -> None:
    """A unified diff of one output between the golden run's normalised file and this run's."""
    other = Path(golden.get("folder", ""))
    if not (other / name).exists() or not (folder / name).exists():
        print(f"(no diff: the golden run's folder {other} is not on this machine)")
        return
    old = normalise((other / name).read_bytes(), name, other, Path(golden["repo"]))
    new = normalise((folder / name).read_bytes(), name, folder, repo)
    lines = list(
        difflib.unified_diff(
            old.decode(errors="replace").splitlines(),
            new.decode(errors="replace").splitlines(),
            f"golden/{name}",
            f"this/{name}",
            lineterm="",
            n=2,
        )
    )
    print("\n".join(line[:300] for line in lines[:200]))


def run(folder: Path, jobs: int, package: Path) -> dict:
    """Build the corpus in ``folder`` and grade it; returns the run's record (kept in the
    folder as run.json, so that its outputs can be hashed again with --rehash)."""
    repo = package.parent
    course, home, inbox, count = build(folder, package)
    print(f"corpus: {count} submissions in {folder}; grading with --jobs {jobs} ...", flush=True)
    try:
        listener: socket.socket | None = socket.create_server(("127.0.0.1", PORT))
    except OSError:  # taken: the attack's output is the same without it
        listener = None
    try:
        seconds, done = grade(course, home, inbox, jobs)
    finally:
        if listener is not None:
            listener.close()
        planted = package / "checks" / hostile_class.PLANTED
        if planted.exists():  # an attack that got out: said loudly, and removed
            print(f"WARNING: {planted} was planted by a submission; removed", file=sys.stderr)
            planted.unlink()
    (folder / "summary.txt").write_bytes(done.stdout)
    (folder / "stderr.txt").write_bytes(done.stderr)
    print(f"graded with --jobs {jobs} in {seconds:.0f} s (exit status {done.returncode})")
    import torch  # only its version, for the record

    record = dict(
        date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        torch=torch.__version__,
        python=sys.version.split()[0],
        commit=subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        command=f"python -m autograder grade INBOX --jobs {jobs} --no-progress",
        submissions=count,
        grade_seconds=round(seconds, 1),
        exit_status=done.returncode,
        folder=str(folder),
        repo=str(repo),
    )
    (folder / "run.json").write_text(json.dumps(record, indent=1) + "\n")
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "folder",
        type=Path,
        nargs="?",
        default=None,
        help="where to build and grade the corpus, new or empty (default: a temporary folder)",
    )
    parser.add_argument("--json", type=Path, default=None, help="where to write the hashes (default: nowhere)")
    parser.add_argument(
        "--compare",
        type=Path,
        default=None,
        metavar="GOLDEN.json",
        help="compare with a previous run's hashes; exit 1 if any file differs",
    )
    parser.add_argument("--jobs", type=int, default=2, help="notebooks graded at once (default: 2)")
    parser.add_argument(
        "--rehash",
        action="store_true",
        help="grade nothing: hash FOLDER's outputs again (a finished run's folder, after a change of the normaliser)",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="build the corpus and hash its inputs, grade nothing (for the tests, seconds)",
    )
    args = parser.parse_args()
    folder = (args.folder or Path(tempfile.mkdtemp(prefix="grading-corpus-"))).resolve()
    if args.rehash:
        record = json.loads((folder / "run.json").read_text())
    else:
        if folder.exists() and any(folder.iterdir()):
            parser.error(f"{folder} is not empty")
        package = Path(
            subprocess.run(
                [sys.executable, "-c", "import autograder; print(autograder.__file__)"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
        ).parent
        if args.smoke:
            *_, count = build(folder, package)
            print(f"corpus: {count} submissions, {len(inputs(folder))} input files in {folder}")
            if args.folder is None:
                shutil.rmtree(folder)
            return 0
        record = run(folder, args.jobs, package)
    repo = Path(record["repo"])
    record["inputs"] = _hashes(folder, inputs(folder), folder, repo)
    record["outputs"] = _hashes(folder, outputs(folder), folder, repo)
    print(f"{len(record['inputs'])} inputs and {len(record['outputs'])} outputs hashed")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        print(f"hashes written to {args.json}")
    if args.compare is not None:
        return compare(record, json.loads(args.compare.read_text()), folder, repo)
    return 0


if __name__ == "__main__":
    sys.exit(main())
