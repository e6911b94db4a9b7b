"""Similar submissions: pairs of students whose answers to an exercise are nearly the same.

A flag for the instructor to read the answers side by side; it never changes a point.

Normalised code: the code that answers the exercise (``bound``: what a run of the notebook
leaves bound to its names, wherever the student wrote it), tokenised by Python's own ``tokenize``;
the lines the release's stub already gave (the ``def`` line, the docstring) dropped, and
comments and whitespace with them; every name that is not an attribute (``x``, ``torch``,
``my_scores``) becomes one token ``N``, every string ``S``; keywords, operators, numbers and
attribute names (``.softmax``, ``.sum``) stay. So renaming variables and reformatting lines
change nothing, while the operations an answer calls still count.

Fingerprints: copydetect's winnowing (MOSS's algorithm) over k-grams of ``NOISE`` tokens with
a window of ``WINDOW``, the k-grams hashed by CRC-32 so that a rerun gives the same report.

Shared code that says nothing is taken out before comparing, as MOSS does (copydetect's own
boilerplate filtering is not used: it is done here): the fingerprints of the release's stub and
of the reference solution, and every fingerprint found in more than ``MAX_SHARED`` (M) of the
class's answers to the exercise (MOSS's ``-m``, default 10): code that many students typed,
each on their own (the standard answer, with the small variations of people typing it), is
no evidence that two of them worked together.

Two answers are similar when, after that, they share at least ``MIN_SHARED`` fingerprints and
those are at least ``THRESHOLD`` of the smaller one's (containment: shared / the smaller's), so
that an answer holding nearly all of another's is flagged whatever it adds (an unused helper, a
line of its own); the Jaccard overlap (shared / either) is shown beside it. Answers shorter than
``MIN_TOKENS`` normalised tokens (K) are not compared: short correct answers converge
(``return x @ W.T``), and a match between them says nothing. The report shows who resembles
whom: one ``Match`` per two students, with the exercises they answered alike; a student is never
listed beside one whose answers theirs do not resemble (no chain through a third).
"""

from __future__ import annotations

import io
import keyword
import math
import re
import tokenize
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

MIN_TOKENS = 30  # K: answers with fewer normalised tokens are not compared
NOISE = 5  # k: tokens per fingerprinted k-gram (a match shorter than this is noise)
WINDOW = 4  # w: winnowing window; every match of NOISE + WINDOW - 1 tokens is seen
THRESHOLD = 0.8  # share of the smaller answer's fingerprints found in the other from which the pair is flagged
MAX_SHARED = 10  # M: a fingerprint in more than M answers of a class to one exercise is dropped (MOSS's -m)
MIN_SHARED = 8  # fingerprints two answers must share beyond the boilerplate (winnowing keeps ~2/(w+1) k-grams)

_DROPPED = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
    tokenize.TYPE_COMMENT,
}
_STRING_START = {tokenize.STRING, getattr(tokenize, "FSTRING_START", tokenize.STRING)}  # f-strings: Python 3.12
_STRING_REST = {getattr(tokenize, "FSTRING_MIDDLE", -1), getattr(tokenize, "FSTRING_END", -1)}


@dataclass(frozen=True)
class Pair:
    """Two students whose answers to one exercise are nearly the same, with the fingerprints
    (the boilerplate taken out) of each and those they share."""

    exercise: str
    first: str
    second: str
    shared: int
    first_prints: int
    second_prints: int

    @property
    def contained(self) -> float:
        """The share of the smaller answer's fingerprints found in the other's, 0..1 (what is flagged)."""
        return self.shared / min(self.first_prints, self.second_prints)

    @property
    def similarity(self) -> float:
        """The Jaccard overlap of the two answers' fingerprints, 0..1."""
        return self.shared / (self.first_prints + self.second_prints - self.shared)

    @property
    def inside(self) -> tuple[str, str]:
        """(the student whose answer is the smaller, the other): the first's is inside the second's."""
        return (self.first, self.second) if self.first_prints <= self.second_prints else (self.second, self.first)


def _raw_tokens(source: str) -> list[tuple[int, int, str]]:
    """(token type, line, text) of ``source``; an answer Python cannot tokenise is read as words."""
    try:
        return [(t.type, t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(source).readline)]
    except (tokenize.TokenError, IndentationError, SyntaxError):  # broken answers: words and symbols, by line
        return [
            (tokenize.NAME if w[0].isalpha() or w[0] == "_" else tokenize.OP, n, w)
            for n, line in enumerate(source.splitlines(), 1)
            if not line.lstrip().startswith("#")
            for w in re.findall(r"\w+|[^\w\s]", line)
        ]


def normalise(source: str, given: Iterable[str] = ()) -> list[str]:
    """``source``'s tokens with names, strings, comments, whitespace and the ``given`` lines
    (the stub's, compared stripped) taken out as the module's docstring says."""
    skip = {line.strip() for line in given if line.strip()}
    lines = source.splitlines()
    out: list[str] = []
    previous = ""
    for kind, row, text in _raw_tokens(source):
        if kind in _DROPPED or (0 < row <= len(lines) and lines[row - 1].strip() in skip):
            continue
        if kind == tokenize.NAME and not keyword.iskeyword(text) and previous != ".":
            out.append("N")
        elif kind in _STRING_START:
            out.append("S")
        elif kind == tokenize.NEWLINE:
            out.append(";")
        elif kind in _STRING_REST:
            continue
        else:
            out.append(text)
        previous = text
    return out


