"""Does rendering a submission's markdown take time linear in its length, hostile TeX included,
and render exactly what mistune's own scanner renders?"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import time

import pytest

from autograder.grading.grader.output import math_markup, math_scan

# Openers with no closer after them: each made mistune's regex read to the end of the text
HOSTILE = ["\\begin{a}", "\\[", "\\\\(", "\\\\[", "$$ ", "\\begin{a}\\begin{b}\\end{c}"]
PIECES = ["$", "$$", "\\", "\\\\", "[", "]", "(", ")", "\\begin{a}", "\\end{a}", "\\begin{b*}", "\\end{b*}", "a", " ",
          "\n", "\n\n", "`", "*", "x_1", "- ", "> ", "    ", "#", "{", "}", "<b>", "\\$", "&amp;", "\t"]  # fmt: skip


def _render_with_mistunes_scanner(source: str) -> str:
    """``source`` rendered by math_markup's parsers with mistune's own regex scanner."""
    saved = math_scan.compile_sc
    math_scan.compile_sc = lambda parser, rules: None  # type: ignore[assignment]
    try:
        return math_markup.render_markdown(source)
    finally:
        math_scan.compile_sc = saved


def test_the_linear_scanner_renders_what_mistunes_renders() -> None:
    """On many random texts of math delimiters, code, quotes, lists and escapes, does the page
    come out byte for byte as with mistune's own scanner (so no grading output changes)?"""
    rng = random.Random(44)
    for _ in range(1500):
        source = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 30)))
        assert math_markup.render_markdown(source) == _render_with_mistunes_scanner(source), repr(source)


@pytest.mark.parametrize("form", sorted(math_scan.FORMS))
def test_a_math_rule_matches_exactly_where_a_closer_follows_its_opener(form: str) -> None:
    """Does each math rule's regex match at exactly the positions the scanner computes from its
    openers and closers, on random texts of delimiters?"""
    spec = {**math_markup._InlineParser.SPECIFICATION, **math_markup._BlockParser.SPECIFICATION}
    regex = re.compile(spec[form])
    rng = random.Random(form)
    for _ in range(400):
        src = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 25)))
        expected = [p for p in range(len(src)) if regex.match(src, p)]
        assert math_scan._openers(src, math_scan.FORMS[form]) == expected, repr(src)


def _seconds(source: str) -> float:
    start = time.perf_counter()
    math_markup.render_markdown(source)
    return time.perf_counter() - start


@pytest.mark.parametrize("unit", HOSTILE)
def test_hostile_tex_renders_in_time_linear_in_its_length(unit: str) -> None:
    """Does 8 times as much hostile TeX take well under 8 squared times as long (it took 64 times
    as long: 16 KB of ``\\\\[`` in 3.8 s, 64 KB in 38 s)? The best of two runs, against a
    factor of 24, so that a loaded machine does not make it fail."""
    small, large = (unit * (kb * 1024 // len(unit)) for kb in (16, 128))
    ratio = min(_seconds(large) for _ in range(2)) / max(min(_seconds(small) for _ in range(2)), 1e-3)
    assert ratio < 24, f"{unit!r}: 8x the text took {ratio:.1f}x the time"


def test_a_megabyte_of_hostile_tex_renders_within_two_minutes() -> None:
    """Does 1 MB of repeated ``\\begin{a}`` render in a child within 120 s (it would have
    taken about 47 minutes; it takes a few seconds)?"""
    code = (
        "from autograder.grading.grader.output.sanitize_notebook import clean_markdown\n"
        "clean_markdown('\\\\begin{a}' * (2**20 // 9))\n"
    )
    try:
        subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("1 MB of \\begin{a} did not render within 120 s")
