"""Toy Crowd's own service, outside qaportal: HITs, the assignments it hands out to its
workers, and what the requester asked of it. Kept in memory; it refuses what it does
not know (an unknown HIT or assignment, a decision on work not submitted, a bonus for
work not approved, a wrong API key), and repeats nothing asked twice with one token."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

API_KEY = "toy-key-0123456789"


class Refused(Exception):
    """Toy Crowd said no (HTTP 4xx on a real platform)."""


@dataclass
class ToyAssignment:
    id: str
    hit_id: str
    worker_id: str
    status: str = "accepted"  # accepted -> submitted -> approved | rejected


@dataclass
class ToyCrowd:
    hits: dict[str, dict[str, Any]] = field(default_factory=dict)
    assignments: dict[str, ToyAssignment] = field(default_factory=dict)
    bonuses: dict[str, Decimal] = field(default_factory=dict)  # token -> amount
    blocked: set[str] = field(default_factory=set)
    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    def _check(self, api_key: str, call: str) -> None:
        if api_key != API_KEY:
            raise Refused("invalid API key")
        self.calls.append(call)

    # --- the requester's side (qaportal's provider) -------------------------------------
    def hit_create(self, *, api_key: str, token: str, max_assignments: int, group: str) -> str:
        self._check(api_key, "hit_create")
        for hit_id, hit in self.hits.items():
            if hit["token"] == token:
                return hit_id
        hit_id = f"TH{next(self._ids)}"
        self.hits[hit_id] = {"token": token, "max": max_assignments, "group": group}
        return hit_id

    def places_add(self, *, api_key: str, hit_id: str, count: int, token: str) -> None:
        self._check(api_key, "places_add")
        hit = self._hit(hit_id)
        if token not in hit.setdefault("tokens", set()):
            hit["tokens"].add(token)
            hit["max"] += count

    def decide(self, *, api_key: str, assignment_id: str, approve: bool) -> None:
        self._check(api_key, "approve" if approve else "reject")
        a = self._assignment(assignment_id)
        wanted = "approved" if approve else "rejected"
        if a.status == wanted:
            return
        if a.status != "submitted":
            raise Refused(f"assignment {assignment_id} is {a.status}")
        a.status = wanted

    def bonus(self, *, api_key: str, assignment_id: str, amount: Decimal, token: str) -> None:
        self._check(api_key, "bonus")
        if self._assignment(assignment_id).status not in ("submitted", "approved"):
            raise Refused("bonuses are for submitted or approved work")
        self.bonuses.setdefault(token, amount)

    def block(self, *, api_key: str, worker_id: str) -> None:
        self._check(api_key, "block")
        self.blocked.add(worker_id)

    def message(self, *, api_key: str, worker_ids: list[str], subject: str, body: str) -> None:
        self._check(api_key, "message")
        unknown = set(worker_ids) - {a.worker_id for a in self.assignments.values()}
        if unknown:
            raise Refused("message to a worker who never worked here")
        self.messages.append({"workers": sorted(worker_ids), "subject": subject, "body": body})

    def assignment_get(self, *, api_key: str, assignment_id: str) -> ToyAssignment | None:
        self._check(api_key, "assignment_get")
        return self.assignments.get(assignment_id)

    # --- the worker's side (Toy Crowd's own site) ---------------------------------------
    def accept(self, *, hit_id: str, worker_id: str) -> str:
        """A worker takes a place on a HIT; the assignment id their browser brings us."""
        hit = self._hit(hit_id)
        if worker_id in self.blocked:
            raise Refused("blocked")
        taken = sum(1 for a in self.assignments.values() if a.hit_id == hit_id)
        if taken >= hit["max"]:
            raise Refused("no place left")
        assignment_id = f"TA{next(self._ids)}"
        self.assignments[assignment_id] = ToyAssignment(assignment_id, hit_id, worker_id)
        return assignment_id

    def submit(self, *, assignment_id: str) -> None:
        """The worker's browser tells Toy Crowd the work is done (after qaportal stored it)."""
        self._assignment(assignment_id).status = "submitted"

    def _hit(self, hit_id: str) -> dict[str, Any]:
        if hit_id not in self.hits:
            raise Refused(f"no HIT {hit_id}")
        return self.hits[hit_id]

    def _assignment(self, assignment_id: str) -> ToyAssignment:
        if assignment_id not in self.assignments:
            raise Refused(f"no assignment {assignment_id}")
        return self.assignments[assignment_id]


#: The one Toy Crowd the tests talk to (``conftest.py`` starts each test with a new one).
CROWD = ToyCrowd()


def crowd_reset() -> ToyCrowd:
    """A new, empty Toy Crowd in place of the old."""
    global CROWD
    CROWD = ToyCrowd()
    return CROWD
