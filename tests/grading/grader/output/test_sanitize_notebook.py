"""Does every page rendered from a submission (feedback, Formgrader's view) lose what a browser
would run: scripts, event handlers, ``javascript:`` links, and the outputs that carry code,
while keeping the text, math, tables and plots a lab shows?"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbconvert import HTMLExporter
from nbgrader.server_extensions.formgrader import handlers

from autograder.grading.grader.output.sanitize_notebook import SanitizeNotebook, clean_markdown
from autograder.grading.grader.run.nbconfig import load_config
from tests.grading.helpers import REPO

MARKDOWN = """## Answer <img src=x onerror="window.ran = 'markdown-onerror'">

Math stays: $x_i < y_j$ and $$\\sum_{i<j} a_{ij}$$

[click me](javascript:window.ran='markdown-link') <a href="JaVaScRiPt:window.ran='html-link'">me too</a>
<script>window.ran = 'markdown-script'</script>
<svg onload="window.ran='svg'"></svg> <iframe src="javascript:window.ran='iframe'"></iframe>
[data](data:text/html,<script>window.ran='data'</script>)

```mermaid
<img src=x onerror="window.ran='mermaid'">
```

> a quote with `a < b`
"""
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
RAN = re.compile(r"window\.ran|onerror|onload|javascript:|<script|<iframe|<svg", re.IGNORECASE)


def hostile_notebook() -> nbformat.NotebookNode:
    """Markdown, a raw cell and outputs that would each run script in a page rendered naively."""
    code = nbformat.v4.new_code_cell("display(...)", execution_count=3)
    code.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={
                "text/html": "<table><tr><td onmouseover=\"window.ran='td'\">1</td></tr></table>"
                "<script>window.ran='html-script'</script><img src=x onerror=\"window.ran='img'\">",
                "text/plain": "<table>",
            },
        ),
        nbformat.v4.new_output(
            "display_data",
            data={"application/javascript": "window.ran='js'", "text/plain": "<IPython.core.display.Javascript>"},
        ),
        nbformat.v4.new_output("display_data", data={"text/markdown": "[x](javascript:window.ran='md-output')"}),
        nbformat.v4.new_output(
            "display_data",
            data={"image/png": PNG},
            metadata={"image/png": {"width": "1 onerror=window.ran='width'", "height": 20}},
        ),
        nbformat.v4.new_output("display_data", data={"image/png": "\" onerror=\"window.ran='base64'"}),
        nbformat.v4.new_output("display_data", data={"image/svg+xml": "<svg onload=\"window.ran='svg-output'\"/>"}),
    ]
    raw = nbformat.v4.new_raw_cell("<script>window.ran='raw'</script><b>raw</b>", metadata={"format": "text/html"})
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(MARKDOWN), code, raw])


def test_markdown_loses_what_runs_and_keeps_its_text_and_math() -> None:
    """Is a markdown cell's script, handler and javascript: link gone, its math and text kept?"""
    cleaned = clean_markdown(MARKDOWN)
    assert not RAN.search(cleaned), RAN.search(cleaned)
    assert "<math" in cleaned and "<mi>x</mi>" in cleaned and "$" not in cleaned  # typeset as MathML
    assert "click me" in cleaned and "a quote with" in cleaned
    assert "\n" not in cleaned  # one HTML block: the template's renderer passes it through
    remote = clean_markdown('![a](https://tracker.example/p.png) <img src="//tracker.example/q.png"> ![b](plot.png)')
    assert "tracker" not in remote and 'src="plot.png"' in remote


def test_outputs_lose_what_runs_and_keep_text_and_images() -> None:
    """Are HTML outputs cleaned, JavaScript and SVG outputs dropped with a note, an image's
    attributes plain numbers, and a PNG that is not base64 dropped?"""
    nb, _ = SanitizeNotebook().preprocess(hostile_notebook(), {})
    outputs = nb.cells[1].outputs
    assert "<table>" in outputs[0].data["text/html"] and not RAN.search(outputs[0].data["text/html"])
    assert list(outputs[1].data) == ["text/plain"]
    assert not RAN.search(outputs[2].data["text/markdown"])
    assert outputs[3].data["image/png"] == PNG and outputs[3].metadata == {"image/png": {"height": 20}}
    assert "image/png" not in outputs[4].data and "is not shown" in outputs[4].data["text/plain"]
    assert list(outputs[5].data) == ["text/plain"]
    assert not RAN.search(nb.cells[2].source) and "<b>raw</b>" in nb.cells[2].source


