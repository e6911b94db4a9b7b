"""The math of a markdown cell typeset on the grader's side, as MathML, so that a page of feedback
shows it with no script and no network (every current browser renders MathML itself).

``render_markdown`` renders markdown as nbconvert does (mistune, with nbconvert's math parser:
code spans and fenced code are code, an escaped ``\\$`` is a dollar), except that each TeX span,
``$...$`` and ``\\(...\\)`` inline, ``$$...$$``, ``\\[...\\]`` and ``\\begin{env}...\\end{env}``
displayed, becomes the MathML that ``latex2mathml`` makes of it. A span it cannot convert is
left as its TeX text. The HTML that comes out is cleaned by ``sanitize_notebook`` with
``MATH_TAGS`` and ``MATH_ATTRIBUTES`` added to its allowlist: what ``latex2mathml`` writes for
the course's formulas, no ``href``, no ``style``, no ``semantics`` or ``annotation-xml``, so a
student's TeX can make nothing but math.

Both parsers find their next rule with ``math_scan``'s scanner instead of mistune's one regex:
the same matches, in time linear in the text (nbconvert's math rules made it quadratic).

``feedback_template_basedirs`` (set in nbgrader_config.py) takes MathJax's script, which
nbgrader's feedback template loads from a CDN, out of the page.
"""

from __future__ import annotations

import importlib.util
import os
from html import escape
from typing import Any, ClassVar

from latex2mathml.converter import convert
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath, MathBlockParser, MathInlineParser

from autograder.grading.grader.output import math_scan

# What latex2mathml 3.81.1 writes for the labs' formulas (tests/grading/grader/output/test_math_markup.py
# holds the list to them), and the roots and limits a student's TeX may add; nothing else.
MATH_TAGS = {
    "math",
    "mrow",
    "mi",
    "mn",
    "mo",
    "mtext",
    "mspace",
    "msub",
    "msup",
    "msubsup",
    "mfrac",
    "msqrt",
    "mroot",
    "munder",
    "mover",
    "munderover",
    "mtable",
    "mtr",
    "mtd",
    "mstyle",
}
MATH_ATTRIBUTES: dict[str, set[str]] = {
    "math": {"display", "xmlns"},
    "mi": {"mathvariant"},
    "mo": {"fence", "form", "maxsize", "minsize", "stretchy"},
    "mover": {"accent"},
    "mspace": {"width"},
    "mtd": {"columnalign"},
    "mstyle": {"displaystyle", "scriptlevel"},
}


def _dotall(pattern: str) -> str:
    return f"(?s:{pattern})"


def feedback_template_basedirs() -> list[str]:
    """``HTMLExporter.extra_template_basedirs`` for nbgrader's feedback: ours first, whose
    ``feedback/mathjax.html.j2`` makes the ``mathjax()`` macro of nbgrader's feedback template
    write nothing (no script from a CDN), then nbgrader's own, where that template lives (found
    as ``GenerateFeedback`` finds it, without importing nbgrader's server code)."""
    spec = importlib.util.find_spec("nbgrader")  # found, not imported: its __init__ imports the server's handlers
    assert spec is not None and spec.origin is not None
    nbgrader_templates = os.path.join(os.path.dirname(spec.origin), "server_extensions", "formgrader", "templates")
    return [os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates"), nbgrader_templates]


MATH_BUDGET = 40_000  # TeX converted in one cell: its characters, and SPAN_COST a span; the rest shown as written
SPAN_COST = 100  # a conversion's own cost (about 0.3 ms), in characters
MARKDOWN_LIMIT = 100_000  # a longer cell is shown as its text, unrendered (a lab's longest is a few KB)


def to_mathml(tex: str, display: bool) -> str | None:
    """The MathML of ``tex``, or None where latex2mathml cannot convert it."""
    try:
        return str(convert(tex, display="block" if display else "inline"))
    except Exception:  # a student's TeX can be anything: it is then shown as written
        return None


class _InlineParser(MathInlineParser):
    r"""nbconvert's math parser, also taking ``\(...\)`` and ``\[...\]`` with one backslash (as
    Jupyter's editors typeset them) besides its ``\\(...\\)`` and ``\\[...\\]``."""

    BLOCK_MATH_LATEX = _dotall(r"(?<!\\)\\{1,2}\[(?P<math_block_latex>.*?)(?<!\\)\\{1,2}\]")
    INLINE_MATH_LATEX = _dotall(r"(?<!\\)\\{1,2}\((?P<math_inline_latex>.*?)(?<!\\)\\{1,2}\)")
    SPECIFICATION: ClassVar[dict[str, str]] = {
        **MathInlineParser.SPECIFICATION,
        "block_math_latex": BLOCK_MATH_LATEX,
        "inline_math_latex": INLINE_MATH_LATEX,
    }

    def compile_sc(self, rules: list[str] | None = None) -> Any:
        return math_scan.compile_sc(self, rules) or super().compile_sc(rules)


class _BlockParser(MathBlockParser):
    """nbconvert's block parser, keeping a display ``\\[...\\]`` with one backslash whole."""

    MULTILINE_MATH = _dotall(
        r"(?<!\\)[$]{2}.*?(?<!\\)[$]{2}"
        r"|\\{1,2}\[.*?\\{1,2}\]"
        r"|\\begin\{(?P<math_env_name>[a-z]*\*?)\}.*?\\end\{(?P=math_env_name)\}"
    )
    SPECIFICATION: ClassVar[dict[str, str]] = {**MathBlockParser.SPECIFICATION, "multiline_math": MULTILINE_MATH}

    def compile_sc(self, rules: list[str] | None = None) -> Any:
        return math_scan.compile_sc(self, rules) or super().compile_sc(rules)


class MathMLRenderer(IPythonRenderer):
    """nbconvert's renderer, with each TeX span written as MathML (or as its TeX text). Past
    ``MATH_BUDGET`` (about 400 spans, or 40 KB of TeX) in one cell the spans stay TeX text:
    converting is the costly part (about 0.3 ms a span), and no lab's cell comes near it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.budget = MATH_BUDGET

    def _mathml(self, tex: str, display: bool) -> str | None:
        self.budget -= len(tex) + SPAN_COST
        return to_mathml(tex, display) if self.budget >= 0 else None

    def block_math(self, body: str) -> str:
        return self._mathml(body, display=True) or f"$${escape(body, quote=False)}$$"

    def inline_math(self, body: str) -> str:
        return self._mathml(body, display=False) or f"${escape(body, quote=False)}$"

    def latex_environment(self, name: str, body: str) -> str:
        tex = f"\\begin{{{name}}}{body}\\end{{{name}}}"
        return self._mathml(tex, display=True) or escape(tex, quote=False)


def render_markdown(source: str, attachments: dict[str, Any] | None = None) -> str:
    """``source`` as HTML, rendered as nbconvert renders markdown, its math as MathML; past
    ``MARKDOWN_LIMIT`` characters, its text in a ``<pre>``: rendering costs time in proportion
    to the tokens (about 15 s a megabyte), in the worker and in Formgrader's server alike."""
    if len(source) > MARKDOWN_LIMIT:
        return f"<pre>{escape(source, quote=False)}</pre>\n"
    renderer = MathMLRenderer(escape=False, attachments=attachments or {}, anchor_link_text="¶")
    return MarkdownWithMath(renderer=renderer, block=_BlockParser(), inline=_InlineParser(hard_wrap=False)).render(
        source
    )
