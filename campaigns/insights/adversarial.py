"""The fooled rate of adversarial writing (model in the loop, issue 38): per stage, per
worker, per protocol arm and per day. Tries are counted when judged (by the app or the
worker); tries the model could not answer are counted apart, never as fools."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import TruncDate

from campaigns.models import AdversarialTry, Campaign, CampaignWorker


@dataclass(frozen=True)
class FooledRow:
    """One group's tries: ``key`` (stage name, worker pseudonym, arm or ISO day)."""

    key: str
    tries: int
    judged: int
    fooled: int
    unavailable: int
    verified: int
    verified_rejected: int

    @property
    def rate(self) -> float | None:
        """Fooled / judged tries (None: none judged)."""
        return round(self.fooled / self.judged, 4) if self.judged else None


@dataclass(frozen=True)
class FooledRates:
    """The campaign's fooled rates; ``total`` over all its adversarial tries."""

    total: FooledRow
    by_stage: list[FooledRow]
    by_worker: list[FooledRow]
    by_arm: list[FooledRow]
    by_day: list[FooledRow]


# Annotated under other names than the model's fields (an aggregate may not shadow one).
_COUNTS: dict[str, Any] = {
    "n_tries": Count("id"),
    "n_judged": Count("id", filter=Q(fooled__isnull=False)),
    "n_fooled": Count("id", filter=Q(fooled=True)),
    "n_unavailable": Count("id", filter=Q(model_unavailable=True)),
    "n_verified": Count("id", filter=Q(verified=True)),
    "n_verified_rejected": Count("id", filter=Q(verified=False)),
}


def _row(key: str, counts: dict[str, Any]) -> FooledRow:
    return FooledRow(key=key, **{k.removeprefix("n_"): counts[k] for k in _COUNTS})


def _rows(tries: QuerySet[AdversarialTry], field: str) -> list[FooledRow]:
    rows = tries.values(field).annotate(**_COUNTS).order_by(field)
    return [_row(str(r[field] if r[field] is not None else ""), r) for r in rows]


def campaign_fooled_rates(*, campaign: Campaign) -> FooledRates | None:
    """The fooled rates of ``campaign`` (None: it has no adversarial try). Five grouped
    queries."""
    tries = AdversarialTry.objects.filter(stage__campaign=campaign)
    # The arm each worker was dealt in this campaign (Nangia et al.'s protocol arms).
    arms = CampaignWorker.objects.filter(campaign=campaign, worker_id=OuterRef("worker_id"))
    total = tries.aggregate(**_COUNTS)
    if not total["n_tries"]:
        return None
    return FooledRates(
        total=_row("", total),
        by_stage=_rows(tries, "stage__name"),
        by_worker=_rows(tries, "worker__pseudonym"),
        by_arm=_rows(tries.annotate(arm=Subquery(arms.values("arm")[:1])), "arm"),
        by_day=_rows(tries.annotate(day=TruncDate("created_at")), "day"),
    )
