"""The mistake ids the wrong answers of this test process raised, for the registry's test
(conftest.py: a session that ran every test of the checks fails if a registered id is missing)."""

from __future__ import annotations

from autograder.checks import mistakes

RAISED: set[str] = set()


def note(error: BaseException) -> None:
    """Record the id ``error`` carries; a check's failure that names a mistake must carry its id
    (the core's own tests name made-up mistakes, outside any check)."""
    named = getattr(error, "mistake_id", None)
    if not isinstance(named, str):
        return
    RAISED.add(named)
    message = str(error)
    if message.startswith("check_") and "likely mistake:" in message:
        likely = mistakes.id_in_message(message)
        assert likely != "unnamed", f"the mistake this message names has no id in mistakes.py:\n{message}"
        assert likely == named, f"the failure's mistake_id is {named!r}, its message names {likely!r}"
