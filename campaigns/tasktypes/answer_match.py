"""Whether a model's free-text answer states the answer a worker gave, for the answer
types the app can judge itself (model in the loop, issue 38): an entity id, a number,
a date or an option. Sentence ids are the passage task type's own
(``adversarial_qa.sentences_matching``).

The worker's answer is one value; the model's answer is text ("It was Q42.", "About
1,000 people", "On 20 October 1956"). ``model_answer_matches`` finds the values of
the answer's type in that text, normalised:

- entity ids: Wikidata Q-ids in any common spelling (``Q42``, ``q42``, ``wd:Q42``,
  ``http://www.wikidata.org/entity/Q42``, ``…/wiki/Q42``); without an id in the text,
  the entity's labels (``labels``) are looked for as whole words;
- numbers: digits with thousands separators (``1,000``, ``1 000``, ``1.000,5`` is not
  read), decimals, signs, currency and percent signs, scale words (``1.5 million``),
  and spelled numbers up to the tens ("twelve", "forty-two");
- dates: ISO (``1956-10-20``), day month year and month day year in words
  (``20 Oct 1956``, ``October 20, 1956``), numeric ``d/m/y`` and ``m/d/y`` (both
  readings when both are valid), month and year, a bare year; compared on the fields
  the worker gave (a year against a full date compares the year);
- options: an option's id (``B``, ``(b)``, ``b)``, "option B") or its text.

The verdict: True (the model is right) when the values it states are the worker's;
False (fooled) when it states values of the type and none is the worker's; None (the
app cannot tell; the worker marks) when it states none, or the worker's among others.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from typing import Any


class JudgedKind(StrEnum):
    ENTITY = "entity"
    NUMBER = "number"
    DATE = "date"
    OPTION = "option"


@dataclass(frozen=True)
class StatedAnswer:
    """The worker's answer as the app judges it: its kind, its value, and for options
    the item's options (``[{"id", "text"}]``), for entities their labels."""

    kind: JudgedKind
    value: str
    options: Sequence[Mapping[str, Any]] = ()
    labels: Sequence[str] = field(default_factory=tuple)


# --- entity ids ---------------------------------------------------------------------------

_QID = re.compile(
    r"(?<![\w/])(?:wd:|(?:https?://)?(?:www\.)?wikidata\.org/(?:entity|wiki)/)?([Qq][1-9]\d*)\b"
)


def entity_ids(text: str) -> list[str]:
    """The Wikidata Q-ids in ``text``, upper-cased, in order, once each."""
    return list(dict.fromkeys(m.group(1).upper() for m in _QID.finditer(text or "")))


def _words(text: str) -> str:
    return " " + " ".join(re.findall(r"\w+", text.casefold())) + " "


# --- numbers -----------------------------------------------------------------------------

_SCALE = {
    "thousand": 10**3,
    "k": 10**3,
    "million": 10**6,
    "billion": 10**9,
    "bn": 10**9,
    "trillion": 10**12,
}
_NUMBER_TOKEN = re.compile(
    r"(?<![\w.,])([-+\u2212]?)[$\u20ac\u00a3\u00a5]?\s?"
    r"(\d{1,3}(?:,\d{3})+|\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?![\d,])|\d+)(\.\d+)?"
    r"(?:\s?(thousand|million|billion|trillion|bn|k)\b)?"
)
_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19,
}  # fmt: skip
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}  # fmt: skip
_SPELLED = re.compile(
    r"\b(?:(" + "|".join(_TENS) + r")(?:[- ](" + "|".join(list(_UNITS)[1:10]) + r"))?"
    r"|(" + "|".join(_UNITS) + r"))\b",
    re.IGNORECASE,
)
# A year is a date, not a number, where a date pattern claims it: numbers are read
# from the text with the dates taken out.


