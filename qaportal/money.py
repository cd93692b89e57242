"""Money helpers: amounts are ``Decimal`` in whole cents, never floats."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def to_cents(amount: Decimal) -> Decimal:
    """Round a money amount to whole cents, half up (the platforms' rule)."""
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


# ASCII digits with at most one point, an optional leading minus where allowed: what a
# person types as an amount. ``Decimal()`` takes far more (``1e1``, ``1_0``, full-width
# or Arabic-Indic digits, ``NaN``, ``sNaN``, ``Infinity``); none of it is money.
_PLAIN = re.compile(r"(-?)([0-9]{0,15})(?:\.([0-9]{1,15}))?", re.ASCII)
MONEY_FORMAT_HELP = (
    'Write the amount as plain decimal text, e.g. "0.50" or "12" '
    "(ASCII digits and one point; no exponent, underscores, spaces inside, "
    "NaN or Infinity)."
)


class MoneyFormatError(ValueError):
    """Text that is not a plain decimal amount; the message says what is expected."""


def money_parse(value: object, *, places: int | None = 2, allow_negative: bool = False) -> Decimal:
    """The one strict parser of amounts typed by people or scripts (API, pages, CSVs).

    Accepts ``str`` (surrounding whitespace ignored), ``int`` and a finite
    ``Decimal``; never ``float`` (a JSON number with a point is binary, not cents:
    send the amount as a string). At most ``places``
    decimal places (None: any). Raises ``MoneyFormatError`` otherwise, never
    ``InvalidOperation``.
    """
    if isinstance(value, bool):
        raise MoneyFormatError(MONEY_FORMAT_HELP)
    if isinstance(value, Decimal) and value.is_finite():
        text = format(value, "f")  # already a Decimal (a form's initial value)
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, str):
        text = value.strip()
    else:
        raise MoneyFormatError(MONEY_FORMAT_HELP)
    found = _PLAIN.fullmatch(text)
    if found is None or not (found.group(2) or found.group(3)):
        raise MoneyFormatError(MONEY_FORMAT_HELP)
    sign, _whole, fraction = found.groups()
    if sign and not allow_negative:
        raise MoneyFormatError("The amount cannot be negative.")
    if places is not None and fraction is not None and len(fraction.rstrip("0")) > places:
        raise MoneyFormatError(f"The amount has more than {places} decimal places.")
    return Decimal(text)
