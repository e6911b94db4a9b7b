"""What a browser may run of a submission: nothing. Every markdown cell and output that a page
of the feedback or of Formgrader shows is cleaned with ``nh3`` before it is rendered.

``SanitizeNotebook`` is listed in ``HTMLExporter.preprocessors`` (nbgrader_config.py), so the
feedback (``GenerateFeedback``'s exporter) and Formgrader's submission view (its own
``HTMLExporter``, built from the same config) both run it. ``HTMLExporter.sanitize_html``
alone would not do: nbgrader's feedback and formgrade templates render markdown cells
without it, and nbconvert's markdown renderer lets ``javascript:`` links through.

- A markdown cell (and a ``text/markdown`` output) is rendered here, with nbconvert's own
  renderer, its math typeset as MathML (``math_markup``), the HTML cleaned, and the cell given that HTML as one
  line in a ``<div>``: the template's markdown renderer passes such an HTML block through
  unchanged, so what reaches the page is what ``nh3`` allowed.
- A ``text/html`` output and a raw cell are cleaned; outputs of other kinds that a page
  would run or inline (JavaScript, widgets, SVG markup) are dropped with a note.
- Images must be base64; the metadata a template writes into attributes (width, height,
  execution count, nbgrader's grade id) must be plain numbers or names.

Allowed: nh3's default tags (no script, style, form, iframe, object), ``class``, heading
ids, and in rendered markdown the MathML of ``math_markup.MATH_TAGS``; links by http(s), mailto
and relative URLs; images by ``data:image/`` URLs and by relative URLs that stay on the page's
own origin, as a browser parses them (a page fetches nothing from another host when an
instructor opens it: ``/\\host/x``, or ``/<tab>/host/x``, is another host's URL to a browser).
"""

from __future__ import annotations

import html
import re
from typing import Any

import nh3
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool

from autograder import notebook_cells
from autograder.grading.grader.output import math_markup

TAGS = set(nh3.ALLOWED_TAGS) - {"area", "map"}
ATTRIBUTES: dict[str, set[str]] = {
    "*": {"class", "title", "lang", "dir"},
    "a": {"href", "hreflang"},
    "img": {"src", "alt", "width", "height"},
    **{f"h{level}": {"id"} for level in range(1, 7)},
    "td": {"colspan", "rowspan", "align"},
    "th": {"colspan", "rowspan", "align", "scope"},
    "ol": {"start"},
}
MARKDOWN_TAGS = TAGS | math_markup.MATH_TAGS
MARKDOWN_ATTRIBUTES = {**ATTRIBUTES, **math_markup.MATH_ATTRIBUTES}
SCHEMES = {"http", "https", "mailto", "data"}
SAFE_MIMES = ("text/plain", "text/html", "text/markdown", "text/latex", "image/png", "image/jpeg")
BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]*$")
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
DROPPED = "(an output of type {} is not shown here: a page of feedback runs no code of a submission)"
# Two pages on different hosts: a relative URL that keeps each page's host names none of its own
PROBES = ("http://a.invalid/feedback/page.html", "http://b.invalid/feedback/page.html")
HREF = re.compile(r'href="([^"]*)"')


def _on_the_page(url: str) -> bool:
    """Whether ``url``, relative, resolves to the page's own origin under the URL standard
    (WHATWG: tabs and newlines dropped, ``\\`` read as ``/`` in http(s) and file URLs). It is
    resolved by ``nh3``'s parser (Rust's ``url`` crate, which follows the standard) against two pages."""
    for page in PROBES:
        probe = nh3.clean(
            f'<a href="{html.escape(url)}"></a>',
            tags={"a"},
            attributes={"a": {"href"}},
            url_schemes=set(),  # an absolute URL is dropped: only a relative one resolves
            link_rel=None,
            url_relative=("rewrite_with_base", page),
        )
        resolved = HREF.search(probe)
        origin = page[: page.index("/", len("http://"))]
        if resolved is None or not html.unescape(resolved[1]).startswith(origin + "/"):
            return False
    return True