def numbers(text: str) -> list[Decimal]:
    """The numbers ``text`` states, normalised (``1,000`` and ``1000`` alike), once each."""
    found: list[Decimal] = []
    for m in _NUMBER_TOKEN.finditer(text or ""):
        sign, whole, fraction, scale = m.groups()
        digits = re.sub(r"[,\s\u00a0\u202f]", "", whole) + (fraction or "")
        try:
            value = Decimal(digits)
        except InvalidOperation:
            continue
        if scale:
            value *= _SCALE[scale.casefold()]
        if sign in ("-", "\u2212"):
            value = -value
        found.append(value.normalize())
    for m in _SPELLED.finditer(text or ""):
        tens, unit, alone = (g.casefold() if g else g for g in m.groups())
        value = Decimal(_TENS[tens] + (_UNITS[unit] if unit else 0) if tens else _UNITS[alone])
        found.append(value.normalize())
    return list(dict.fromkeys(found))


def number_of(text: str) -> Decimal | None:
    """The one number ``text`` is (the worker's answer), None unless exactly one."""
    found = numbers(text)
    return found[0] if len(found) == 1 else None


# --- dates --------------------------------------------------------------------------------

_MONTHS = {
    name: n
    for n, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = r"(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"([0-2]?\d|3[01])(?:st|nd|rd|th)?"
_DATE_FORMS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), "ymd"),
    (re.compile(rf"\b{_DAY}(?:\s+of)?[\s\-/.]+{_MONTH}[\s\-/.,]+(\d{{4}})\b", re.I), "dMy"),
    (re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+(\d{{4}})\b", re.I), "Mdy"),
    (re.compile(r"\b(\d{1,2})[/.](\d{1,2})[/.](\d{4})\b"), "nny"),
    (re.compile(rf"\b{_MONTH},?\s+(\d{{4}})\b", re.I), "My"),
    (re.compile(r"\b(1\d{3}|20\d{2})\b"), "y"),
]

# A date as stated: (year, month or None, day or None).
DateValue = tuple[int, int | None, int | None]


def _valid(year: int, month: int | None, day: int | None) -> bool:
    try:
        date(year, month or 1, day or 1)
    except ValueError:
        return False
    return True


def dates(text: str) -> list[DateValue]:
    """The dates ``text`` states, each as (year, month, day) with what it leaves out as
    None; a numeric ``a/b/yyyy`` gives both readings when both are dates. Each form
    claims its span, so the year of "20 October 1956" is not read again alone."""
    remaining = text or ""
    found: list[DateValue] = []
    for pattern, form in _DATE_FORMS:
        for m in pattern.finditer(remaining):
            g = m.groups()
            candidates: list[DateValue] = []
            if form == "ymd":
                candidates = [(int(g[0]), int(g[1]), int(g[2]))]
            elif form == "dMy":
                candidates = [(int(g[2]), _MONTHS[g[1].casefold()], int(g[0]))]
            elif form == "Mdy":
                candidates = [(int(g[2]), _MONTHS[g[0].casefold()], int(g[1]))]
            elif form == "nny":
                a, b, y = int(g[0]), int(g[1]), int(g[2])
                candidates = [(y, b, a), (y, a, b)]  # day first, then month first
            elif form == "My":
                candidates = [(int(g[1]), _MONTHS[g[0].casefold()], None)]
            else:
                candidates = [(int(g[0]), None, None)]
            found += [c for c in candidates if _valid(*c)]
        remaining = pattern.sub(" ", remaining)
    return list(dict.fromkeys(found))


def _date_agrees(mine: DateValue, theirs: DateValue) -> bool | None:
    """Whether the model's date ``theirs`` is the worker's ``mine`` on the fields the
    worker gave; None when the model's is coarser and agrees as far as it goes."""
    for a, b in zip(mine, theirs, strict=True):
        if a is None:
            return True
        if b is None:
            return None
        if a != b:
            return False
    return True


# --- options ------------------------------------------------------------------------------


def _option_ids(text: str, options: Sequence[Mapping[str, Any]]) -> set[str]:
    ids = {str(o.get("id", "")).casefold(): str(o.get("id", "")) for o in options}
    found: set[str] = set()
    stripped = text.strip()
    short = re.fullmatch(r"(?:option\s+)?[(\[]?(\w{1,3})[)\].:]?", stripped, re.I)
    if short and short.group(1).casefold() in ids:
        return {ids[short.group(1).casefold()]}
    for m in re.finditer(r"(?:\boption\s+|\(|\b)(\w{1,3})(?:\)|\b)", text, re.I):
        word = m.group(0)
        marked = word.startswith("(") or word.casefold().startswith("option")
        if marked and m.group(1).casefold() in ids:
            found.add(ids[m.group(1).casefold()])
    words = _words(text)
    for option in options:
        label = _words(str(option.get("text", ""))).strip()
        if label and f" {label} " in words:
            found.add(str(option.get("id", "")))
    return found


