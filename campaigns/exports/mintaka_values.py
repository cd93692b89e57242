"""Values as Mintaka's release writes them (Sen et al., COLING 2022, §3 and the
released JSON): question value entities (``entityType`` ordinal, date, cardinal,
money, quantity, time, percent, with ``name`` the value) and answer values
(numerical answers as numbers, dates as ISO strings).

Examples from the release: "fourth" -> 4, "007" -> 7, "seven" -> 7, "1940" -> 1940,
"1980s" -> "1980:1989", "2019-2020" -> "2019:2020", "March 16, 1751" -> "1751-03-16",
"$200 million" -> 200000000, "74 km" -> 74; answers "20-Oct-56" -> "1956-10-20",
"September 2011." -> "2011-09", "46 years" -> 46, "6'2\"" -> "6'2\"".
Text that does not parse is kept as text, as the release keeps "30 BC".
"""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal, InvalidOperation

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "a": 1, "an": 1, "single": 1, "dozen": 12,
}  # fmt: skip
_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13,
    "fourteenth": 14, "fifteenth": 15, "twentieth": 20, "hundredth": 100,
}  # fmt: skip
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12,
           "k": 10**3, "m": 10**6, "bn": 10**9}  # fmt: skip
_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTHS = {m: i + 1 for i, m in enumerate(_MONTH_NAMES)}
_NUMBER = re.compile(
    r"(?P<cur>us\s?)?[$\u20ac\u00a3]?\s?(?P<num>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<dec>\d+))?"
    r"\s*(?P<scale>thousand|million|billion|trillion|bn|k|m)?\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"^(?:the year\s+)?(\d{3,4})$")
_DECADE = re.compile(r"^(?:the\s+)?(?:early\s+|mid\s+|late\s+)?(\d{2,3})0'?s$")
_RANGE = re.compile(r"^(?:from\s+)?(\d{4})\s*(?:-|\u2013|to)\s*(\d{4})$")
_DMY = re.compile(r"^(\d{1,2})[- /.]([a-z]{3,9})\.?[- /.,]*(\d{2}|\d{4})$")
_MDY = re.compile(r"^([a-z]{3,9})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})$")
_MY = re.compile(r"^([a-z]{3,9})\.?,?\s+(\d{4})$")
_ISO = re.compile(r"^\d{4}-\d{2}(?:-\d{2})?$")


def _as_number(value: Decimal) -> int | str:
    return int(value) if value == value.to_integral_value() else str(value.normalize())


def _spelled(text: str) -> int | None:
    words = [w for w in re.split(r"[\s-]+", text.casefold()) if w and w != "and"]
    if not words:
        return None
    total = current = 0
    for word in words:
        if word in _UNITS:
            current += _UNITS[word]
        elif word == "hundred":
            current = max(current, 1) * 100
        elif word in _SCALES and word not in ("k", "m", "bn"):
            total += max(current, 1) * _SCALES[word]
            current = 0
        else:
            return None
    return total + current


def number_value(text: str) -> int | str | None:
    """The number a text states ("$2 million" -> 2000000, "Seven players" -> 7,
    "46 years" -> 46, "007" -> 7); None when it states none. A decimal with a scale
    ("102.3 million") stays text, as in the release."""
    bare = " ".join(text.split()).strip(" .!?")
    match = _NUMBER.search(bare)
    if match and match.start() <= 4:
        digits = Decimal(match["num"].replace(",", ""))
        if match["dec"] is not None:
            if match["scale"]:
                return bare
            digits = Decimal(f"{match['num'].replace(',', '')}.{match['dec']}")
        scale = _SCALES.get((match["scale"] or "").casefold(), 1)
        return _as_number(digits * scale)
    words = bare.split()
    for cut in range(len(words), 0, -1):
        spelled = _spelled(" ".join(words[:cut]))
        if spelled is not None:
            return spelled
    return None


def _month(name: str) -> int | None:
    return _MONTHS.get(name[:3].casefold())


def _year(text: str) -> int:
    year = int(text)
    if len(text) == 2:
        year += 2000 if year < 30 else 1900
    return year


def date_value(text: str) -> int | str | None:
    """A question date as the release names it: a year as a number, a decade or a
    span of years as ``"1980:1989"``, a day as ISO ``"1751-03-16"``; None if no date."""
    bare = " ".join(text.split()).strip(" .,").casefold()
    if m := _YEAR.match(bare):
        return int(m[1])
    if m := _DECADE.match(bare):
        start = int(m[1]) * 10
        start = start if start >= 1000 else 1900 + start % 100
        # "1900s" is the century in the release; "1980s", "2000s" a decade.
        span = 99 if start % 100 == 0 and start % 1000 != 0 else 9
        return f"{start}:{start + span}"
    if m := _RANGE.match(bare):
        return f"{m[1]}:{m[2]}"
    day = _day(bare)
    return day


def _day(bare: str) -> str | None:
    try:
        if m := _DMY.match(bare):
            month = _month(m[2])
            if month:
                return date(_year(m[3]), month, int(m[1])).isoformat()
        if m := _MDY.match(bare):
            month = _month(m[1])
            if month:
                return date(int(m[3]), month, int(m[2])).isoformat()
        if m := _MY.match(bare):
            month = _month(m[1])
            if month:
                return f"{int(m[2]):04d}-{month:02d}"
    except ValueError:
        return None
    if _ISO.match(bare):
        return bare
    return None


def answer_dates(text: str) -> list[str]:
    """A date answer as the release lists it: each date of a comma-separated list as
    ISO text ("20-Oct-56" -> "1956-10-20", "1942" -> "1942"), unparsed ones as given."""
    whole = _day(text.strip(" .").casefold())
    if whole is not None:
        return [whole]
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        bare = part.strip(" .").casefold()
        if _YEAR.match(bare):
            out.append(_YEAR.match(bare)[1])  # type: ignore[index]
        else:
            out.append(_day(bare) or part.strip(" ."))
    return out


def answer_number(text: str) -> int | str:
    """A numerical answer's value: the number it states, else the text (6'2")."""
    value = number_value(text)
    if value is None or "'" in text or '"' in text:
        return text.strip()
    return value


def question_value(kind: str, text: str) -> int | str:
    """``name`` of a question value entity of ``kind`` (spaCy's label, lower-case)."""
    bare = " ".join(text.split())
    if kind == "ordinal":
        word = bare.casefold()
        if word in _ORDINALS:
            return _ORDINALS[word]
        digits = re.match(r"^(\d+)(?:st|nd|rd|th)$", word)
        return int(digits[1]) if digits else bare
    if kind == "date":
        value = date_value(bare)
        return value if value is not None else bare
    value = number_value(bare)
    return value if value is not None else bare


def numeric(value: object) -> int | float | str | None:
    """A worker's numeric value as the release writes ``answerNum``: whole numbers as
    ints, other numbers as they are, text as given."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    try:
        parsed = Decimal(str(value).replace(",", "").strip())
    except InvalidOperation:
        return str(value)
    return (
        _as_number(parsed)
        if str(value).strip().replace(",", "").replace(".", "").isdigit()
        else str(value)
    )
