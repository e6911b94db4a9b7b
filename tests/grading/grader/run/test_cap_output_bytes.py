"""Are a submission's outputs capped in bytes (2 MiB an output, 16 MiB a notebook) with a note
where cut, a single huge line included, and are a lab's ordinary outputs left alone?"""

from __future__ import annotations

import nbformat

from autograder.grading.grader.run.cap_output_bytes import CapOutputBytes, MiB, size
from autograder.grading.grader.run.nbconfig import load_config
from tests.grading.helpers import REPO


def _cell(*outputs: nbformat.NotebookNode) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("print(...)")
    cell.outputs = list(outputs)
    return cell


def _stream(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_output("stream", name="stdout", text=text)


def test_one_50_mb_line_is_cut_to_2_mib_with_a_note() -> None:
    """Is a single line of 50 MB (which nbgrader's line limit lets through) cut to 2 MiB, saying so?"""
    nb = nbformat.v4.new_notebook(cells=[_cell(_stream("x" * 50_000_000 + "\n"))])
    nb, _ = CapOutputBytes().preprocess(nb, {})
    output = nb.cells[0].outputs[0]
    assert size(output) <= 2 * MiB
    assert output.text.startswith("xxxx") and "output cut here: it was 50000001 bytes" in output.text


def test_escapes_and_rich_outputs_stay_within_the_cap() -> None:
    """Do text that grows when written as JSON (newlines) and a huge HTML output stay under 2 MiB?"""
    newlines = _stream("\n" * (3 * MiB))
    rich = nbformat.v4.new_output("display_data", data={"text/html": "<b>" * MiB, "text/plain": "y" * (3 * MiB)})
    error = nbformat.v4.new_output("error", ename="E", evalue="v" * (3 * MiB), traceback=["t" * MiB] * 5)
    nb = nbformat.v4.new_notebook(cells=[_cell(newlines, rich, error)])
    nb, _ = CapOutputBytes().preprocess(nb, {})
    assert all(size(o) <= 2 * MiB for o in nb.cells[0].outputs), [size(o) for o in nb.cells[0].outputs]
    rich = nb.cells[0].outputs[1]
    assert list(rich.data) == ["text/plain"] and "cut here" in rich.data["text/plain"]


def test_a_notebook_keeps_16_mib_of_outputs_and_notes_the_rest() -> None:
    """Past 16 MiB of outputs in all, is each later output replaced by a note?"""
    nb = nbformat.v4.new_notebook(cells=[_cell(_stream("z" * (2 * MiB - 200))) for _ in range(12)])
    nb, _ = CapOutputBytes().preprocess(nb, {})
    assert sum(size(o) for c in nb.cells for o in c.outputs) <= 16 * MiB
    assert "reached the grader's limit of 16777216 bytes" in nb.cells[-1].outputs[0].text
    assert nb.cells[0].outputs[0].text == "z" * (2 * MiB - 200)


def test_ordinary_outputs_are_untouched() -> None:
    """Are a plot-sized image and a short print kept exactly as they were?"""
    image = nbformat.v4.new_output("display_data", data={"image/png": "A" * 60_000, "text/plain": "<Figure>"})
    nb = nbformat.v4.new_notebook(cells=[_cell(_stream("loss 0.25\n"), image)])
    before = nbformat.writes(nb)
    nb, _ = CapOutputBytes().preprocess(nb, {})
    assert nbformat.writes(nb) == before


def test_autograde_caps_bytes_after_limiting_lines() -> None:
    """Does nbgrader_config.py run CapOutputBytes in autograde, after LimitOutput, at 2 and 16 MiB?"""
    config = load_config(REPO, {})
    steps = [str(p).rsplit(".", 1)[-1] for p in config.Autograde.autograde_preprocessors]
    assert steps.index("LimitOutput") < steps.index("CapOutputBytes") < steps.index("SaveAutoGrades")
    assert (config.CapOutputBytes.max_output_bytes, config.CapOutputBytes.max_notebook_bytes) == (2 * MiB, 16 * MiB)
