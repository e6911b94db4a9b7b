"""The scanner of ``math_markup``'s parsers, matching what mistune's would match in time linear
in the markdown's length.

mistune finds the next rule that applies with one regex, the alternation of its rules
(``compile_sc``). nbconvert's math rules are an opening delimiter, a lazy ``.*?`` and a closing
one: at an opener with no closer after it, the regex reads to the end of the text before it
fails, and a search tries every opener, so ``\\begin{a}`` repeated costs time quadratic in its
length (32 KB took 2.7 s). Here a math rule is decided from the positions of its closers, found
once per text: it matches at an opener exactly when a closer follows (the lazy ``.*?`` then stops
at the first one), and only then is its regex run, over text that the match consumes. The other
rules are mistune's own regexes, each search's result kept for the searches after it that start
before it (a match at a position depends on the text alone, not on where the search began).
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass
from typing import Any

# A form of a math rule: its opener, its closer (each may capture the environment's ``name``,
# which must then be the same), and the fewest characters between them (``.+?``: 1).
Form = tuple[str, str, int]
_DOLLARS = (r"(?<!\\)\$\$", r"(?<!\\)\$\$", 0)
_ENVIRONMENT = (r"\\begin\{(?P<name>[a-z]*\*?)\}", r"\\end\{(?P<name>[a-z]*\*?)\}", 0)
# Each rule's regex (math_markup's parsers, and nbconvert's they extend) as its forms: mistune's
# inline rules, then the block rule that keeps multi-line math in one paragraph.
FORMS: dict[str, list[Form]] = {
    "block_math_tex": [_DOLLARS],
    "block_math_latex": [(r"(?<!\\)\\{1,2}\[", r"(?<!\\)\\{1,2}\]", 0)],
    "inline_math_tex": [(r"(?<![$\\])\$", r"(?<![$\\])\$", 1)],
    "inline_math_latex": [(r"(?<!\\)\\{1,2}\(", r"(?<!\\)\\{1,2}\)", 0)],
    "latex_environment": [_ENVIRONMENT],
    "multiline_math": [_DOLLARS, (r"\\{1,2}\[", r"\\{1,2}\]", 0), _ENVIRONMENT],
}


@functools.cache
def _compiled(form: Form) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """Where ``form`` opens, where it closes, and (unnamed) its last closer, each by one regex."""
    opener, closer, _ = form
    return (
        re.compile(f"(?=(?P<opener>{opener}))"),
        re.compile(f"(?=(?P<closer>{closer}))"),
        re.compile(f"(?s:.*)(?={closer})"),  # greedy, then back to the last closer: one pass
    )


def _openers(src: str, forms: list[Form]) -> list[int]:
    """The sorted positions where one of ``forms`` opens and a closer of it follows."""
    found: list[int] = []
    for form in forms:
        openers, closers, last_closer = _compiled(form)
        fewest = form[2]
        if "(?P<name>" not in form[1]:
            last = last_closer.match(src)
            if last is not None:  # an opener that ends before the last closer (endpos cuts the text)
                found += [m.start() for m in openers.finditer(src, 0, max(0, last.end() - fewest))]
            continue
        named = {m["name"]: m.start() for m in closers.finditer(src)}  # each name's last closer
        found += [m.start() for m in openers.finditer(src) if named.get(m["name"], -1) >= m.end("opener") + fewest]
    return sorted(set(found)) if len(forms) > 1 else found


@dataclass
class _Seen:
    """What a scanner knows of one text: where its math rules match, and each plain part's last search."""

    src: str
    math: dict[str, list[int]]
    searched: dict[int, tuple[int, re.Match[str] | None]]


class LinearScanner:
    """Stands in for the regex ``compile_sc`` makes of ``rules`` (``match`` and ``search`` from a
    position, the first rule in order winning at a position), in linear time."""

    def __init__(self, specification: dict[str, str], rules: list[str], flags: int) -> None:
        # consecutive rules without math stay one alternation, as mistune compiles them
        self.steps: list[tuple[str | None, re.Pattern[str]]] = []
        plain: list[str] = []
        for name in [*rules, None]:
            if (name is None or name in FORMS) and plain:
                regex = "|".join(f"(?P<{rule}>{specification[rule]})" for rule in plain)
                self.steps.append((None, re.compile(regex, flags)))
                plain = []
            if name in FORMS:
                self.steps.append((name, re.compile(f"(?P<{name}>{specification[name]})", flags)))
            elif name is not None:
                plain.append(name)
        self.seen: dict[int, _Seen] = {}

    def _of(self, src: str) -> _Seen:
        seen = self.seen.get(id(src))
        if seen is None or seen.src is not src:
            math = {name: _openers(src, FORMS[name]) for name, _ in self.steps if name is not None}
            seen = self.seen[id(src)] = _Seen(src, math, {})  # holds src: its id is not reused meanwhile
        return seen

    def match(self, src: str, pos: int = 0) -> re.Match[str] | None:
        seen = self._of(src)
        for name, regex in self.steps:
            if name is None:
                found = regex.match(src, pos)
                if found:
                    return found
                continue
            at = bisect.bisect_left(seen.math[name], pos)
            if at < len(seen.math[name]) and seen.math[name][at] == pos:
                found = regex.match(src, pos)
                assert found is not None, (name, src[pos : pos + 80])  # a closer follows: it matches
                return found
        return None

    def search(self, src: str, pos: int = 0) -> re.Match[str] | None:
        seen = self._of(src)
        first: int | None = None
        for index, (name, regex) in enumerate(self.steps):
            if name is None:
                start, found = seen.searched.get(index, (len(src) + 1, None))
                if not (start <= pos and (found is None or found.start() >= pos)):
                    found = regex.search(src, pos)
                    seen.searched[index] = (pos, found)
                at = found.start() if found else None
            else:
                positions = seen.math[name]
                after = bisect.bisect_left(positions, pos)
                at = positions[after] if after < len(positions) else None
            if at is not None and (first is None or at < first):
                first = at
        return None if first is None else self.match(src, first)


def compile_sc(parser: Any, rules: list[str] | None) -> Any:
    """What ``parser.compile_sc(rules)`` returns: mistune's regex where ``rules`` hold no math
    rule, else a ``LinearScanner`` of them, made once per parser and list of rules."""
    rules = list(parser.rules if rules is None else rules)
    if not set(rules) & set(FORMS):
        return None
    scanners = parser.__dict__.setdefault("_linear_scanners", {})
    key = "|".join(rules)
    if key not in scanners:
        scanners[key] = LinearScanner(parser.specification, rules, parser.sc_flag)
    return scanners[key]
