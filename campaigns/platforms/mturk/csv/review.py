"""Reviewing from a batch results CSV: ``x`` in ``Approve`` or a feedback text in
``Reject`` decides the assignment named by ``AssignmentId``, through the same review
services as the review API (paid assignments through provider operations).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q

from campaigns.models import Assignment, AssignmentStatus, Campaign
from campaigns.platforms.mturk.csv.file import CsvProblems, CsvRow, chunks, csv_read, reject_one
from campaigns.platforms.mturk.csv.format import LOCAL_ASSIGNMENT_PREFIX
from campaigns.work.decisions import assignment_approve, assignment_reject
from qaportal.errors import DomainError


@dataclass
class _Decision:
    line: int
    assignment_id: str
    decision: str
    text: str


@dataclass(frozen=True)
class MTurkReviewResult:
    """Per-row outcome of a review file: ``results`` rows are ``{"row", "assignment_id",
    "decision", "result", "status", "detail"}``; ``counts`` by result: ``decided``,
    ``requested`` (a paid decision asked of the platform, done when it answers),
    ``already_decided``, ``not_found``, ``refused``."""

    results: list[dict[str, Any]]
    counts: dict[str, int]
    skipped: int

    def as_dict(self) -> dict[str, Any]:
        return {"counts": self.counts, "skipped": self.skipped, "results": self.results}


def _decisions(rows: list[CsvRow], problems: CsvProblems) -> tuple[list[_Decision], int]:
    decisions: list[_Decision] = []
    skipped = 0
    seen: dict[str, int] = {}
    for row in rows:
        approve = row.get("Approve").strip()
        reject = row.get("Reject").strip()
        if not approve and not reject:
            skipped += 1
            continue
        assignment_id = row.get("AssignmentId").strip()
        if not assignment_id:
            problems.add(row.line, "AssignmentId", "a decision needs the assignment's id")
            continue
        if approve and reject:
            problems.add(row.line, "Approve", "fill either Approve or Reject, not both")
            continue
        if approve and approve.lower() not in ("x", "yes", "y", "1", "true", "approve"):
            problems.add(row.line, "Approve", f"{approve!r}: put an x to approve")
            continue
        earlier = seen.setdefault(assignment_id, row.line)
        if earlier != row.line:
            problems.add(row.line, "AssignmentId", f"the same assignment is on row {earlier}")
            continue
        decisions.append(
            _Decision(
                line=row.line,
                assignment_id=assignment_id,
                decision="approve" if approve else "reject",
                text=reject,
            )
        )
    return decisions, skipped


def _find(campaign: Campaign, ids: list[str]) -> dict[str, Assignment]:
    """The campaign's assignments by the ids the file names (ours for unpublished ones)."""
    own = {i: int(i.removeprefix(LOCAL_ASSIGNMENT_PREFIX)) for i in ids if _is_local_id(i)}
    found: dict[str, Assignment] = {}
    base = Assignment.objects.filter(hit__stage__campaign=campaign).select_related("hit")
    for chunk in chunks(ids):
        for a in base.filter(
            Q(provider_assignment_id__in=chunk)
            | Q(pk__in=[own[i] for i in chunk if i in own], provider_assignment_id__isnull=True)
        ):
            key = a.provider_assignment_id or f"{LOCAL_ASSIGNMENT_PREFIX}{a.pk}"
            found[key] = a
    return found


def _is_local_id(value: str) -> bool:
    return (
        value.startswith(LOCAL_ASSIGNMENT_PREFIX)
        and value[len(LOCAL_ASSIGNMENT_PREFIX) :].isdigit()
    )


def mturk_results_review(
    *,
    campaign: Campaign,
    content: bytes,
    decided_by: AbstractBaseUser | None = None,
    filename: str = "the file",
) -> MTurkReviewResult:
    """Approve (``x`` in ``Approve``) or reject (feedback text in ``Reject``) the
    campaign's assignments named by ``AssignmentId``.

    The file is checked whole first: a bad row (both columns filled, no id, the same
    assignment twice) raises ``UploadRejected`` and decides nothing. Then each row
    is decided on its own, as the review API's bulk review does, through
    ``assignment_approve`` / ``assignment_reject``: local assignments at once, paid
    ones as provider operations (idempotent by assignment; the reward is paid when
    the platform has approved). The Reject text is both the reason and the feedback
    the worker gets. Deciding again the same way changes nothing
    (``already_decided``). Source of the decisions: ``requester``.
    Locking: each assignment row, in the review services.
    """
    _header, rows = csv_read(content, required=("AssignmentId",))
    if "Approve" not in _header and "Reject" not in _header:
        raise reject_one(
            "The file has neither an Approve nor a Reject column; nothing was decided.",
            row=1,
            column="Approve",
        )
    problems = CsvProblems()
    decisions, skipped = _decisions(rows, problems)
    if problems:
        raise problems.reject(filename=filename, what="decided")
    found = _find(campaign, [d.assignment_id for d in decisions])
    results = [_decide_row(d, found.get(d.assignment_id), decided_by) for d in decisions]
    counts = Counter(r["result"] for r in results)
    return MTurkReviewResult(results=results, counts=dict(sorted(counts.items())), skipped=skipped)


def _decide_row(
    d: _Decision, assignment: Assignment | None, decided_by: AbstractBaseUser | None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "row": d.line,
        "assignment_id": d.assignment_id,
        "decision": d.decision,
        "status": None,
        "detail": "",
    }
    if assignment is None:
        return {**out, "result": "not_found", "detail": "No assignment of this campaign."}
    target = AssignmentStatus.APPROVED if d.decision == "approve" else AssignmentStatus.REJECTED
    if assignment.status == target:
        return {**out, "result": "already_decided", "status": assignment.status}
    if assignment.status != AssignmentStatus.SUBMITTED:
        return {
            **out,
            "result": "already_decided"
            if assignment.status in (AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)
            else "refused",
            "status": assignment.status,
            "detail": f"The assignment is {assignment.status}; only a submitted one is decided.",
        }
    try:
        if d.decision == "approve":
            decided = assignment_approve(
                assignment=assignment, decided_by=decided_by, source="requester", reason=""
            )
        else:
            decided = assignment_reject(
                assignment=assignment,
                decided_by=decided_by,
                source="requester",
                reason=d.text,
                feedback=d.text,
            )
    except DomainError as exc:
        assignment.refresh_from_db(fields=["status"])
        return {**out, "result": "refused", "status": assignment.status, "detail": str(exc)}
    result = "decided" if decided.status == target else "requested"
    return {**out, "result": result, "status": decided.status}
