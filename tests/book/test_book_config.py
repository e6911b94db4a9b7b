"""The site's configuration, read without building: toc, execution, buttons, licences, CI."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

import yaml

from autograder.authoring import REPOSITORY

from ._book import BUILD_ARGS, ROOT, toc_pages

SLUGS = [
    "01-rnn-limits",
    "02-self-attention",
    "03-qk-low-rank",
    "04-multi-head-attention",
    "05-positional-encoding",
    "06-masking",
    "07-transformer-block",
    "08-encoder-decoder",
    "09-tokens-in-tokens-out",
    "10-modern-block",
]
PARTS = {"Foundations": SLUGS[:4], "Building the Transformer": SLUGS[4:7], "Training and inference": SLUGS[7:]}


def config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def toc() -> dict:
    return yaml.safe_load((ROOT / "_toc.yml").read_text())


def test_toc_order():
    """Does the toc read intro, notation, the warm-up lab, the three chapter parts (each lecture then
    its lab), the appendix, then Guides?"""
    parts = toc()["parts"]
    assert toc()["root"] == "book/intro"
    assert [c["file"] for c in parts[0]["chapters"]] == ["book/notation", "notebooks/00-warmup/00-warmup"]
    assert [p.get("caption") for p in parts[1:]] == [*PARTS, "Appendix", "Guides"]
    for part in parts[1:4]:
        expected = [f for slug in PARTS[part["caption"]] for f in (f"book/{slug}", f"notebooks/{slug}/{slug}")]
        assert [c["file"] for c in part["chapters"]] == expected, part["caption"]
    assert [c["file"] for c in parts[4]["chapters"]] == ["book/appendix-training"]
    assert [c["file"] for c in parts[5]["chapters"]] == [
        "book/guides/student",
        "book/guides/instructor",
        "book/guides/publisher",
        "book/bibliography",
    ]


def test_toc_files_exist():
    """Does every page the toc lists exist (a lecture as .md, a lab as .ipynb)?"""
    missing = [
        page for page in toc_pages() if not any((ROOT / f"{page}{suffix}").is_file() for suffix in (".md", ".ipynb"))
    ]
    assert not missing, f"pages listed in _toc.yml but missing from the repository: {missing}"


def test_only_toc_files_are_built():
    """Are only toc files built, with solutions, grading folders, .venv and _build excluded?"""
    cfg = config()
    assert cfg["only_build_toc_files"] is True
    excluded = set(cfg["exclude_patterns"])
    for folder in ["solutions", "submitted", "autograded", "feedback", ".venv", "_build"]:
        assert folder in excluded, folder


def test_lectures_cached_labs_unexecuted():
    """Are lectures executed through the cache without errors allowed, and every lab excluded from execution?"""
    execute = config()["execute"]
    assert execute["execute_notebooks"] == "cache"
    assert execute["allow_errors"] is False
    assert execute["timeout"] >= 300
    for slug in SLUGS:
        lab = PurePosixPath(ROOT.as_posix(), "notebooks", slug, f"{slug}.ipynb")
        lecture = PurePosixPath(ROOT.as_posix(), "book", f"{slug}.md")
        assert any(lab.match(p) for p in execute["exclude_patterns"]), slug
        assert not any(lecture.match(p) for p in execute["exclude_patterns"]), slug


def test_one_repository_setting():
    """Do the repository, issue and launch buttons come from the repository the labs install from?"""
    cfg = config()
    assert cfg["repository"]["url"] == REPOSITORY
    assert cfg["repository"]["branch"] == "main"
    assert cfg["html"]["use_repository_button"] and cfg["html"]["use_issues_button"]
    launch = cfg["launch_buttons"]
    assert launch["binderhub_url"] == "https://mybinder.org"
    assert launch["colab_url"] == "https://colab.research.google.com"
    assert "jupyterhub_url" in launch
    assert launch.get("thebe") is False  # thebe would load its kernel client from a CDN


def test_mathjax_offline_and_bibliography():
    """Is MathJax served from the site itself, and is the bibliography file configured and present?"""
    cfg = config()
    sphinx = cfg["sphinx"]["config"]
    assert "sphinx-mathjax-offline" in sphinx["extensions"]
    assert "mathjax_path" not in sphinx  # the extension sets it
    assert "sphinx_thebe" not in sphinx["extensions"]  # thebe loads from a CDN
    assert sphinx["nb_ipywidgets_js"] == {}
    for bib in cfg["bibtex_bibfiles"]:
        assert (ROOT / bib).is_file(), bib


def test_bibliography_entries():
    """Does the bibliography hold the papers the course is built on?"""
    keys = set(re.findall(r"@\w+\{([^,]+),", (ROOT / "book" / "references.bib").read_text()))
    for key in ["vaswani2017attention", "phuong2022formal", "ba2016layer", "he2016deep", "eckart1936approximation"]:
        assert key in keys, key


def test_licences():
    """Are the code (MIT) and the prose (CC BY 4.0) licensed in LICENSE files and in the site footer?"""
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert "Creative Commons Attribution 4.0" in (ROOT / "LICENSE-CONTENT").read_text()
    footer = config()["html"]["extra_footer"]
    assert "MIT" in footer and "CC BY 4.0" in footer


def test_makefile_builds_like_the_tests():
    """Do `make book` and the test fixture run the same strict build command?"""
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^book:.*\n\t(.+)$", makefile, re.MULTILINE)
    assert recipe, "no book: target in the Makefile"
    assert recipe.group(1).split()[1:] == BUILD_ARGS
    assert recipe.group(1).split()[0].endswith("jupyter-book")
    serve = re.search(r"^serve:.*\n\t(.+)$", makefile, re.MULTILINE).group(1)
    assert "http.server" in serve and "127.0.0.1" in serve and "_build/html" in serve


def test_site_publishes_the_course_wheel():
    """Is the site's own address set (html.baseurl), and does `make book` put the course package's
    wheel under _build/html/wheels/, where the labs' install cells look for it?"""
    assert config()["html"]["baseurl"].startswith("https://") and config()["html"]["baseurl"].endswith("/")
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^book:.*\n((?:\t.+\n)+)", makefile, re.MULTILINE).group(1)
    assert "pip wheel" in recipe and "--wheel-dir _build/html/wheels" in recipe and "--no-deps" in recipe


