"""The layout of MTurk's batch results CSV ("Batch_<id>_batch_results.csv"): columns,
dates, rewards, and the cell guard against spreadsheet formulas.

Pure functions over strings, shared by the import (``campaigns.platforms.mturk.csv.results``)
and the export (``campaigns.platforms.mturk.csv.selectors``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation
from zoneinfo import ZoneInfo

from qaportal.money import MoneyFormatError, money_parse

# MTurk's own columns, in the order its batch results file has them; then come the
# ``Input.*`` columns (the batch's input row), the ``Answer.*`` columns (the worker's
# form fields) and the requester's ``Approve`` / ``Reject`` columns.
HIT_COLUMNS = (
    "HITId",
    "HITTypeId",
    "Title",
    "Description",
    "Keywords",
    "Reward",
    "CreationTime",
    "MaxAssignments",
    "RequesterAnnotation",
    "AssignmentDurationInSeconds",
    "AutoApprovalDelayInSeconds",
    "Expiration",
    "NumberOfSimilarHITs",
    "LifetimeInSeconds",
)
ASSIGNMENT_COLUMNS = (
    "AssignmentId",
    "WorkerId",
    "AssignmentStatus",
    "AcceptTime",
    "SubmitTime",
    "AutoApprovalTime",
    "ApprovalTime",
    "RejectionTime",
    "RequesterFeedback",
    "WorkTimeInSeconds",
    "LifetimeApprovalRate",
    "Last30DaysApprovalRate",
    "Last7DaysApprovalRate",
)
STANDARD_COLUMNS = HIT_COLUMNS + ASSIGNMENT_COLUMNS
REVIEW_COLUMNS = ("Approve", "Reject")
INPUT_PREFIX = "Input."
ANSWER_PREFIX = "Answer."
# ``Input.id`` (or ``Input.external_id``) names the item, as in item uploads.
INPUT_ID_KEYS = ("id", "external_id")

# Ids the export gives what was never published on MTurk (local campaigns, pending HITs).
LOCAL_HIT_PREFIX = "qaportal-hit-"
LOCAL_ASSIGNMENT_PREFIX = "qaportal-assignment-"
LOCAL_GROUP_PREFIX = "qaportal-stage-"

# Assignment statuses in the file and in qaportal.
STATUS_FROM_MTURK = {"Submitted": "submitted", "Approved": "approved", "Rejected": "rejected"}
STATUS_TO_MTURK = {v: k for k, v in STATUS_FROM_MTURK.items()}

# Java's Date.toString(), which MTurk writes: "Mon Nov 18 08:46:18 PST 2019".
_DATE = re.compile(
    r"^(?:[A-Za-z]{3},? )?([A-Za-z]{3}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) "
    r"([A-Za-z]{3,4}|[+-]\d{4}) (\d{4})$"
)
_MONTHS = {
    name: n
    for n, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        start=1,
    )
}
_ZONES = {
    "PST": -8,
    "PDT": -7,
    "UTC": 0,
    "GMT": 0,
    "MST": -7,
    "MDT": -6,
    "CST": -6,
    "CDT": -5,
    "EST": -5,
    "EDT": -4,
}
# MTurk writes its times in Seattle's zone.
MTURK_ZONE = ZoneInfo("America/Los_Angeles")
_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTH_NAMES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

# A cell a spreadsheet would run as a formula (OWASP "CSV injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


class CellError(ValueError):
    """A cell that cannot be read; the message says what was expected."""


def mturk_time_parse(value: str) -> datetime | None:
    """A time as MTurk writes it (``Mon Nov 18 08:46:18 PST 2019``), in UTC; None if empty.

    PST/PDT (and the other US zones, UTC/GMT, or a ``-0800`` offset) are honoured;
    an ISO 8601 time with an offset is accepted too (what spreadsheets may turn it into).
    """
    text = value.strip()
    if not text:
        return None
    match = _DATE.match(text)
    if match is None:
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise CellError(f"{text!r} is not a time like 'Mon Nov 18 08:46:18 PST 2019'") from None
        if parsed.tzinfo is None:
            raise CellError(f"{text!r} has no time zone") from None
        return parsed.astimezone(UTC)
    month_name, day, hour, minute, second, zone, year = match.groups()
    month = _MONTHS.get(month_name.lower())
    if month is None:
        raise CellError(f"{text!r}: unknown month {month_name!r}")
    if zone[0] in "+-":
        sign = -1 if zone[0] == "-" else 1
        offset = sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[3:5]))
    elif zone.upper() in _ZONES:
        offset = timedelta(hours=_ZONES[zone.upper()])
    else:
        raise CellError(f"{text!r}: unknown time zone {zone!r} (MTurk writes PST or PDT)")
    try:
        local = datetime(
            int(year),
            month,
            int(day),
            int(hour),
            int(minute),
            int(second),
            tzinfo=timezone(offset),
        )
    except ValueError as exc:
        raise CellError(f"{text!r}: {exc}") from None
    return local.astimezone(UTC)


def mturk_time_format(value: datetime | None) -> str:
    """A time as MTurk writes it, in Seattle's zone (PST or PDT); empty for None."""
    if value is None:
        return ""
    local = value.astimezone(MTURK_ZONE)
    return (
        f"{_WEEKDAYS[local.weekday()]} {_MONTH_NAMES[local.month - 1]} {local.day:02d} "
        f"{local:%H:%M:%S} {local.tzname()} {local.year}"
    )


def mturk_reward_parse(value: str) -> Decimal | None:
    """``$1.25`` (or ``1.25``, ``USD 1.25``) as a Decimal; None if empty."""
    text = value.strip()
    if not text:
        return None
    bare = text.removeprefix("USD").strip().removeprefix("$").strip()
    try:
        amount = money_parse(bare)
    except MoneyFormatError as exc:
        raise CellError(f"{text!r} is not an amount like '$1.25': {exc}") from None
    return amount.quantize(Decimal("0.01"))


def mturk_reward_format(value: Decimal) -> str:
    return f"${value:.2f}"


def whole_number_parse(value: str, *, minimum: int = 0) -> int | None:
    """A whole number cell (``60``, ``60.0``); None if empty."""
    text = value.strip()
    if not text:
        return None
    try:
        number = Decimal(text)
    except InvalidOperation:
        raise CellError(f"{text!r} is not a whole number") from None
    if not number.is_finite() or number != number.to_integral_value() or number < minimum:
        raise CellError(f"{text!r} is not a whole number of at least {minimum}")
    return int(number)


def cell_neutralise(value: str) -> str:
    """A leading apostrophe for a cell a spreadsheet would run as a formula.

    Apostrophes already before a formula character get one more, so that
    ``cell_restore`` gives back exactly the original text.
    """
    return "'" + value if value.lstrip("'").startswith(FORMULA_STARTS) else value


def cell_restore(value: str) -> str:
    """Undo ``cell_neutralise``: drop the apostrophe it put before a formula character."""
    if value.startswith("'") and value.lstrip("'").startswith(FORMULA_STARTS):
        return value[1:]
    return value
