"""Reads about a stage's worker requirements: which of them no one enforces.

A platform requirement (approval rate, approved count, locale, masters, adult) is
checked by the platform that knows the worker's history. On the local workforce, or on
a platform without such a filter, nobody can check it: the requester is told it is
not enforced rather than having it silently dropped (a recipe's paper requirement,
e.g. Mintaka §4's 98 % approval and 5,000 approved tasks, stays visible as data).
"""

from __future__ import annotations

from typing import Any, TypedDict

from campaigns.models import Stage
from campaigns.models.choices import SYSTEM_QUALIFICATION_KINDS
from campaigns.providers import platform_checked_kinds

PLATFORM_KINDS = frozenset(str(k) for k in SYSTEM_QUALIFICATION_KINDS) | {
    "masters",
    "adult",
    "country",
}


class UnenforcedRequirement(TypedDict):
    kind: str
    requirement: dict[str, Any]
    text: str


def requirement_text(req: dict[str, Any]) -> str:
    """A requirement as a requester reads it ("approval rate ≥ 98 %")."""
    kind = str(req.get("kind", ""))
    if kind == "approval_rate":
        return f"approval rate ≥ {req.get('min', 0)} %"
    if kind == "approved_count":
        return f"at least {req.get('min', 0):,} approved tasks"
    if kind in ("locale", "country"):
        places = ", ".join(str(c) for c in req.get("countries", req.get("values", [])))
        return f"{'not ' if req.get('exclude') else ''}located in {places}"
    if kind == "masters":
        return "MTurk Masters"
    if kind == "adult":
        return "adult content allowed"
    return kind


def stage_unenforced_requirements(*, stage: Stage) -> list[UnenforcedRequirement]:
    """The platform requirements of ``stage`` that its campaign's provider cannot
    check (all of them on the local workforce), in the stage's order."""
    checked = platform_checked_kinds(str(stage.campaign.provider))
    out: list[UnenforcedRequirement] = []
    for req in stage.qualification_requirements or []:
        kind = str(req.get("kind", "")) if isinstance(req, dict) else ""
        if kind in PLATFORM_KINDS and kind not in checked:
            out.append({"kind": kind, "requirement": dict(req), "text": requirement_text(req)})
    return out