# --- the verdict --------------------------------------------------------------------------


def _verdict(mine_in: bool, any_found: bool, only_mine: bool) -> bool | None:
    if not any_found:
        return None
    if only_mine:
        return True
    if not mine_in:
        return False
    return None


def model_answer_matches(stated: StatedAnswer, model_answer: str) -> bool | None:
    """True: ``model_answer`` states the worker's answer (the model is right); False: it
    states another answer of that type (fooled); None: the app cannot tell."""
    text = model_answer or ""
    if stated.kind == JudgedKind.ENTITY:
        mine_ids = entity_ids(stated.value)
        if not mine_ids:
            return None
        theirs = entity_ids(text)
        if theirs:
            return _verdict(mine_ids[0] in theirs, True, set(theirs) == {mine_ids[0]})
        words = _words(text)
        labels = [_words(label).strip() for label in stated.labels]
        if any(label and f" {label} " in words for label in labels):
            return True
        return None
    if stated.kind == JudgedKind.NUMBER:
        mine_number = number_of(stated.value)
        if mine_number is None:
            return None
        found = numbers(_without_dates(text))
        return _verdict(mine_number in found, bool(found), set(found) == {mine_number})
    if stated.kind == JudgedKind.DATE:
        mine_dates = dates(stated.value)
        if len(mine_dates) != 1:
            return None
        verdicts = [_date_agrees(mine_dates[0], theirs) for theirs in dates(text)]
        if not verdicts:
            return None
        if all(v is True for v in verdicts):
            return True
        if all(v is False for v in verdicts):
            return False
        return None
    chosen = _option_ids(stated.value, stated.options)
    if len(chosen) != 1:
        return None
    named = _option_ids(text, stated.options)
    mine_option = next(iter(chosen))
    return _verdict(mine_option in named, bool(named), named == {mine_option})


def _without_dates(text: str) -> str:
    """``text`` with its full dates taken out (their day and year are not numbers the
    model states); bare years stay, as "1,000" and "1000" must both be read."""
    for pattern, _form in _DATE_FORMS[:-1]:
        text = pattern.sub(" ", text)
    return text


def stated_answer(entry: Mapping[str, Any], data: Mapping[str, Any]) -> StatedAnswer | None:
    """The worker's typed answer in ``entry``, where the task type records one:
    ``{"answer": …, "answer_type": "entity" | "number" | "numeric" | "date" |
    "option"}`` (Mintaka's ``numerical`` too); entity labels from ``answer_label(s)``,
    options from the item's ``options`` (``[{"id", "text"}]``, or texts lettered A, B…).
    None otherwise (not judged by the app)."""
    kind = _KINDS.get(str(entry.get("answer_type", "")).casefold())
    value = entry.get("answer")
    if kind is None or value in (None, ""):
        return None
    if isinstance(value, list | tuple):
        if len(value) != 1:
            return None
        value = value[0]
    labels: Iterable[Any] = entry.get("answer_labels") or (
        [entry["answer_label"]] if entry.get("answer_label") else []
    )
    options = data.get("options") if kind == JudgedKind.OPTION else None
    return StatedAnswer(
        kind=kind,
        value=str(value),
        options=tuple(
            o if isinstance(o, Mapping) else {"id": chr(ord("A") + i), "text": str(o)}
            for i, o in enumerate(options or [])
        ),
        labels=tuple(str(label) for label in labels),
    )


_KINDS = {
    "entity": JudgedKind.ENTITY,
    "number": JudgedKind.NUMBER,
    "numeric": JudgedKind.NUMBER,
    "numerical": JudgedKind.NUMBER,
    "date": JudgedKind.DATE,
    "option": JudgedKind.OPTION,
}
