"""The built site, read as files: every page built, nothing loaded from other hosts, no
widgets, alt text on figures, downloads and launch buttons. The book is built once per
session (``built_site`` in conftest.py)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ._book import toc_pages

PAGES = toc_pages()
LECTURES = [p for p in PAGES if re.fullmatch(r"book/\d\d-[\w-]+", p)]
LABS = [p for p in PAGES if p.startswith("notebooks/")]
# Tags whose URL attribute makes the browser fetch something when the page loads.
FETCHING = {
    "script": "src",
    "link": "href",
    "img": "src",
    "iframe": "src",
    "source": "src",
    "video": "src",
    "audio": "src",
    "embed": "src",
    "object": "data",
    "track": "src",
}


class Tags(HTMLParser):
    """Collect start tags as (name, attributes), and the <img> tags inside the article."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.article_images: list[dict[str, str | None]] = []
        self._article_depth = 0

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag == "article":
            self._article_depth += 1
        elif tag == "img" and self._article_depth:
            self.article_images.append(attributes)

    def handle_endtag(self, tag):
        if tag == "article" and self._article_depth:
            self._article_depth -= 1


def parse(path: Path) -> Tags:
    parser = Tags()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def off_site(url: str | None) -> bool:
    return bool(url) and re.match(r"^\s*(https?:)?//", url) is not None


def html_files(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_every_toc_page_is_built(built_site):
    """Is there an HTML page for every page of the toc, and a home page that leads to the intro?"""
    missing = [p for p in PAGES if not (built_site / f"{p}.html").is_file()]
    assert not missing, missing
    assert "book/intro.html" in (built_site / "index.html").read_text()


def test_nothing_loaded_from_other_hosts(built_site):
    """Does any page fetch a script, stylesheet, image or frame from another host?"""
    found = []
    for page in html_files(built_site):
        for tag, attrs in parse(page).tags:
            if tag == "link" and attrs.get("rel") == "canonical":
                continue  # names the page's published address (html.baseurl); fetches nothing
            url = attrs.get(FETCHING.get(tag, ""))
            if tag in FETCHING and off_site(url):
                found.append(f"{page.relative_to(built_site)}: <{tag}> {url}")
            if off_site(attrs.get("srcset")):
                found.append(f"{page.relative_to(built_site)}: <{tag} srcset> {attrs['srcset']}")
    assert not found, "off-site resources:\n" + "\n".join(found[:20])


def test_stylesheets_load_nothing_from_other_hosts(built_site):
    """Does any stylesheet of the site import a font or a file from another host?"""
    found = []
    for css in sorted((built_site / "_static").rglob("*.css")):
        text = css.read_text(encoding="utf-8", errors="replace")
        for url in re.findall(r"""(?:url\(\s*['"]?|@import\s+['"])((?:https?:)?//[^'")\s]+)""", text):
            found.append(f"{css.relative_to(built_site)}: {url}")
    assert not found, found[:20]


def test_mathjax_served_locally(built_site):
    """Is MathJax loaded from the site's own _static folder, and is the file there?"""
    intro = parse(built_site / "book" / "notation.html")
    scripts = [attrs.get("src") or "" for tag, attrs in intro.tags if tag == "script"]
    mathjax = [s for s in scripts if "mathjax" in s.lower()]
    assert mathjax and all(s.startswith("../_static/mathjax/") for s in mathjax), mathjax
    assert (built_site / "_static" / "mathjax" / "tex-chtml.js").is_file()


def test_no_widget_output(built_site):
    """Does any page carry Jupyter widget output (which needs a widget manager from a CDN)?"""
    found = [
        p.relative_to(built_site).as_posix()
        for p in html_files(built_site)
        if re.search(
            r"application/vnd\.jupyter\.widget-(view|state)\+json|jupyter-widgets", p.read_text(encoding="utf-8")
        )
    ]
    assert not found, (
        "pages with widget output (use text progress bars, `from tqdm import tqdm`, "
        f"not tqdm.auto or tqdm.notebook): {found}"
    )


def test_images_have_alt_text(built_site):
    """Does every image in a page's content carry alt text?"""
    found = []
    for page in PAGES:
        for attrs in parse(built_site / f"{page}.html").article_images:
            if not (attrs.get("alt") or "").strip():
                found.append(f"{page}: {attrs.get('src')}")
    assert not found, "images without alt text (fig-alt / :alt:):\n" + "\n".join(found)


def test_licence_on_every_page(built_site):
    """Does every page state the licences (code MIT, text CC BY 4.0)?"""
    found = [
        p
        for p in PAGES
        if not {"MIT licence", "CC BY 4.0"}
        <= set(re.findall(r"MIT licence|CC BY 4\.0", (built_site / f"{p}.html").read_text()))
    ]
    assert not found, found


@pytest.mark.parametrize("page", LECTURES)
def test_lecture_downloads(built_site, page):
    """Can a lecture be downloaded as .md and as an executed .ipynb, and does it show its outputs?"""
    html = (built_site / f"{page}.html").read_text()
    assert (built_site / "_sources" / f"{page}.md").is_file()
    assert (built_site / "_sources" / f"{page}.ipynb").is_file()
    assert f"_sources/{page}.ipynb" in html and f"_sources/{page}.md" in html
    assert 'class="cell_output' in html, "a lecture should show the outputs of its executed cells"


@pytest.mark.parametrize("page", LABS)
def test_lab_launch_buttons(built_site, page):
    """Does a lab page open in Colab and Binder from the repository, offer its .ipynb, and show no outputs?"""
    html = (built_site / f"{page}.html").read_text()
    colab = f"https://colab.research.google.com/github/transformer-course/transformer-course/blob/main/{page}.ipynb"
    binder = f"https://mybinder.org/v2/gh/transformer-course/transformer-course/main?urlpath=lab/tree/{page}.ipynb"
    assert colab in html
    assert binder in html
    assert f"_sources/{page}.ipynb" in html
    assert (built_site / "_sources" / f"{page}.ipynb").is_file()
    assert 'class="cell_output' not in html, "labs are shown unexecuted"
    assert "https://github.com/transformer-course/transformer-course" in html  # repository button
