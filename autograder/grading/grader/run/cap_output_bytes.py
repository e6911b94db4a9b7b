"""Outputs capped in bytes: 2 MiB per output, 16 MiB per notebook, a note where cut.

nbgrader's ``LimitOutput`` counts lines, so one 50 MB line passes it whole, into the
autograded notebook, the gradebook's view and the feedback page. ``CapOutputBytes`` runs
after it in ``Autograde.autograde_preprocessors`` (nbgrader_config.py): an output's text is
cut to its share (UTF-8 bytes), a rich output too large is replaced by a note (its plain
text kept, cut, where it has one), and once a notebook's outputs reach their total, the
later outputs are replaced by one note each. A lab's own plots (PNG of ~50 KB) and printed
tables are far below either cap.
"""

from __future__ import annotations

import json

import nbformat
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool, Integer

MiB = 2**20
CUT = "\n... (output cut here: it was {size} bytes, over the grader's limit of {limit} bytes) ...\n"
OVER = "(an output of {size} bytes is not kept: this notebook's outputs reached the grader's limit of {limit} bytes)"


def size(output: NotebookNode) -> int:
    """The bytes an output takes in the notebook (its JSON, UTF-8)."""
    return len(json.dumps(output, ensure_ascii=False).encode())


def cut(text: str, limit: int, stated: int | None = None) -> str:
    """``text`` cut to at most about ``limit`` UTF-8 bytes, with a note (saying ``stated``,
    default ``limit``) where cut."""
    raw = text.encode()
    if len(raw) <= limit:
        return text
    note = CUT.format(size=len(raw), limit=stated or limit)
    return raw[: max(0, limit - len(note.encode()))].decode(errors="ignore") + note


def _text(value: object) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def cap(output: NotebookNode, limit: int) -> NotebookNode:
    """One output within ``limit`` bytes."""
    if size(output) <= limit:
        return output
    kind = output.get("output_type")
    if kind == "stream":
        text, share = _text(output.get("text", "")), limit
        while True:  # JSON escapes (newlines, control characters) can make the cut text larger
            output.text = cut(text, share, limit)
            if size(output) <= limit or share < 1024:
                break
            share = share * limit // size(output) - 64
    elif kind == "error":
        output.evalue = cut(_text(output.get("evalue", "")), limit // 4)
        lines, kept, used = output.get("traceback", []), [], 0
        for line in lines:
            line = cut(_text(line), limit // 4)
            used += len(line.encode())
            if used > limit // 2:
                kept.append(CUT.format(size=sum(len(_text(x).encode()) for x in lines), limit=limit // 2))
                break
            kept.append(line)
        output.traceback = kept
    else:
        plain = _text(output.get("data", {}).get("text/plain", ""))
        output.data = NotebookNode({"text/plain": cut(plain, limit // 2) + CUT.format(size=size(output), limit=limit)})
        output.metadata = NotebookNode()
    return output


class CapOutputBytes(Preprocessor):
    """Cut every output to ``max_output_bytes`` and a notebook's outputs to
    ``max_notebook_bytes`` in all (see the module's docstring)."""

    enabled = Bool(True, help="nbconvert runs only an enabled preprocessor").tag(config=True)
    max_output_bytes = Integer(2 * MiB, help="bytes one output may take (its JSON)").tag(config=True)
    max_notebook_bytes = Integer(16 * MiB, help="bytes a notebook's outputs may take in all").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        used = 0
        for cell in nb.cells:
            outputs = []
            for output in cell.get("outputs", []):
                output = cap(output, self.max_output_bytes)
                bytes_ = size(output)
                if used + bytes_ > self.max_notebook_bytes:
                    output = nbformat.v4.new_output(
                        "stream", name="stderr", text=OVER.format(size=bytes_, limit=self.max_notebook_bytes)
                    )
                    bytes_ = size(output)
                used += bytes_
                outputs.append(output)
            if cell.cell_type == "code":
                cell.outputs = outputs
        return nb, resources
