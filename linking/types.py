"""What candidate sources return: the live Wikidata client and the offline index
share these shapes and the ``CandidateSource`` interface."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol, TypedDict

QID_RE = re.compile(r"^Q[1-9][0-9]*$")
MAX_SEARCH_LIMIT = 50
MAX_IDS_PER_REQUEST = 50


class InvalidQid(ValueError):
    """An id that is not a Wikidata item id (``Q`` and a number without leading zero)."""


def is_qid(value: object) -> bool:
    """Whether ``value`` is a Wikidata item id such as ``Q42``."""
    return isinstance(value, str) and bool(QID_RE.match(value))


def check_qids(ids: list[str]) -> None:
    """Raise ``InvalidQid`` naming every id that is not ``^Q[1-9][0-9]*$``."""
    bad = [i for i in ids if not is_qid(i)]
    if bad:
        raise InvalidQid(f"Not Wikidata item ids: {', '.join(map(repr, bad))}")


class Candidate(TypedDict):
    """One search hit: id, label and description in the requested language, how it
    matched (``{"type": "label" | "alias" | "description" | "entityId", "language",
    "text"}``) and the aliases that matched, if any."""

    id: str
    label: str
    description: str
    match: dict[str, str]
    aliases: list[str]
    url: str


class Entity(TypedDict):
    """One item: ``id`` is the item's own id (the redirect target for a merged item);
    ``redirected_from`` the id asked for when it was a redirect, else None;
    ``instance_of`` the P31 values (item ids)."""

    id: str
    label: str
    description: str
    aliases: list[str]
    instance_of: list[str]
    redirected_from: str | None


@dataclass
class SearchPage:
    """One page of search hits; ``next_offset`` is the ``continue_`` value for the next
    page, None on the last page."""

    hits: list[Candidate] = field(default_factory=list)
    next_offset: int | None = None


class CandidateSource(Protocol):
    """What the linking pages and tasks need from Wikidata, live or offline."""

    def search(
        self, text: str, *, language: str = "en", limit: int = 10, continue_: int = 0
    ) -> SearchPage: ...

    def get_entities(self, ids: list[str], *, language: str = "en") -> dict[str, Entity | None]:
        """Items by requested id; None for an id that does not exist."""
        ...


def check_search_args(text: str, limit: int, continue_: int) -> None:
    if not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_SEARCH_LIMIT}, not {limit}")
    if continue_ < 0:
        raise ValueError(f"continue_ must not be negative, not {continue_}")


def normalise_query(text: str) -> str:
    """The search text as the cache keys it: whitespace collapsed, case folded
    (wbsearchentities matches case-insensitively)."""
    return " ".join(text.split()).casefold()
