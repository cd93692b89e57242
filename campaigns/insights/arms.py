"""Protocol arms side by side (Nangia et al.'s comparison): per arm its workers,
stored and accepted examples, agreement, cost per accepted example and model-free
difficulty proxies (answer length, share of work with pasted text).

A constant number of grouped queries whatever the number of assignments, plus the
agreement of each arm's stages (``validation.selectors.stage_agreement``).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Avg, Count, Q, Sum, TextField
from django.db.models.functions import Cast, Length

from campaigns.models import (
    HANDED_IN,
    Assignment,
    AssignmentStatus,
    Campaign,
    CampaignWorker,
    LedgerEntry,
    LedgerKind,
    LedgerStatus,
)
from campaigns.workforce.selectors import stage_arm
from qaportal.dbrouter import replica_reads
from validation.selectors import stage_agreement

SPENT_KINDS = (
    LedgerKind.REWARD,
    LedgerKind.PLATFORM_FEE,
    LedgerKind.BONUS,
    LedgerKind.BONUS_FEE,
    LedgerKind.QUIZ_PAYMENT,
)


@dataclass
class ArmRow:
    arm: str
    stages: int = 0
    workers: int = 0
    stored: int = 0
    accepted: int = 0
    alpha: float | None = None
    percent_agreement: float | None = None
    cost: Decimal = Decimal("0.00")
    cost_per_accepted: Decimal | None = None
    mean_answer_chars: float | None = None
    pasted_share: float | None = None


@replica_reads()
def campaign_arm_comparison(*, campaign: Campaign, with_agreement: bool = True) -> list[ArmRow]:
    """One row per arm of ``campaign`` (none when it has no arms), in arm order."""
    stages = [s for s in campaign.stages.order_by("position") if stage_arm(s)]
    if not stages:
        return []
    arm_of = {s.pk: stage_arm(s) for s in stages}
    rows = {arm: ArmRow(arm=arm) for arm in sorted(set(arm_of.values()))}
    for s in stages:
        rows[arm_of[s.pk]].stages += 1
    for arm, n in (
        CampaignWorker.objects.filter(campaign=campaign, arm__in=list(rows))
        .values_list("arm")
        .annotate(n=Count("pk"))
    ):
        rows[arm].workers = n
    pasted = Q(telemetry__paste_count__gt=0) | (
        Q(telemetry__has_key="pastes") & ~Q(telemetry__pastes=[])
    )
    totals: dict[str, list[float]] = {}
    for r in (
        Assignment.objects.filter(hit__stage_id__in=list(arm_of), status__in=HANDED_IN)
        .values("hit__stage_id")
        .annotate(
            n=Count("pk"),
            accepted=Count("pk", filter=Q(status=AssignmentStatus.APPROVED)),
            pasted=Count("pk", filter=pasted),
            chars=Avg(Length(Cast("answers", TextField()))),
        )
    ):
        row = rows[arm_of[r["hit__stage_id"]]]
        row.stored += r["n"]
        row.accepted += r["accepted"]
        acc = totals.setdefault(row.arm, [0.0, 0.0])
        acc[0] += (r["chars"] or 0.0) * r["n"]
        acc[1] += r["pasted"]
    for stage_id, amount in (
        LedgerEntry.objects.filter(
            stage_id__in=list(arm_of),
            kind__in=SPENT_KINDS,
            status__in=(LedgerStatus.COMMITTED, LedgerStatus.PAID),
        )
        .values_list("stage_id")
        .annotate(total=Sum("amount"))
    ):
        rows[arm_of[stage_id]].cost += amount or Decimal("0")
    for row in rows.values():
        if row.stored:
            chars, pastes = totals[row.arm]
            row.mean_answer_chars = round(chars / row.stored, 1)
            row.pasted_share = round(pastes / row.stored, 3)
        if row.accepted:
            row.cost_per_accepted = (row.cost / row.accepted).quantize(Decimal("0.01"))
    if with_agreement:
        for arm, row in rows.items():
            summaries = [stage_agreement(stage=s) for s in stages if arm_of[s.pk] == arm]
            alphas = [x.alpha for x in summaries if x.alpha is not None]
            shares = [x.percent_agreement for x in summaries if x.percent_agreement is not None]
            row.alpha = round(sum(alphas) / len(alphas), 4) if alphas else None
            row.percent_agreement = round(sum(shares) / len(shares), 4) if shares else None
    return list(rows.values())
