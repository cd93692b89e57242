"""The type of a free-text answer: entity, boolean, numeric, date or string.

Used to route answers: yes/no and numeric answers (and dates) are not sent to
answer entity linking, as in Mintaka. The rules are checked in this order:

- boolean: yes / no / true / false, with optional punctuation ("Yes.", "no!");
- date: ISO dates ("1956-10-20"), day-month-year in any common spelling
  ("20-Oct-56", "2 March 1981", "March 2, 1981", "3/2/1981"), month and year,
  decades ("1990s"), and a bare year (1000-2099) unless the question asks
  "how many" / "how much";
  A list of dates ("1988, 1991, 1992") is a date too;
- numeric: a number, possibly signed, with thousands separators, decimals, a
  percent or currency sign, a scale word ("1.5 million") or spelled out
  ("twelve"), optionally with a unit of up to two words ("46 years", "39 years
  old"), or a height (6'2"); a question asking "how many" makes a bare integer
  numeric;
- string: lower-case text of more than six words without a comma (a phrase or
  sentence rather than a name or a list of names);
- entity: anything else (names, titles, lists of names).
"""

from __future__ import annotations

import re
from enum import StrEnum


class AnswerType(StrEnum):
    ENTITY = "entity"
    BOOLEAN = "boolean"
    NUMERIC = "numeric"
    DATE = "date"
    STRING = "string"


# Mintaka's answerType values mapped onto ours.
MINTAKA_ANSWER_TYPES = {
    "entity": AnswerType.ENTITY,
    "boolean": AnswerType.BOOLEAN,
    "numerical": AnswerType.NUMERIC,
    "date": AnswerType.DATE,
    "string": AnswerType.STRING,
}
# Types that never go to answer entity linking.
NOT_LINKED = frozenset({AnswerType.BOOLEAN, AnswerType.NUMERIC, AnswerType.DATE})

_BOOLEAN = {"yes", "no", "true", "false", "y", "n"}
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"(?:[0-2]?\d|3[01])(?:st|nd|rd|th)?"
_YEAR = r"(?:\d{4}|\d{2})"
_DATE_PATTERNS = [
    r"-?\d{1,4}-\d{2}-\d{2}(?:t[\d:]+z?)?",  # ISO
    rf"{_DAY}[-/ .]{_MONTH}[-/ .,]*{_YEAR}",  # 20-Oct-56, 2 March 1981
    rf"{_MONTH} {_DAY},? {_YEAR}",  # March 2, 1981
    rf"{_MONTH},? \d{{4}}",  # March 1981
    rf"{_DAY} {_MONTH}",  # 2 March
    rf"{_MONTH} {_DAY}",  # March 2
    r"\d{1,2}[/.]\d{1,2}[/.]\d{2,4}",  # 3/2/1981
    r"(?:\d{2})?\d0'?s",  # 1990s, 90s
    r"\d{1,4} (?:bc|bce|ad|ce)|(?:ad|ce) \d{1,4}",
]
_DATE = re.compile(r"^(?:" + "|".join(_DATE_PATTERNS) + r")$", re.IGNORECASE)
_YEAR_ONLY = re.compile(r"^(?:1\d{3}|20\d{2})$")
_NUMBER = re.compile(
    r"^(?:about |around |approximately |over |under |nearly |almost |more than |less than )?"
    r"[-+\u2212]?[$\u20ac\u00a3\u00a5]?\s?"
    r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
    r"\s?(?:%|percent|thousand|million|billion|trillion|k|m|bn)?$",
    re.IGNORECASE,
)
_NUMBER_WORDS = {
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    "hundred", "thousand", "million", "billion", "none", "a", "and", "dozen",
}  # fmt: skip
_COUNT_QUESTION = re.compile(r"\bhow (?:many|much)\b", re.IGNORECASE)
_FEET_INCHES = re.compile(r"^\d{1,2}\s?(?:'|ft|feet)\s?\d{1,2}\s?(?:\"|in|inches)?$")
_UNIT_WORD = re.compile(r"^[a-z]{1,12}\.?$")
_PARTS = re.compile(r",|;| and ")
_SPELLED_SPLIT = re.compile(r"[\s-]+")
# Every date, year, number and height pattern above needs a digit (as ``\d`` has it).
_DIGIT = re.compile(r"\d")


def detect_answer_type(answer: str, *, question: str = "") -> AnswerType:
    """The type of ``answer``; ``question`` (optional) settles a bare number that
    could be a year or a count."""
    text = " ".join(answer.split())
    if not text:
        return AnswerType.STRING
    bare = text.strip(".!?").strip().casefold()
    if bare in _BOOLEAN:
        return AnswerType.BOOLEAN
    digits = _DIGIT.search(text) is not None
    if digits and _YEAR_ONLY.match(bare):
        counting = bool(question and _COUNT_QUESTION.search(question))
        return AnswerType.NUMERIC if counting else AnswerType.DATE
    parts = [p.strip() for p in _PARTS.split(bare) if p.strip()]
    # Without a digit no part is a date (nor a year), unless there is no part at all.
    if (digits or not parts) and all(_DATE.match(p) or _YEAR_ONLY.match(p) for p in parts):
        return AnswerType.DATE
    if _is_number(text.strip(".!?").strip(), digits=digits):
        return AnswerType.NUMERIC
    words = text.split()
    if len(words) > 6 and "," not in text and not any(w[:1].isupper() for w in words):
        return AnswerType.STRING
    return AnswerType.ENTITY


def needs_answer_linking(answer: str, *, question: str = "") -> bool:
    """Whether an answer goes to answer entity linking (not yes/no, numeric or a date)."""
    return detect_answer_type(answer, question=question) not in NOT_LINKED


def _is_number(text: str, *, digits: bool = True) -> bool:
    """A number, possibly followed by a unit of one or two words ("46 years",
    "39 years old", "fifteen books"; lower-case, so "1906 Chicago Cubs" is no
    number), or a height in feet and inches (6'2"). ``digits=False`` says the text
    has no digit: only a spelled number can then be one."""
    if digits and _FEET_INCHES.match(text):
        return True
    words = text.split()
    if not digits and (
        not words or _SPELLED_SPLIT.split(words[0].casefold())[0] not in _NUMBER_WORDS
    ):
        return False  # every head below starts with the first word's first part
    for cut in range(len(words), max(0, len(words) - 3), -1):
        head, unit = " ".join(words[:cut]), words[cut:]
        if all(_UNIT_WORD.match(w) for w in unit) and (
            _NUMBER.match(head) or _is_spelled_number(head.casefold())
        ):
            return True
    return False


def _is_spelled_number(text: str) -> bool:
    words = _SPELLED_SPLIT.split(text)
    return bool(words) and all(w in _NUMBER_WORDS for w in words) and words != ["a"]
