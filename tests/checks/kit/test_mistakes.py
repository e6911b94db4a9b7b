"""Tests of the registry of mistake ids (``autograder/checks/kit/mistakes.py``) and of how a failure
carries its id.

That every registered id is raised by at least one wrong implementation is held by the tests
of the checks themselves: ``expect_failure`` (conftest.py) gathers the id of every failure a
wrong answer raises, asserts that a message naming a mistake carries that mistake's id, and a
session that ran all of tests/checks fails when some registered id was never raised.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

import autograder.checks as checks
from autograder.checks.kit import mistakes, variants
from autograder.checks.kit.core import check
from autograder.checks.kit.expect import expect_close, fail
from autograder.checks.kit.failures import CheckFailed, ForbiddenCall
from autograder.checks.kit.forbidden_ids import forbidden_id

KIT = Path(mistakes.__file__).parent
CHECKS = KIT.parent


def test_ids_are_well_formed_and_not_unnamed() -> None:
    """Is every id ``<exercise-or-topic>/<mistake>`` in lowercase kebab-case, and none "unnamed"?"""
    bad = [mistake for mistake in mistakes.MISTAKES if not mistakes.ID.fullmatch(mistake)]
    assert not bad and "unnamed" not in mistakes.MISTAKES


def test_ids_and_words_are_unique() -> None:
    """Is no id written twice in the registry (a dict literal would keep the last silently), and
    no mistake's words given to two ids?"""
    keys: list[str] = []
    for module, name in (
        ("mistakes.py", "NAMED"),
        ("mistakes_shared.py", "SHARED"),
        ("mistakes_modern.py", "MODERN"),
    ):  # NAMED holds SHARED's and MODERN's
        tree = ast.parse((KIT / module).read_text(encoding="utf-8"))
        literal = next(
            node.value
            for node in tree.body
            if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == name
        )
        assert isinstance(literal, ast.Dict)
        assert all(isinstance(k, ast.Constant) for k in literal.keys)
        keys += [k.value for k in literal.keys if isinstance(k, ast.Constant)]
    assert len(keys) == len(set(keys)) == len(mistakes.NAMED)
    words = list(mistakes.NAMED.values())
    assert len(words) == len(set(words))


def test_every_registered_words_give_back_their_id() -> None:
    """Do the words of each entry (varying parts filled in, a cut entry's words lengthened) map
    back to that entry's id, never to another's?"""
    for mistake, words in mistakes.NAMED.items():
        text = words.replace("{}", "-1").removesuffix("...") + (" and so on" if words.endswith("...") else "")
        assert mistakes.mistake_id(text) == mistake, (mistake, text)


def test_every_id_has_words_a_report_can_show() -> None:
    """Does every id, and "unnamed", have words for a report without a part that varies, each id's
    its own, and does an id no check raises say so rather than borrow another's words?"""
    shown = {mistake: mistakes.describe(mistake) for mistake in [*mistakes.MISTAKES, "unnamed"]}
    assert not [m for m, words in shown.items() if "{}" in words or not words.strip()]
    assert len(set(shown.values())) == len(shown)
    assert set(mistakes.DESCRIBED) <= set(shown)
    assert mistakes.describe("softmax/no-max-shift") == mistakes.NAMED["softmax/no-max-shift"]
    assert mistakes.describe("attention/nan-rows").endswith("…")
    assert "does not know" in mistakes.describe("softmax/made-up")


def test_every_exercise_has_a_forbidden_id() -> None:
    """Does every check of the package have its ``forbidden/<exercise>`` id, and no other?"""
    names = {name for name in checks.__all__ if name.startswith("check_")}
    assert {forbidden_id(name) for name in names} == set(mistakes.FORBIDDEN)


def _literal_mistake_words() -> list[tuple[str, int, str]]:
    """(module, line, words) of every mistake the checks name in a literal: a ``mistake=`` argument,
    the fourth argument of ``fail``, or a key of a dict of mistakes."""
    found = []
    for path in sorted(CHECKS.glob("lab*/*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            texts: list[ast.expr] = []
            if isinstance(node, ast.Call):
                texts += [kw.value for kw in node.keywords if kw.arg == "mistake"]
                if isinstance(node.func, ast.Name) and node.func.id == "fail" and len(node.args) >= 4:
                    texts.append(node.args[3])
                for kw in node.keywords:
                    if kw.arg == "mistakes" and isinstance(kw.value, ast.Dict):
                        texts += [k for k in kw.value.keys if k is not None]
            elif (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Dict)
                and any("mistake" in getattr(t, "id", "").lower() for t in node.targets)
            ):
                texts += [k for k in node.value.keys if k is not None]
            found += [
                (path.name, t.lineno, t.value)
                for t in texts
                if isinstance(t, ast.Constant) and isinstance(t.value, str)
            ]
    return found


def test_every_literal_mistake_of_the_checks_has_an_id() -> None:
    """Does every mistake the checks name in so many words (not only those the tests reach) have an id?"""
    words = _literal_mistake_words()
    assert len(words) > 100  # the scan sees the checks' mistakes
    missing = [(module, line, text) for module, line, text in words if mistakes.mistake_id(text) == "unnamed"]
    assert not missing


def test_every_wrong_answer_of_the_variants_has_an_id() -> None:
    """Does each named mistake of ``variants`` (written again in the registry) have its id?"""
    named = {
        name: value
        for name, value in vars(variants).items()
        if name.isupper() and isinstance(value, str) and " " in value
    }
    assert len(named) > 30
    assert not [name for name, words in named.items() if mistakes.mistake_id(words) == "unnamed"]


def test_fail_carries_the_id_and_keeps_the_message() -> None:
    """Does ``fail`` give its CheckFailed the id of the mistake it names, "unnamed" when it names
    none, with the message as it always was?"""
    with pytest.raises(CheckFailed) as info:
        fail("softmax(x)", "a", "b", "exp(x) not divided by its sum")
    assert info.value.mistake_id == "softmax/not-normalised"
    assert str(info.value) == (
        "  checked:  softmax(x)\n  expected: a\n  found:    b\n  likely mistake: exp(x) not divided by its sum"
    )
    with pytest.raises(CheckFailed) as info:
        fail("softmax(x)", "a", "b", hint="look")
    assert info.value.mistake_id == "unnamed"
    assert CheckFailed("anything").mistake_id == "unnamed"


def test_check_keeps_the_id_and_names_a_refusal_by_its_exercise() -> None:
    """Does a decorated check re-raise with the mistake's id, a sentinel's refusal as
    ``forbidden/<exercise>``, and a failure whose id was lost on the way (only its message
    crossed the boundary) with the id its message names?"""

    @check
    def check_softmax(candidate):
        x = torch.arange(6.0).reshape(2, 3)
        expect_close(
            "softmax(x)", candidate(x), x.softmax(-1), mistakes={"exp(x) not divided by its sum": lambda: x.exp()}
        )

    with pytest.raises(CheckFailed) as info:
        check_softmax(torch.exp)
    assert info.value.mistake_id == "softmax/not-normalised"

    @check
    def check_decode(candidate):
        raise ForbiddenCall("your code calls `x`.")

    with pytest.raises(ForbiddenCall) as info:
        check_decode(None)
    assert info.value.mistake_id == "forbidden/decode"

    @check
    def check_encode(candidate):
        raise CheckFailed(
            "  checked:  encode\n  likely mistake: the text not cut into words (pre_tokenize) before merging"
        )

    with pytest.raises(CheckFailed) as info:
        check_encode(None)
    assert info.value.mistake_id == "encode/not-pre-tokenized"