def test_pages_workflow():
    """Does the GitHub Actions workflow build with `make book` and deploy _build/html to Pages on push?"""
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "book.yml").read_text())
    triggers = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads the key `on` as True
    assert triggers["push"]["branches"] == ["main"]
    assert wf["permissions"]["pages"] == "write" and wf["permissions"]["id-token"] == "write"
    build = wf["jobs"]["build"]["steps"]
    runs = [step.get("run", "") for step in build]
    assert any(run.startswith("make book") for run in runs)
    upload = next(s for s in build if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == "_build/html"
    deploy = wf["jobs"]["deploy"]
    assert deploy["needs"] == "build"
    assert any(s.get("uses", "").startswith("actions/deploy-pages") for s in deploy["steps"])


def test_figures_use_colour_blind_safe_maps():
    """Do the lectures and labs avoid colour maps that colour-blind readers cannot read (jet, rainbow, ...)?"""
    unsafe = {"jet", "rainbow", "hsv", "gist_rainbow", "nipy_spectral", "gist_ncar", "RdYlGn", "RdGy"}
    sources = [*(ROOT / "book").glob("*.md"), *(ROOT / "notebooks").glob("*/*.ipynb")]
    found = [
        (p.relative_to(ROOT).as_posix(), m)
        for p in sources
        for m in re.findall(r"cmap\s*=\s*\\?[\"']([\w]+)\\?[\"']", p.read_text())
        if m in unsafe
    ]
    assert not found, f"colour maps that are not colour-blind safe (use viridis, cividis or magma): {found}"