def _as_text(tokens: list[str]) -> str:
    """One character per token, so that copydetect's k-grams of characters are k-grams of tokens."""
    return "".join(chr(0x4E00 + zlib.crc32(t.encode()) % 0x5000) for t in tokens)


def fingerprints(tokens: list[str]) -> set[int]:
    """The winnowed fingerprints of a normalised answer: copydetect's winnowing (MOSS's) over
    CRC-32 hashes of its k-grams, which, unlike Python's ``hash``, are the same in every run."""
    import numpy as np
    from copydetect.utils import winnow

    text = _as_text(tokens)
    if len(text) < NOISE:
        return set()
    hashes = np.array([zlib.crc32(text[i : i + NOISE].encode()) for i in range(len(text) - NOISE + 1)], dtype=np.int64)
    selected, _ = winnow(hashes, WINDOW, remove_duplicates=False)
    return {int(h) for h in selected}


def containment(a: set[int], b: set[int]) -> float:
    """The share of the smaller set found in the other (what flags a pair), 0 when either is empty."""
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0


def _candidates(prints: dict[str, set[int]]) -> set[tuple[str, str]]:
    """The pairs that can reach THRESHOLD, by prefix filtering (a set-similarity join): with every
    set sorted rarest fingerprint first, a set A that shares t |A| of its n = |A| fingerprints with
    another holds one of them in its first n - ceil(t n) + 1 (the rest are too few), so probing an
    index of every fingerprint with those finds every pair, A the smaller; a class of 500 then
    costs far fewer than its 124,750 comparisons, which the fingerprints common to all would need."""
    frequency = Counter(h for hashes in prints.values() for h in hashes)
    index: defaultdict[int, list[str]] = defaultdict(list)
    for student in sorted(prints):
        for h in prints[student]:
            index[h].append(student)
    found: set[tuple[str, str]] = set()
    for student, hashes in prints.items():
        ordered = sorted(hashes, key=lambda h: (frequency[h], h))
        for h in ordered[: len(ordered) - math.ceil(THRESHOLD * len(ordered)) + 1]:
            found.update((min(student, other), max(student, other)) for other in index[h] if other != student)
    return found


def boilerplate(sources: Iterable[str], given: Iterable[str] = ()) -> set[int]:
    """The fingerprints of code every student was given or is expected to write: ``sources``
    (the stub as released, the reference solution), normalised as answers are."""
    given = list(given)
    return {h for source in sources for h in fingerprints(normalise(source, given))}


def similar_pairs(
    exercise: str,
    answers: dict[str, str],
    given: Iterable[str] = (),
    ignored: Iterable[int] = (),
    max_shared: int = MAX_SHARED,
) -> list[Pair]:
    """The pairs of students (``answers``: student -> the exercise's answer source) whose
    normalised answers of at least MIN_TOKENS tokens, the ``ignored`` fingerprints (``boilerplate``)
    and those of more than ``max_shared`` answers taken out, share MIN_SHARED fingerprints, and
    THRESHOLD or more of the smaller's; the most contained first, then the most similar."""
    given, ignored = list(given), set(ignored)
    tokens = {student: normalise(source, given) for student, source in sorted(answers.items())}
    every = {student: fingerprints(t) - ignored for student, t in tokens.items()}
    common = Counter(h for hashes in every.values() for h in hashes)  # in how many of the class's answers
    prints = {
        s: kept
        for s, hashes in every.items()
        if len(tokens[s]) >= MIN_TOKENS and len(kept := {h for h in hashes if common[h] <= max_shared}) >= MIN_SHARED
    }
    pairs = [
        Pair(exercise, a, b, len(prints[a] & prints[b]), len(prints[a]), len(prints[b]))
        for a, b in _candidates(prints)
        if len(prints[a] & prints[b]) >= MIN_SHARED
    ]
    return sorted(
        (p for p in pairs if p.contained >= THRESHOLD),
        key=lambda p: (-p.contained, -p.similarity, p.first, p.second),
    )


@dataclass(frozen=True)
class Match:
    """Two students whose answers to one or more exercises are alike, with those pairs (one per exercise)."""

    students: tuple[str, str]
    pairs: tuple[Pair, ...]

    @property
    def exercises(self) -> tuple[str, ...]:
        """The exercises on which the two answered alike, in the order first met."""
        return tuple(dict.fromkeys(p.exercise for p in self.pairs))


def matches(pairs: Iterable[Pair]) -> list[Match]:
    """``pairs`` gathered per two students (on any exercise): who resembles whom, and on what.
    Most exercises alike first, then the most contained, then by students."""
    per: defaultdict[tuple[str, str], list[Pair]] = defaultdict(list)
    for p in pairs:
        per[(p.first, p.second)].append(p)
    return sorted(
        (Match(students, tuple(alike)) for students, alike in per.items()),
        key=lambda m: (-len(m.exercises), -max(p.contained for p in m.pairs), m.students),
    )
