"""Student-chosen text made safe where the grader shows it: a line of the summary, a cell of a
spreadsheet. Shared by the output and report stations (a name reaches both)."""

from __future__ import annotations

import unicodedata

# characters that change how the text around them is shown: bidirectional overrides and isolates
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f")
# a spreadsheet reads a cell that starts with one of these as a formula (OWASP CSV injection)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def printable(text: str) -> str:
    """``text`` on one line for the summary: control, line-breaking and bidirectional
    characters written as escapes, so that no name can forge or reorder a line."""
    out = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif unicodedata.category(char) in ("Cc", "Zl", "Zp", "Cs") or char in _BIDI:
            out.append(char.encode("unicode_escape", "backslashreplace").decode("ascii"))
        else:
            out.append(char)
    return "".join(out)


def csv_cell(text: str) -> str:
    """A cell a spreadsheet shows as text: a leading ``= + - @``, tab or carriage return gets
    a single quote in front (the OWASP advice for CSV injection)."""
    return "'" + text if text.startswith(_FORMULA_START) else text
