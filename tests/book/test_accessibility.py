"""Accessibility of the built site: WCAG 2.1 A and AA, checked in headless Chromium.

axe-core (the engine of most accessibility audits) runs on every HTML page of the site every
rule tagged wcag2a, wcag2aa, wcag21a or wcag21aa, and its rules for headings, and the test
lists each violation: rule, page, element. Its JavaScript is the axe.min.js that the pinned
``selenium-axe-python`` ships, injected into the page: nothing is fetched at run time. Beside
it: every formula carries MathML that a screen reader can read, every image an alt text of
several words, and the lectures and labs plot with a colour-blind-safe palette.

The browser and the server on 127.0.0.1 are those of ``test_book_browser.py``; where Chromium
or its driver is missing the browser tests skip and say so.
"""

from __future__ import annotations

import ast
import json
import re
from html.parser import HTMLParser
from pathlib import Path

from ._book import ROOT, toc_pages
from .test_book_browser import _open, browser, site_url  # noqa: F401  (fixtures shared with the browser test)

WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
# axe-core files these under "best practice", not under a WCAG tag; they hold what the
# publisher guide asks of every page: one title, then headings in order, none empty.
HEADING_RULES = ["page-has-heading-one", "heading-order", "empty-heading"]
# The rules behind the failures that issue 17 found, and two that guard what was good. Five
# WCAG rules of axe-core 4.9, label-content-name-mismatch and td-has-header among them, are
# "experimental", which a run by tag leaves out: the test names every rule that carries one of
# WCAG_TAGS instead, so that they run too.
MUST_RUN = {
    "label-content-name-mismatch",
    "aria-deprecated-role",
    "aria-required-children",
    "td-has-header",
    "color-contrast",
    "image-alt",
}
REDIRECT = re.compile(r'\s*<meta http-equiv="refresh" content="0; url=([^"]+)"\s*/?>\s*', re.IGNORECASE)

AXE_RUN = """
const [tags, extra, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]];
const rules = axe.getRules(tags).map(rule => rule.ruleId).concat(extra);
axe.run(document, {runOnly: {type: 'rule', values: rules}, resultTypes: ['violations']})
  .then(results => done({version: axe.version, rules, passes: results.passes.length,
      violations: results.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
          targets: v.nodes.map(node => node.target.join(' '))}))}),
        error => done({error: String(error)}));
"""


def site_pages(site: Path) -> list[str]:
    """Every HTML page of the built site, as paths relative to it (``book/intro.html``).

    ``_static/`` holds no pages: its two .html files are the theme's template macros.
    """
    return sorted(
        p.relative_to(site).as_posix() for p in site.rglob("*.html") if p.relative_to(site).parts[0] != "_static"
    )


def test_axe_wcag21_aa(browser, site_url, built_site):  # noqa: F811
    """Does axe-core find no violation of a WCAG 2.1 A or AA rule, nor a heading out of order, on any page?"""
    from selenium_axe_python import Axe

    # A tall window: axe checks the contrast of text it can see, and the sidebar scrolls.
    browser.set_window_size(1280, 4000)
    found, checked = [], []
    for page in site_pages(built_site):
        redirect = REDIRECT.fullmatch((built_site / page).read_text(encoding="utf-8"))
        if redirect:  # the site's index.html is only a redirect: no content to read
            target = (Path(page).parent / redirect.group(1)).as_posix()
            assert (built_site / target).is_file(), f"{page} redirects to a missing page: {target}"
            continue
        _open(browser, f"{site_url}/{page}")
        Axe(browser).inject()
        report = browser.execute_async_script(AXE_RUN, WCAG_TAGS, HEADING_RULES)
        assert "error" not in report, f"axe-core failed on {page}: {report.get('error')}"
        assert MUST_RUN <= set(report["rules"]), f"rules that did not run: {MUST_RUN - set(report['rules'])}"
        assert report["passes"] > 0, f"axe-core checked nothing on {page}"
        checked.append(page)
        for violation in report["violations"]:
            for target in violation["targets"]:
                found.append(f"{violation['id']} ({violation['impact']}) on {page}: {target} -- {violation['help']}")
    assert len(checked) >= len(toc_pages()), checked
    assert not found, (
        f"{len(found)} violations of WCAG 2.1 A/AA or of the heading rules (axe-core "
        f"{report['version']}, {len(report['rules'])} rules, {len(checked)} pages):\n" + "\n".join(found)
    )