def _attribute(tag: str, attribute: str, value: str) -> str | None:
    """``data:`` URLs only as the source of an image, and only images; an image's source only
    that or a URL of the page's own origin (a page of feedback fetches nothing from another host)."""
    url = value.strip().lower()
    if attribute == "src" and tag == "img":
        return value if url.startswith("data:image/") or _on_the_page(value) else None
    if attribute in ("href", "src") and url.startswith("data:"):
        return None
    return value


def clean_html(html: str, math: bool = False) -> str:
    """``html`` with nothing that runs: no script, event handler, ``javascript:`` URL, style
    or form (see the module's docstring for what stays); ``math``: the MathML of rendered markdown too."""
    return nh3.clean(
        html,
        tags=MARKDOWN_TAGS if math else TAGS,
        attributes=MARKDOWN_ATTRIBUTES if math else ATTRIBUTES,
        url_schemes=SCHEMES,
        attribute_filter=_attribute,
        strip_comments=True,
        link_rel="noopener noreferrer nofollow",
    )


def as_block(html: str) -> str:
    """Clean HTML as markdown whose rendering is that HTML: one ``<div>`` on one line (an HTML
    block runs to the first blank line; newlines become character references)."""
    return '<div class="sanitized">' + html.replace("\r", "").replace("\n", "&#10;") + "</div>"


def clean_markdown(source: str, attachments: dict | None = None) -> str:
    """Markdown rendered as nbconvert renders it, its math as MathML, then cleaned, as a
    markdown source that renders to exactly that."""
    try:
        html = math_markup.render_markdown(source, attachments)
    except Exception:  # e.g. a missing attachment: the text, escaped, is shown instead
        html = "<pre>" + nh3.clean_text(source) + "</pre>"
    return as_block(clean_html(html, math=True))


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _output(output: NotebookNode) -> None:
    if output.get("output_type") not in ("execute_result", "display_data"):
        return
    data = output.get("data", {})
    for mime in list(data):
        value = data[mime]
        if (
            mime not in SAFE_MIMES
            or not isinstance(value, str)
            or (mime.startswith("image/") and not BASE64.match(value))
        ):
            del data[mime]
            data.setdefault("text/plain", DROPPED.format(mime))
        elif mime == "text/html":
            data[mime] = clean_html(value)
        elif mime == "text/markdown":
            data[mime] = clean_markdown(value)
    # only an image's width and height, as numbers, reach the page's attributes
    kept = {}
    for mime in ("image/png", "image/jpeg"):
        sizes = output.get("metadata", {}).get(mime)
        if isinstance(sizes, dict):
            kept[mime] = {k: sizes[k] for k in ("width", "height") if _number(sizes.get(k)) is not None}
    output.metadata = NotebookNode(kept)


def sanitize_cell(cell: NotebookNode) -> None:
    """Clean one cell in place (see the module's docstring)."""
    if cell.cell_type == "markdown":
        cell.source = clean_markdown(cell.source, cell.get("attachments"))
        cell.pop("attachments", None)  # now inside the cleaned HTML, as data: URLs
    elif cell.cell_type == "raw":
        cell.source = clean_html(cell.source)
    elif cell.cell_type == "code":
        cell.execution_count = _number(cell.get("execution_count"))
        for output in cell.get("outputs", []):
            if "execution_count" in output:
                output.execution_count = _number(output.execution_count)
            _output(output)
    notebook_cells.rename_unless(
        cell, lambda name: bool(NAME.match(name)), lambda name: "cell-" + re.sub(r"[^A-Za-z0-9_-]", "-", name)[:60]
    )


class SanitizeNotebook(Preprocessor):
    """Clean a notebook's markdown, raw cells and outputs so that the page rendered from it
    runs nothing of the submission (see the module's docstring)."""

    enabled = Bool(True, help="nbconvert runs only an enabled preprocessor").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        nb.metadata.pop("widgets", None)
        for cell in nb.cells:
            sanitize_cell(cell)
        return nb, resources
