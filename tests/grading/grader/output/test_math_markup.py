"""Is the math of a feedback page typeset as MathML on the grader's side, code and escaped
dollars left alone, a student's TeX unable to make anything but math, every formula of the labs
converted, and the page free of MathJax's script from a CDN?"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from nbconvert import HTMLExporter
from nbformat.v4 import new_markdown_cell, new_notebook
from nbgrader.server_extensions.formgrader import handlers

from autograder.grading.grader.output import math_markup
from autograder.grading.grader.output.sanitize_notebook import MARKDOWN_TAGS, clean_markdown
from autograder.grading.grader.run.nbconfig import load_config
from tests.grading.helpers import REPO

LABS = sorted(REPO.glob("solutions/*/*.ipynb"))
RUNS = re.compile(r"<script|\bon[a-z]+\s*=|javascript:|href=|<annotation|<semantics|style=", re.IGNORECASE)


class _Math(HTMLParser):
    """The tags and attributes inside ``<math>`` elements, and the text outside them and code."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: dict[str, set[str]] = {}
        self.depth = {"math": 0, "code": 0}
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.depth:
            self.depth[tag] += 1
        if self.depth["math"]:
            self.tags.setdefault(tag, set()).update(name for name, _ in attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.depth:
            self.depth[tag] -= 1

    def handle_data(self, data: str) -> None:
        if not any(self.depth.values()):
            self.text.append(data)


def _parse(html: str) -> _Math:
    parser = _Math()
    parser.feed(html)
    return parser


def test_inline_and_display_math_become_mathml() -> None:
    """Do ``$``, ``$$``, ``\\(`` and ``\\[`` spans become ``<math>`` elements, display ones blocks?"""
    html = clean_markdown("Inline $x_i^2$ and \\(a+b\\), display $$\\frac{1}{N}\\sum_i y_i$$ and \\[\\sqrt{d_k}\\]")
    assert html.count("<math") == 4 and html.count('display="block"') == 2, html
    assert "<msubsup><mi>x</mi><mi>i</mi><mn>2</mn></msubsup>" in html and "<mfrac>" in html and "<msqrt>" in html
    assert "$" not in html and "\\(" not in html and "\\[" not in html


def test_code_and_escaped_dollars_are_not_math() -> None:
    """Is a ``$`` inside a code span or fenced code, and an escaped ``\\$``, left as it was?"""
    html = clean_markdown("costs \\$5 or \\$6; `echo $HOME $PATH`\n\n```\nx = '$a$'\n$$b$$\n```\n")
    assert "<math" not in html, html
    assert "costs $5 or $6" in html and "<code>echo $HOME $PATH</code>" in html
    assert "x = '$a$'&#10;$$b$$" in html


def test_tex_it_cannot_convert_is_shown_as_written() -> None:
    """Is a span latex2mathml fails on left as its TeX text, without failing the page?"""
    assert math_markup.to_mathml("\\frac{1}{", display=False) is None
    html = clean_markdown("before $\\frac{1}{$ after $y$")
    assert "$\\frac{1}{$" in html and "before" in html and "after" in html and html.count("<math") == 1, html


@pytest.mark.parametrize(
    "markdown",
    [
        "$<script>alert(1)</script>$",
        "$\\href{javascript:alert(1)}{x}$",
        "$x$<img src=x onerror=alert(1)>",
        "$$\\style{color:red}{x}$$",
        "$\\text{<img src=x onerror=alert(1)>}$",
        "$\\unicode{<script>}$",
        '$x$ <math><mi href="javascript:alert(1)">y</mi>'
        '<annotation-xml encoding="text/html"><script>alert(1)</script>'
        "</annotation-xml></math>",
    ],
)
def test_a_students_tex_makes_nothing_but_math(markdown: str) -> None:
    """Does a hostile student's math, converted and cleaned, keep no script, handler,
    ``javascript:`` URL, style or HTML inside MathML?"""
    html = clean_markdown(markdown)
    assert "<math" in html and not RUNS.search(html), html
    assert set(_parse(html).tags) <= MARKDOWN_TAGS  # \\text{...} comes out unescaped: nh3 cleans it


def test_every_formula_of_the_labs_converts_to_the_allowed_mathml() -> None:
    """Does every formula in the labs' markdown become MathML (no raw ``$`` left outside code),
    and is the allowlist exactly the tags latex2mathml writes for them, with their attributes?"""
    tags: dict[str, set[str]] = {}
    formulas = 0
    for lab in LABS:
        for cell in json.loads(lab.read_text())["cells"]:
            if cell["cell_type"] == "markdown" and "$" in "".join(cell["source"]):
                parsed = _parse(math_markup.render_markdown("".join(cell["source"])))
                assert "$" not in "".join(parsed.text), (lab.name, "".join(cell["source"]))
                for tag, attrs in parsed.tags.items():
                    tags.setdefault(tag, set()).update(attrs)
                formulas += parsed.tags.get("math") is not None
    assert formulas > 50
    extra = {"mroot", "munderover"}  # what a student's roots and limits add to the labs' formulas
    assert set(tags) | extra == math_markup.MATH_TAGS
    assert {t: a for t, a in tags.items() if a} == {t: a for t, a in math_markup.MATH_ATTRIBUTES.items() if t in tags}


def _feedback_page(**settings: object) -> str:
    """The page nbgrader's feedback template makes of a markdown cell, as ``generate_feedback``
    makes it: the course's config, and nbgrader's own settings where the config has none."""
    bootstrap = Path(handlers.__file__).parent / "static" / "node_modules" / "bootstrap" / "dist" / "css"
    exporter = HTMLExporter(
        config=load_config(REPO, {}), template_name="feedback", extra_template_paths=[str(bootstrap)], **settings
    )
    resources = {"nbgrader": {"notebook": "lab", "score": 0, "max_score": 5, "late_penalty": 0}}
    return exporter.from_notebook_node(new_notebook(cells=[new_markdown_cell("$a^2$")]), resources=resources)[0]


def test_the_feedback_page_loads_no_mathjax() -> None:
    """Does the feedback page hold no script at all (MathJax's from a CDN included) and its math
    as MathML, where nbgrader's template alone would load MathJax from a CDN?"""
    page = _feedback_page()
    assert "<math" in page and "<msup><mi>a</mi><mn>2</mn></msup>" in page and "Bootstrap" in page
    assert "<script" not in page.lower() and "cdnjs" not in page
    assert "cdnjs" in _feedback_page(extra_template_basedirs=[handlers.template_path])  # without our folder


def test_a_cell_past_the_limit_is_shown_as_its_text() -> None:
    """Is a markdown cell longer than MARKDOWN_LIMIT shown as its own text, escaped, with no
    math and no markup (its rendering would cost time in proportion to its tokens)?"""
    source = "<b>$x$</b> " * (math_markup.MARKDOWN_LIMIT // 10)
    html = math_markup.render_markdown(source)
    assert html.startswith("<pre>&lt;b&gt;$x$&lt;/b&gt;") and "<math" not in html and "<b>" not in html
    assert "<math" in math_markup.render_markdown(source[: math_markup.MARKDOWN_LIMIT // 2])


def test_math_past_the_budget_stays_tex() -> None:
    """In a cell of many formulas, are the first ones typeset and those past MATH_BUDGET shown
    as their TeX, while every lab's markdown cell stays well inside both bounds?"""
    spans = math_markup.MATH_BUDGET // (math_markup.SPAN_COST + 1)
    html = math_markup.render_markdown(" ".join(f"$x_{{{i}}}$" for i in range(2 * spans)))
    assert 0.4 * spans < html.count("<math") <= spans
    assert f"$x_{{{2 * spans - 1}}}$" in html
    for path in (REPO / "solutions").glob("*/*.ipynb"):
        for cell in nbformat.read(str(path), as_version=4).cells:
            if cell.cell_type == "markdown":
                assert len(cell.source) < math_markup.MARKDOWN_LIMIT // 10
                assert cell.source.count("$") * (math_markup.SPAN_COST + 20) < math_markup.MATH_BUDGET, path
