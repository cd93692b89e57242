"""The summaries' merged triggers (migration 0022): random mixes of single-row, small
and bulk writes on the assignments, HITs and ledger leave every summary equal to a full
recount. Each write is one statement of 1, 2-8 or more rows, so each of the triggers'
three paths (one row, planned once, ``EXECUTE``) runs with every kind of change."""

from __future__ import annotations

import random
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import BigIntegerField, Case, F, Value, When
from django.utils import timezone

from campaigns.models import HIT, Assignment, AssignmentStatus, HITStatus, LedgerEntry
from campaigns.payments.ledger import LedgerBonus, ledger_bonuses_write
from campaigns.work.counts import stage_counters_compact
from campaigns.work.selectors.counts import (
    stage_assignment_counts,
    stage_assignment_counts_full,
)
from tests.campaigns.work.test_decisions import _work
from tests.campaigns.work.test_summaries import _stage_counters_agree
from tests.validation.db_helpers import worker

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the summaries' triggers are PostgreSQL's"
    ),
]

STATUSES = [
    AssignmentStatus.ACCEPTED,
    AssignmentStatus.SUBMITTED,
    AssignmentStatus.APPROVED,
    AssignmentStatus.REJECTED,
    AssignmentStatus.RETURNED,
]


def _size(rng: random.Random) -> int:
    return rng.choice([1, 1, 1, rng.randint(2, 8), rng.randint(9, 30)])


def _pick(rng: random.Random, ids: list[int], n: int) -> list[int]:
    return rng.sample(ids, min(n, len(ids)))


def _write(rng: random.Random, stages: list, people: list, n: int) -> None:
    assignments = list(Assignment.objects.order_by("pk").values_list("pk", flat=True))
    hit_ids = list(HIT.objects.order_by("pk").values_list("pk", flat=True))
    now = timezone.now()
    kind = rng.randrange(11)
    ids = _pick(rng, assignments, n)
    rows = Assignment.objects.filter(pk__in=ids)
    if kind == 0:  # status (a submission time when handed in)
        status = rng.choice(STATUSES)
        rows.update(
            status=status,
            submitted_at=now - timedelta(minutes=rng.randint(0, 90)),
            accepted_at=now - timedelta(hours=2),
        )
    elif kind == 1:  # nothing counted: answers, telemetry, review notes
        rows.update(answers={"choice": rng.randint(0, 3)}, review_details={"n": n})
    elif kind == 2:  # another HIT (of either stage)
        rows.update(hit_id=rng.choice(hit_ids))
    elif kind == 3:  # another worker
        rows.update(worker=rng.choice(people))
    elif kind == 4:  # the submission time only
        rows.filter(submitted_at__isnull=False).update(
            submitted_at=now - timedelta(minutes=rng.randint(0, 90))
        )
    elif kind == 5:  # HITs: places, reward, status (a HIT never changes stage: only the
        # held work would follow it)
        hits = HIT.objects.filter(pk__in=_pick(rng, hit_ids, n))
        field = rng.randrange(3)
        if field == 0:
            hits.update(places_left=rng.randint(0, 2))
        elif field == 1:
            hits.update(reward=Decimal(rng.choice(["0.10", "0.25", "0.40"])))
        else:
            hits.update(status=rng.choice([HITStatus.PUBLISHED, HITStatus.PENDING]))
    elif kind == 6:  # HITs: a column no summary counts
        HIT.objects.filter(pk__in=_pick(rng, hit_ids, n)).update(
            expires_at=now + timedelta(days=rng.randint(1, 9))
        )
    elif kind == 7:  # new assignments, one or in bulk
        hit = HIT.objects.get(pk=rng.choice(hit_ids))
        Assignment.objects.bulk_create(
            Assignment(
                hit=hit,
                worker=rng.choice(people),
                provider=hit.provider,
                status=rng.choice([AssignmentStatus.RETURNED, AssignmentStatus.EXPIRED]),
                accepted_at=now - timedelta(hours=1),
                submitted_at=None,
                telemetry={},
            )
            for _ in range(n)
        )
        status = rng.choice(STATUSES)
        Assignment.objects.filter(pk__in=_pick(rng, assignments, 1)).update(status=status)
    elif kind == 8 and len(assignments) > 20:  # deleted, with their ledger entries
        LedgerEntry.objects.filter(assignment_id__in=ids).delete()
        rows.delete()
    elif kind == 9:  # ledger entries for some, then some deleted
        chosen = list(rows.order_by("pk").values_list("pk", "worker_id", "hit__stage_id"))
        for stage in stages:
            bonuses = [
                LedgerBonus(
                    key=f"mix:{pk}:{rng.random()}",
                    assignment_id=pk,
                    worker_id=who,
                    amount=Decimal("0.05"),
                    memo="mix",
                    fee=Decimal("0.01"),
                )
                for pk, who, stage_id in chosen
                if stage_id == stage.pk
            ]
            if bonuses:
                ledger_bonuses_write(stage=stage, bonuses=bonuses, status="planned", currency="USD")
    else:
        entries = list(LedgerEntry.objects.order_by("pk").values_list("pk", flat=True))
        LedgerEntry.objects.filter(pk__in=_pick(rng, entries, n)).delete()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_mixes_of_single_and_bulk_writes_leave_the_summaries_exact(seed):
    rng = random.Random(seed)
    stage, people, _ = _work(10)  # 10 HITs x 2 workers, all submitted
    other, more, _ = _work(6)
    people = [*people, *more, worker("mix")]
    for step in range(60):
        try:
            with transaction.atomic():
                _write(rng, [stage, other], people, _size(rng))
        except IntegrityError:  # one worker per HIT: the write is dropped
            pass
        if step % 10 == 9:
            _stage_counters_agree(stage, other)
            ids = [stage.pk, other.pk]
            assert stage_assignment_counts(stage_ids=ids) == stage_assignment_counts_full(
                stage_ids=ids
            )
        if step == 30:
            stage_counters_compact()
    _stage_counters_agree(stage, other)


@pytest.mark.parametrize("many", [False, True])
def test_held_work_moved_to_a_hit_of_the_same_stage_with_another_reward(many):
    """Held work moving between two HITs of one stage: the count is unchanged, the
    reward moves by the difference (0018's ``HAVING`` on the count alone dropped it)."""
    stage, _, rows = _work(12)  # 12 HITs x 2 workers, all submitted (held)
    first, second = HIT.objects.filter(stage=stage).order_by("pk")[:2]
    HIT.objects.filter(pk=second.pk).update(reward=first.reward + Decimal("0.25"))
    (moved,) = [r.pk for r in rows if r.hit_id == first.pk][:1]
    # One row, or more than 8 in one statement (the others' answers only).
    others = [r.pk for r in rows if r.hit_id not in (first.pk, second.pk)][: 9 if many else 0]
    new = worker("moved")
    Assignment.objects.filter(pk__in=[moved, *others]).update(
        hit_id=Case(
            When(pk=moved, then=Value(second.pk, output_field=BigIntegerField())),
            default=F("hit_id"),
            output_field=BigIntegerField(),
        ),
        worker_id=Case(
            When(pk=moved, then=Value(new.pk, output_field=BigIntegerField())),
            default=F("worker_id"),
            output_field=BigIntegerField(),
        ),
        answers={"again": True},
    )
    assert Assignment.objects.get(pk=moved).hit_id == second.pk
    _stage_counters_agree(stage)
