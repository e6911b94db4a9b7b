"""What a student's feedback may show: no hidden tests, none of the grader's file paths.

nbgrader's ``generate_feedback`` renders the autograded notebook, whose test cells hold the
hidden tests again (autograde restores them from the source), and whose tracebacks quote
them and name the grader's files (nbgrader #917). ``ClearHiddenTestsAndPaths`` runs in
``GenerateFeedback.preprocessors`` (nbgrader_config.py) before the HTML is written:

- the ``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS`` block leaves every cell's source,
  as ``ClearHiddenTests`` does at release;
- a traceback frame whose current line is in a hidden block is dropped; in the other frames
  of a cell, the quoted lines of its hidden block are dropped;
- a frame in a file (``File /.../site-packages/...``, the course's checks) is dropped: the
  student's own frames are ``Cell In[N]``;
- the grader's folders (course root, Python prefix, site-packages, temporary and home
  folders) are replaced by ``<grader>`` in whatever text remains.

The check's message (the traceback's last entry, ``CheckFailed: ...``) stays.

The rest of what feedback may show is decided beside this module: the kernel never runs a
hidden test (``run.hide_hidden_tests``); a test cell shows the independent check's verdict, not
what the kernel printed (``verdict.into_notebook``); outputs are capped in bytes
(``run.cap_output_bytes``); and every page made from a submission is cleaned of what a browser
would run (``sanitize_notebook``).
"""

from __future__ import annotations

import html
import os
import re
import site
import sys
import sysconfig
import tempfile
from pathlib import Path

from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool, List, Unicode

from autograder.grading.grader.lab_cells import clear_hidden, hidden_lines

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CELL_FRAME = re.compile(r"^(?:Cell|Input)\s+In\s*\[(\d+)\]")
_FILE_FRAME = re.compile(r"^File\s")
_GUTTER = re.compile(r"^\s*(-*>)?\s*(\d+)(?:\s|$)")  # "----> 7 code" or "      3 code"
DROPPED = "\x1b[2m(a frame of the hidden tests or of the grader's files is not shown)\x1b[0m"


def _plain(text: str) -> str:
    return _ANSI.sub("", text)


def _frame(entry: str, hidden: set[int] | None, hidden_text: set[str]) -> str | None:
    """A cell frame with its hidden lines taken out (None: drop it all)."""
    lines = entry.split("\n")
    kept = lines[:1]
    for line in lines[1:]:
        gutter = _GUTTER.match(_plain(line))
        if gutter is None:
            kept.append(line)
            continue
        number, current = int(gutter.group(2)), gutter.group(1) is not None
        code = _plain(line)[gutter.end() :].strip()
        is_hidden = number in hidden if hidden is not None else code in hidden_text
        if is_hidden and current:
            return None
        if not is_hidden:
            kept.append(line)
    return "\n".join(kept)


class ClearHiddenTestsAndPaths(Preprocessor):
    """Take the hidden tests and the grader's file paths out of a notebook before it
    becomes a student's feedback (see the module's docstring)."""

    enabled = Bool(True, help="nbconvert runs only an enabled preprocessor").tag(config=True)
    begin_hidden = Unicode("BEGIN HIDDEN TESTS", help="the line that opens a hidden-test block").tag(config=True)
    end_hidden = Unicode("END HIDDEN TESTS", help="the line that closes a hidden-test block").tag(config=True)
    grader_paths = List(
        Unicode(),
        help="folders whose names the feedback must not show, besides Python's "
        "own, the temporary and the home folders (nbgrader_config.py adds "
        "the course root)",
    ).tag(config=True)
    replacement = Unicode("<grader>", help="what a grader's folder is replaced by").tag(config=True)

    def _paths(self) -> re.Pattern[str] | None:
        paths = {
            *self.grader_paths,
            sys.prefix,
            sys.base_prefix,
            sys.exec_prefix,
            tempfile.gettempdir(),
            os.path.expanduser("~"),
            os.getcwd(),
            str(Path(__file__).resolve().parents[3]),
            *site.getsitepackages(),
            sysconfig.get_paths()["purelib"],
            sysconfig.get_paths()["stdlib"],
        }
        forms = {str(Path(p).resolve()) for p in paths if p} | {p.rstrip("/") for p in paths if p}
        longest_first = sorted((f for f in forms if f.count("/") >= 1 and len(f) > 1), key=len, reverse=True)
        if not longest_first:
            return None
        return re.compile(r"(?<![\w.-])(?:" + "|".join(map(re.escape, longest_first)) + r")(?:/[^\s'\"():,;\x1b<>&]*)?")

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        self._pattern = self._paths()
        by_count: dict[int, set[int]] = {}
        self._hidden_text: set[str] = set()
        for cell in nb.cells:
            if cell.cell_type != "code" or self.begin_hidden not in cell.source:
                continue
            lines = cell.source.split("\n")
            hidden = hidden_lines(cell.source, self.begin_hidden, self.end_hidden)
            if cell.get("execution_count"):
                by_count[cell.execution_count] = hidden
            visible = {lines[n - 1].strip() for n in range(1, len(lines) + 1) if n not in hidden}
            self._hidden_text |= {lines[n - 1].strip() for n in hidden} - visible - {""}
        self._by_count = by_count
        for cell in nb.cells:
            if self.begin_hidden in cell.source:
                cell.source = clear_hidden(cell.source, self.begin_hidden, self.end_hidden)
            for output in cell.get("outputs", []):
                self._output(output)
        return nb, resources

    def _redact(self, text: str, markup: bool = False) -> str:
        """``text`` with the grader's folders replaced (escaped where ``text`` is HTML)."""
        replacement = html.escape(self.replacement) if markup else self.replacement
        return self._pattern.sub(lambda _: replacement, text) if self._pattern else text

    def _output(self, output: NotebookNode) -> None:
        if "text" in output:
            output.text = self._redact(output.text)
        for mime in ("text/plain", "text/markdown", "text/html"):
            if isinstance(output.get("data", {}).get(mime), str):
                output.data[mime] = self._redact(output.data[mime], markup=mime != "text/plain")
        if output.get("output_type") != "error":
            return
        output.evalue = self._redact(output.get("evalue", ""))
        kept: list[str] = []
        for entry in output.get("traceback", []):
            plain = _plain(entry).lstrip()
            cell = _CELL_FRAME.match(plain)
            if cell:
                entry = _frame(entry, self._by_count.get(int(cell.group(1))), self._hidden_text)
            elif _FILE_FRAME.match(plain):
                entry = None
            if entry is None:
                if not kept or kept[-1] != DROPPED:
                    kept.append(DROPPED)
            else:
                kept.append(self._redact(entry))
        output.traceback = kept
