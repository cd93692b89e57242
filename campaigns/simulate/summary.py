"""What a simulated crowd did: counts per stage and per profile, errors, and the
state the campaign's stages were left in."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, QuerySet

from campaigns.models import Assignment, Campaign, Item


@dataclass
class StageTally:
    stage_id: int
    name: str
    task_type: str
    accepted: int = 0
    submitted: int = 0
    returned: int = 0
    reprompted: int = 0
    closed: int = 0  # 409: the task closed under the worker
    approved: int = 0  # by the simulated requester (--approve-all)
    # Filled from the database at the end of the run.
    items: dict[str, int] = field(default_factory=dict)
    assignments: dict[str, int] = field(default_factory=dict)


@dataclass
class ProfileTally:
    workers: int = 0
    submitted: int = 0
    reprompted: int = 0
    returned: int = 0


@dataclass
class SimulationResult:
    campaign: str
    seed: int
    base_url: str
    stages: dict[int, StageTally] = field(default_factory=dict)
    profiles: dict[str, ProfileTally] = field(default_factory=dict)
    statuses: Counter[int] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    joined: int = 0
    rounds: int = 0
    replays: int = 0
    # HTTP requests the app served (each redirect followed is one) and the pages they
    # made up (a form's POST and the page its redirect led to are one page).
    requests: int = 0
    pages: int = 0
    seconds: float = 0.0
    # Prolific entry: where each stored submission sent its participant (not followed).
    completion_urls: list[str] = field(default_factory=list)
    # The stored assignments whose free texts a worker pasted from a model (--llm-share).
    llm_pasted: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def stage(self, stage_id: int, name: str, task_type: str) -> StageTally:
        return self.stages.setdefault(stage_id, StageTally(stage_id, name, task_type))

    def stage_by_id(self, stage_id: int) -> StageTally:
        return self.stages[stage_id]

    def profile(self, name: str) -> ProfileTally:
        return self.profiles.setdefault(name, ProfileTally())

    def server_errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if status >= 500)

    def collect_stage_state(self, *, campaign: Campaign) -> None:
        """Item and assignment counts by status, per stage, from the database."""
        items = Item.objects.filter(stage__campaign=campaign)
        for stage_id, status, n in _status_counts(items, stage_key="stage_id"):
            if stage_id in self.stages:
                self.stages[stage_id].items[status] = n
        assignments = Assignment.objects.filter(hit__stage__campaign=campaign)
        for stage_id, status, n in _status_counts(assignments, stage_key="hit__stage_id"):
            if stage_id in self.stages:
                self.stages[stage_id].assignments[status] = n

    def as_dict(self) -> dict[str, Any]:
        return {
            "campaign": self.campaign,
            "seed": self.seed,
            "ok": self.ok,
            "stages": [vars(t) for t in self.stages.values()],
            "profiles": {k: vars(v) for k, v in self.profiles.items()},
            "statuses": dict(self.statuses),
            "errors": list(self.errors),
            "joined": self.joined,
            "rounds": self.rounds,
            "replays": self.replays,
            "requests": self.requests,
            "pages": self.pages,
            "seconds": round(self.seconds, 2),
            "completion_urls": list(self.completion_urls),
            "llm_pasted": len(self.llm_pasted),
        }

    def lines(self) -> list[str]:
        """The summary as text, for the command line."""
        out = [
            f"campaign {self.campaign}: {self.joined} workers joined, seed {self.seed}, "
            f"{self.rounds} round(s), {self.requests} requests ({self.pages} pages) "
            f"in {self.seconds:.1f} s ({self.base_url})",
            "stage                          accepted submitted returned re-prompted "
            "closed approved  items (by status)",
        ]
        for t in self.stages.values():
            items = ", ".join(f"{k} {v}" for k, v in sorted(t.items.items())) or "none"
            out.append(
                f"{t.name[:30]:<30} {t.accepted:>8} {t.submitted:>9} {t.returned:>8} "
                f"{t.reprompted:>11} {t.closed:>6} {t.approved:>8}  {items}"
            )
        out.append("profile   workers submitted re-prompted returned")
        for name, p in sorted(self.profiles.items()):
            out.append(
                f"{name:<9} {p.workers:>7} {p.submitted:>9} {p.reprompted:>11} {p.returned:>8}"
            )
        statuses = ", ".join(f"{s}: {n}" for s, n in sorted(self.statuses.items()))
        out.append(f"HTTP statuses: {statuses}; resent submissions: {self.replays}")
        if self.completion_urls:
            out.append(f"sent back to Prolific: {len(self.completion_urls)} completion URL(s)")
        if self.errors:
            out.append(f"ERRORS ({len(self.errors)}):")
            out.extend(f"  {e}" for e in self.errors[:50])
            if len(self.errors) > 50:
                out.append(f"  ... and {len(self.errors) - 50} more")
        else:
            out.append("no errors")
        return out


def _status_counts(queryset: QuerySet[Any], *, stage_key: str) -> Iterator[tuple[int, str, int]]:
    """``(stage id, status, rows)`` of ``queryset``, its stage read through ``stage_key``."""
    for row in queryset.values(stage_key, "status").annotate(n=Count("id")):
        yield row[stage_key], row["status"], row["n"]
