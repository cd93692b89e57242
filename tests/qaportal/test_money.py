"""The one strict parser of typed amounts: plain ASCII decimal text, nothing
``Decimal()`` would read besides."""

from __future__ import annotations

from decimal import Decimal

import pytest

from qaportal.money import MoneyFormatError, money_parse

HOSTILE = [
    "1e1",
    "1E-2",
    "1_0",
    "\uff11\uff10",  # full-width digits
    "\u0661\u0660",  # Arabic-Indic digits
    "NaN",
    "sNaN",
    "-NaN",
    "Infinity",
    "-Infinity",
    "inf",
    "0x10",
    "1 000",
    "1,50",
    "+1",
    "",
    ".",
    "1.",
    True,
    None,
    [1],
    float("nan"),
    float("inf"),
    1e20,
    0.5,
]


@pytest.mark.parametrize("text", HOSTILE)
def test_what_decimal_would_read_is_refused(text):
    with pytest.raises(MoneyFormatError, match="plain decimal text"):
        money_parse(text)


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        ("12", "12"),
        (" 0.50 ", "0.50"),
        (".5", "0.5"),
        (3, "3"),
        (Decimal("0.25"), "0.25"),
        ("1.230", "1.230"),
    ],
)
def test_plain_amounts_are_read_exactly(text, amount):
    assert money_parse(text) == Decimal(amount)


def test_sign_and_places():
    with pytest.raises(MoneyFormatError, match="cannot be negative"):
        money_parse("-1")
    assert money_parse("-1", allow_negative=True) == Decimal("-1")
    with pytest.raises(MoneyFormatError, match="more than 2 decimal places"):
        money_parse("0.005")
    assert money_parse("0.005", places=None) == Decimal("0.005")