FORMULAS = """
const article = document.querySelector('article.bd-article') || document.body;
const tex = new Map();  // each rendered formula's TeX source, to name it in a failure
try { for (const item of MathJax.startup.document.math) tex.set(item.typesetRoot, item.math); } catch (e) {}
return [...article.querySelectorAll('mjx-container')].map(box => {
  const math = box.querySelector(':scope > mjx-assistive-mml math');
  const drawing = box.querySelector(':scope > mjx-math');
  return {tex: (tex.get(box) || '?').trim().slice(0, 50), mathml: !!(math && math.textContent.trim()),
          hidden: !!drawing && drawing.getAttribute('aria-hidden') === 'true'};
});
"""


def test_formulas_carry_mathml(browser, site_url, built_site):  # noqa: F811
    """Does every formula MathJax renders carry a MathML copy for screen readers, and hide its drawing from them?"""
    pages = [p for p in site_pages(built_site) if 'class="math' in (built_site / p).read_text(encoding="utf-8")]
    assert "book/notation.html" in pages
    found, total = [], 0
    for page in pages:
        _open(browser, f"{site_url}/{page}")
        formulas = browser.execute_script(FORMULAS)
        total += len(formulas)
        for problem, bad in [
            ("no assistive MathML", [f for f in formulas if not f["mathml"]]),
            ("drawing not hidden from screen readers", [f for f in formulas if not f["hidden"]]),
        ]:
            if bad:
                found.append(f"{page}: {len(bad)} of {len(formulas)} formulas, {problem}, e.g. {bad[0]['tex']!r}")
    assert total > 100, f"only {total} formulas rendered on {len(pages)} pages"
    assert not found, (
        "formulas a screen reader cannot read (keep MathJax's assistive MathML on: "
        "mathjax3_config in _config.yml):\n" + "\n".join(found)
    )


class _Images(HTMLParser):
    """The <img> tags of a page, each with whether it sits in the page's <article> (the content)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.images: list[tuple[dict[str, str | None], bool]] = []
        self._article = 0

    def handle_starttag(self, tag, attrs):
        if tag == "article":
            self._article += 1
        elif tag == "img":
            self.images.append((dict(attrs), self._article > 0))

    def handle_endtag(self, tag):
        if tag == "article" and self._article:
            self._article -= 1


ICON_WORDS = 2  # a button's icon: what it is ("Colab logo")
FIGURE_WORDS = 8  # a figure of the content: what it shows, in a sentence at least
FILE_NAME = re.compile(
    r"\.(png|jpe?g|gif|svg|webp)\b|^(image|figure|img|output|plot|untitled)[\s_-]*\d*$", re.IGNORECASE
)


def test_every_image_has_alt_text(built_site):
    """Does every <img> on every page carry an alt text of several words, never a file name or nothing?"""
    found, count = [], 0
    for page in site_pages(built_site):
        parser = _Images()
        parser.feed((built_site / page).read_text(encoding="utf-8"))
        for attrs, in_article in parser.images:
            count += 1
            alt = " ".join((attrs.get("alt") or "").split())
            src = attrs.get("src") or ""
            needed = FIGURE_WORDS if in_article else ICON_WORDS
            if len(alt.split()) < needed or FILE_NAME.search(alt) or alt == Path(src).name:
                found.append(
                    f"{page}: {src} has alt={alt!r} (a {'figure' if in_article else 'icon'} "
                    f"needs {needed} words or more)"
                )
    assert count, "no image at all: is the site built?"
    assert not found, (
        "images without a descriptive alt text (a lecture figure takes it from the "
        "cell's `mystnb: image: alt:`, a Markdown image from its [text]):\n" + "\n".join(found)
    )


# --- the plots: a colour-blind-safe palette ---------------------------------------------------

PALETTE = "tableau-colorblind10"
# Calls that take their colours from matplotlib's colour cycle, which the style replaces.
CYCLE_CALLS = {
    "plot",
    "semilogx",
    "semilogy",
    "loglog",
    "step",
    "scatter",
    "bar",
    "barh",
    "hist",
    "errorbar",
    "fill_between",
    "fill_betweenx",
    "stackplot",
    "stem",
    "eventplot",
    "pie",
}
SAFE_CMAPS = {"viridis", "cividis", "magma", "inferno", "plasma", "gray", "Greys", "binary"}
COLOUR_KEYWORDS = {"color", "colors", "c", "facecolor", "edgecolor", "ecolor", "mfc", "mec"}
NEUTRAL = re.compile(r"^(C\d|k|w|black|white|gr[ae]y|0?\.\d+|1(\.0*)?|none)$", re.IGNORECASE)


def _code_cells(page: str) -> list[str]:
    """The code of a page's cells in order, magics turned into Python."""
    from IPython.core.inputtransformer2 import TransformerManager
    from myst_nb.core.read import read_myst_markdown_notebook

    path = ROOT / f"{page}.md"
    if path.is_file():
        cells = read_myst_markdown_notebook(path.read_text(encoding="utf-8")).cells
    else:
        cells = json.loads((ROOT / f"{page}.ipynb").read_text(encoding="utf-8"))["cells"]
    sources = [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in cells
        if c["cell_type"] == "code"
    ]
    transform = TransformerManager().transform_cell
    return [transform(s) for s in sources]


