"""``deadlock_retried``: a deadlock's victim runs again when it is the outermost
transaction, and the error goes up to a caller's transaction otherwise."""

from __future__ import annotations

import pytest
from django.db import OperationalError, transaction

from qaportal.deadlock import TRIES, deadlock_retried, is_deadlock


class _Cause(Exception):
    def __init__(self, pgcode: str) -> None:
        super().__init__(pgcode)
        self.pgcode = pgcode


def _error(pgcode: str) -> OperationalError:
    error = OperationalError("deadlock detected")
    error.__cause__ = _Cause(pgcode)
    return error


def _failing(times: int, pgcode: str = "40P01") -> tuple[list[int], object]:
    calls: list[int] = []

    @deadlock_retried
    def service() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise _error(pgcode)
        return "stored"

    return calls, service


def test_a_deadlock_victim_runs_again_and_succeeds() -> None:
    calls, service = _failing(2)
    assert service() == "stored"  # type: ignore[operator]
    assert len(calls) == 3


def test_it_gives_up_after_its_tries() -> None:
    calls, service = _failing(TRIES + 5)
    with pytest.raises(OperationalError):
        service()  # type: ignore[operator]
    assert len(calls) == TRIES


def test_other_errors_are_not_retried() -> None:
    calls, service = _failing(1, pgcode="57014")  # statement timeout
    with pytest.raises(OperationalError):
        service()  # type: ignore[operator]
    assert len(calls) == 1
    assert not is_deadlock(_error("57014"))
    assert is_deadlock(_error("40P01"))


@pytest.mark.django_db
def test_inside_a_callers_transaction_the_error_goes_up() -> None:
    calls, service = _failing(1)
    with pytest.raises(OperationalError), transaction.atomic():
        service()  # type: ignore[operator]
    assert len(calls) == 1