def _render(template: str, nb: nbformat.NotebookNode) -> str:
    """The page nbgrader's ``template`` makes of ``nb``, with the course's own configuration."""
    config = load_config(REPO, {})
    bootstrap = Path(handlers.__file__).parent / "static" / "node_modules" / "bootstrap" / "dist" / "css"
    exporter = HTMLExporter(
        config=config,
        template_name=template,
        extra_template_basedirs=[handlers.template_path],
        extra_template_paths=[str(bootstrap)],
    )
    resources = {
        "nbgrader": {"notebook": "lab", "score": 0, "max_score": 5, "late_penalty": 0},
        "notebook_id": "lab",
        "submission_id": "s",
        "assignment_id": "a",
        "index": 0,
        "total": 1,
        "student": "st",
        "last_name": "",
        "first_name": "",
        "notebook_path": "p",
        "base_url": "",
        "mathjax_url": "",
        "keyboard_manager": "",
    }
    return exporter.from_notebook_node(nb, resources=resources)[0]


@pytest.mark.parametrize("template", ["feedback", "formgrade"])
def test_the_course_config_cleans_feedback_and_formgrader_pages(template: str) -> None:
    """Rendered with nbgrader_config.py by nbgrader's feedback and formgrade templates, does the
    page hold no script, handler or javascript: URL of the submission, and still its text?"""
    page = _render(template, hostile_notebook())
    page = page[page.index("<body") :]  # the page's own head (styles, MathJax) is not the submission's
    assert not re.search(r"window\.ran", page), page[max(0, page.find("window.ran") - 300) :][:600]
    assert not re.search(r"javascript:", page, re.IGNORECASE)
    assert "click me" in page and "a quote with" in page and "<b>raw</b>" in page


def test_config_lists_the_sanitizer_for_every_html_page() -> None:
    """Does nbgrader_config.py put the sanitizer in HTMLExporter.preprocessors, where both the
    feedback's exporter and Formgrader's find it?"""
    config = load_config(Path(REPO), {})
    assert "autograder.grading.grader.output.sanitize_notebook.SanitizeNotebook" in config.HTMLExporter.preprocessors


# What a browser reads as another host's URL (WHATWG: a backslash is a slash in http(s) and file
# URLs, tabs and newlines are dropped, leading C0 controls and spaces are trimmed)
ELSEWHERE = [
    "/\\127.0.0.2:8001/backslash",
    "\\\\127.0.0.2:8001/two-backslashes",
    "/\t/127.0.0.2:8001/tab",
    "/\n/127.0.0.2:8001/newline",
    "\x01 //127.0.0.2:8001/control",
    "http:\\\\127.0.0.2:8001/scheme",
    "//a.invalid/probe-host",
    "HTTPS://127.0.0.2/upper",
]
ON_THE_PAGE = ["plot.png", "/files/x.png", "./a/../b.png", "?v=1", "#top", "a%5C/%2F%2Fb.png", "p\\q.png"]


@pytest.mark.parametrize("url", ELSEWHERE)
def test_an_image_from_another_host_is_dropped_however_written(url: str) -> None:
    """Is an image whose URL a browser resolves to another host dropped wherever a page shows
    it (markdown, inside MathML's ``<mtext>``, an HTML output, a raw cell), where an image of
    the page's own origin beside it stays?"""
    tag = f'<img src="{url}">'
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell(f"{tag} $x$ <math><mtext>{tag}</mtext></math> ![kept](plot.png)"),
            nbformat.v4.new_code_cell(
                outputs=[nbformat.v4.new_output("display_data", data={"text/html": tag + '<img src="/files/x.png">'})]
            ),
            nbformat.v4.new_raw_cell(tag + '<img src="?v=1">'),
        ]
    )
    nb, _ = SanitizeNotebook().preprocess(nb, {})
    shown = [nb.cells[0].source, nb.cells[1].outputs[0].data["text/html"], nb.cells[2].source]
    for html, kept in zip(shown, ['src="plot.png"', 'src="/files/x.png"', 'src="?v=1"'], strict=True):
        assert kept in html, html
        assert not re.search(r"127\.0\.0\.2|probe-host", html), html


@pytest.mark.parametrize("url", ON_THE_PAGE)
def test_an_image_of_the_pages_own_origin_stays(url: str) -> None:
    """Does an image whose URL stays on the page's origin keep its URL, as written?"""
    assert f'src="{url}"' in clean_markdown(f'<img src="{url}">')