def _mentions_palette(call: ast.Call) -> bool:
    return any(isinstance(n, ast.Constant) and n.value == PALETTE for n in ast.walk(call))


def _is_style(call: ast.AST, kind: str) -> bool:
    """Is this ``<...>.style.use(...)`` / ``<...>.style.context(...)`` with the colour-blind style?"""
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == kind
        and isinstance(call.func.value, ast.Attribute)
        and call.func.value.attr == "style"
        and _mentions_palette(call)
    )


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


class _PlotAudit(ast.NodeVisitor):
    """Walk a page's cells in order: which plotting calls draw outside the colour-blind style?"""

    def __init__(self) -> None:
        self.mpl = {"plt", "matplotlib", "mpl"}  # names that hold pyplot, a figure or axes
        self.styled = False  # plt.style.use(PALETTE) has run
        self.context = 0  # inside `with plt.style.context(PALETTE)`
        self.draws = 0  # calls that draw: lines, bars, images
        self.problems: list[str] = []

    def _binds_mpl(self, value: ast.AST) -> bool:
        return any(isinstance(n, ast.Call) and _root(n) in self.mpl for n in ast.walk(value))

    def _bind(self, targets: list[ast.AST]) -> None:
        for target in targets:
            self.mpl |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        if self._binds_mpl(node.value):
            self._bind(node.targets)

    def visit_For(self, node: ast.For) -> None:
        if any(isinstance(n, ast.Name) and n.id in self.mpl for n in ast.walk(node.iter)):
            self._bind([node.target])  # for ax, w in zip(axes, weights)
        self.generic_visit(node)

    def visit_With(self, node: ast.With) -> None:
        styled = any(_is_style(item.context_expr, "context") for item in node.items)
        self.context += styled
        self.generic_visit(node)
        self.context -= styled

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        if _is_style(node, "use"):
            self.styled = True
        if not (isinstance(node.func, ast.Attribute) and _root(node.func.value) in self.mpl):
            return
        name, line = node.func.attr, ast.unparse(node)[:90]
        self.draws += name in CYCLE_CALLS | {"imshow", "matshow", "pcolormesh"}
        if name in CYCLE_CALLS and not (self.styled or self.context):
            self.problems.append(f"draws before choosing the {PALETTE} style: {line}")
        for keyword in node.keywords:
            value = keyword.value.value if isinstance(keyword.value, ast.Constant) else None
            if keyword.arg == "cmap" and value not in {m + r for m in SAFE_CMAPS for r in ("", "_r")}:
                self.problems.append(f"colour map {value!r} is not one of {sorted(SAFE_CMAPS)}: {line}")
            if keyword.arg in COLOUR_KEYWORDS and isinstance(value, str) and not NEUTRAL.match(value):
                self.problems.append(f"fixed colour {value!r} (use the cycle, C0..C9, or black/grey): {line}")
        if name in {"plot", "semilogx", "semilogy", "loglog", "step"}:
            for arg in node.args:  # a format string such as "r--" names a colour by letter
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    letters = set(re.sub(r"C\d|[-.:,o^v<>1-4sp*hH+xXDd|_]", "", arg.value))
                    if letters & set("bgrcmy"):
                        self.problems.append(f"format {arg.value!r} fixes a colour: {line}")


def test_plots_use_colour_blind_palette():
    """Does every lecture and lab draw its lines and bars in the tableau-colorblind10 style, with safe colour maps?"""
    found, drawn = [], 0
    for page in toc_pages():
        if not page.startswith(("book/", "notebooks/")):
            continue
        audit = _PlotAudit()
        for code in _code_cells(page):
            audit.visit(ast.parse(code))
        drawn += audit.draws > 0
        found += [f"{page}: {problem}" for problem in audit.problems]
    assert drawn >= 8, f"only {drawn} pages draw with matplotlib: is the audit still finding the plots?"
    assert not found, "\n".join(found)
