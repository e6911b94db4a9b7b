"""Sphinx extension: HTML that screen readers read right (WCAG 2.1 A/AA, checked with axe-core).

Two things docutils 0.21's HTML5 writer gets wrong for assistive technology, fixed where the
markup is made, so every page and every builder of the site gets them:

- Bibliography entries. docutils wraps the citations that sphinxcontrib-bibtex produces in
  ``<div role="list">`` and gives each ``role="doc-biblioentry"``, a role that DPUB-ARIA 1.1
  deprecates (axe-core: aria-deprecated-role). Screen readers then see a list without items
  (aria-required-children). Each entry becomes a ``role="listitem"``, as DPUB-ARIA advises.
- Tables whose top-left header cell is empty. Such a table labels its rows with its first
  column, which Markdown cannot say: those cells become row headers (docutils' stub column,
  written ``<th class="stub">``), so each value cell has a header for its row as well as for
  its column (axe-core: td-has-header, WCAG 1.3.1).

The test of the built site is ``tests/book/test_accessibility.py``.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.writers.html5 import HTML5Translator


class AccessibleHTML5Translator(HTML5Translator):
    """Sphinx's HTML5 translator with bibliography entries as list items."""

    def visit_citation(self, node: nodes.citation) -> None:
        super().visit_citation(node)  # the last string it wrote is the entry's opening tag
        self.body[-1] = self.body[-1].replace('role="doc-biblioentry"', 'role="listitem"')


class RowHeaders(SphinxTransform):
    """Make the first column of a table with an empty top-left header cell a column of row headers."""

    default_priority = 700

    def apply(self, **kwargs) -> None:
        for tgroup in self.document.findall(nodes.tgroup):
            colspecs = [child for child in tgroup.children if isinstance(child, nodes.colspec)]
            heads = [child for child in tgroup.children if isinstance(child, nodes.thead)]
            if len(colspecs) < 2 or not heads or not heads[0].children:
                continue
            corner = heads[0][0][0]  # thead > first row > first entry
            if not corner.astext().strip():
                colspecs[0]["stub"] = 1


def setup(app: Sphinx) -> dict:
    for builder in ("html", "dirhtml", "singlehtml"):
        app.set_translator(builder, AccessibleHTML5Translator)
    app.add_transform(RowHeaders)
    return {"version": "1.0", "env_version": 1, "parallel_read_safe": True, "parallel_write_safe": True}
