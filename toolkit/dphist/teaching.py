"""Readable feedback for coursework autograder tests (``notebooks/coursework/``).

An autograder test is a notebook cell that prints nothing when the student's
answer is right.  Otter-Grader compares the cell's output with the expected
(empty) output, so anything printed becomes the feedback the student reads.
:func:`hint` turns a failed check into one short message in plain words,
instead of a traceback through dphist's internals::

    with hint("the noise must scale with sensitivity / epsilon"):
        assert abs(spread - expected) < tolerance, f"measured {spread:.2f}, expected {expected:.2f}"

prints, when the assertion fails::

    HINT: the noise must scale with sensitivity / epsilon (measured 1.02, expected 3.00)

An exception raised by the student's code (or by dphist refusing it) is
reported by its type and message only.
"""
from __future__ import annotations

from contextlib import contextmanager

#: a message longer than this is cut (a student reads the first line anyway)
_MAX_DETAIL = 300


@contextmanager
def hint(message: str):
    """Run the checks in the ``with`` block; on any failure print ``HINT: message (detail)``.

    The exception is swallowed on purpose: the printed line is the test's
    verdict (a non-empty output fails an Otter-Grader test case).
    """
    try:
        yield
    except AssertionError as err:
        print(_format(message, str(err)))
    except Exception as err:  # noqa: BLE001 - any failure of student code becomes a hint
        print(_format(message, f"your code raised {type(err).__name__}: {err}"))


def _format(message: str, detail: str) -> str:
    detail = " ".join(detail.split())
    if len(detail) > _MAX_DETAIL:
        detail = detail[:_MAX_DETAIL - 3] + "..."
    return f"HINT: {message}" + (f" ({detail})" if detail else "")
