"""Gold items end to end: simulated good workers and spammers through the real pages,
then the review rules: spammers rejected and disqualified, good workers bonused once."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from campaigns.design.items import items_upload
from campaigns.design.services import campaign_create, stage_add
from campaigns.models import (
    Assignment,
    AssignmentStatus,
    Item,
    LedgerEntry,
    LedgerKind,
    LedgerStatus,
    QualificationGrant,
    QualificationKind,
    QualificationType,
    WorkerBlock,
)
from campaigns.platforms.publishing import campaign_start
from campaigns.simulate import simulate_crowd
from campaigns.work.gold_mix import gold_mix_order
from campaigns.work.selectors.loading import hit_items
from tests.factories import UserFactory
from validation.gold import gold_bonus_blocks
from validation.rules.settings import bonus_rules_validate, review_rules_validate
from validation.selectors import stage_quality, worker_gold_accuracy
from validation.tasks import review_stage_task

pytestmark = pytest.mark.django_db(transaction=True)

OPTIONS = ["red", "green", "blue", "grey"]


def _rows():
    regular = [
        {
            "external_id": f"q{n}",
            "passage": f"Passage {n}.",
            "question": f"Q{n}?",
            "options": OPTIONS,
            "writer_correct": n % 4,
        }
        for n in range(12)
    ]
    # Gold: the right option is never A, which spammers always pick.
    gold = [
        {
            "external_id": f"g{n}",
            "passage": f"Gold passage {n}.",
            "question": f"G{n}?",
            "options": OPTIONS,
            "writer_correct": 2,
            "gold": 2,
        }
        for n in range(8)
    ]
    order = gold_mix_order(list(range(12)), list(range(100, 108)), ratio=0.4, seed=3)
    return [gold[i - 100] if i >= 100 else regular[i] for i in order]


def test_gold_disqualifies_spammers_and_bonuses_good_workers_once():
    owner = UserFactory.create(username="gold-owner")
    campaign = campaign_create(owner=owner, name="Gold", slug="gold-sim")
    qualification = QualificationType.objects.create(
        owner=owner, name="Validator", kind=QualificationKind.GOLD_ACCURACY
    )
    review_rules = [
        {"rule": "gold_accuracy", "min": 0.5, "min_gold": 4},
        {
            "rule": "gold_disqualify",
            "min": 0.5,
            "min_gold": 4,
            "qualification": qualification.pk,
            "block": True,
        },
    ]
    bonus_rules = [{"rule": "gold_bonus", "amount": "0.25", "block": 4, "correct": 3}]
    assert review_rules_validate(review_rules) == [] == bonus_rules_validate(bonus_rules)
    stage = stage_add(
        campaign=campaign,
        name="Validate",
        task_type="mc_validation",
        reward=Decimal("0.20"),
        assignments_per_hit=6,
        gold_ratio=Decimal("0.4"),
        review_rules=review_rules,
        bonus_rules=bonus_rules,
    )
    items_upload(
        stage=stage,
        content="\n".join(json.dumps(r) for r in _rows()).encode(),
        filename="items.jsonl",
    )
    assert Item.objects.filter(stage=stage, gold__isnull=False).count() == 8
    # Workers cannot tell gold apart: the gold answer is not in the item data the page gets.
    gold_item = Item.objects.filter(stage=stage, gold__isnull=False).earliest("pk")
    assert "gold" not in gold_item.data
    campaign_start(campaign=campaign, to_state="live")
    assert all(set(i) == {"id", "external_id", "data"} for i in hit_items(hit=gold_item.hits.get()))

    result = simulate_crowd(
        campaign=campaign, workers=6, seed=4, shares={"good": 0.67, "spammer": 0.33}
    )
    # The only refusals: spammers blocked mid-run (the submit hook ran the gold rule).
    assert result.server_errors() == 0
    assert all("(spammer): unexpected status 403" in e and "/accept/" in e for e in result.errors)

    stored = Assignment.objects.filter(hit__stage=stage).exclude(answers__isnull=True)
    tallies = worker_gold_accuracy(stage=stage)
    spammers = {w for w, t in tallies.items() if t.total >= 4 and t.correct / t.total < 0.5}
    good = {w for w, t in tallies.items() if t.total >= 4 and t.correct / t.total >= 0.5}
    unjudged = {w for w, t in tallies.items() if t.total < 4}
    assert spammers, {w: (t.correct, t.total) for w, t in tallies.items()}
    assert len(good) == 4
    for w in set(stored.values_list("worker_id", flat=True)):
        QualificationGrant.objects.get_or_create(
            qualification_type=qualification, worker_id=w, defaults={"source": "quiz"}
        )

    first = review_stage_task(stage.pk)
    second = review_stage_task(stage.pk)

    # Spammers: every assignment rejected by the gold rule, qualification revoked, blocked.
    for w in spammers:
        statuses = set(stored.filter(worker_id=w).values_list("status", flat=True))
        assert statuses == {AssignmentStatus.REJECTED}
        assert set(stored.filter(worker_id=w).values_list("decision_source", flat=True)) == {
            "rule:gold_accuracy"
        }
        assert QualificationGrant.objects.get(worker_id=w).revoked_at is not None
        assert WorkerBlock.objects.filter(worker_id=w, requester=owner).count() == 1
    # Good workers: approved, keep the qualification, one bonus per 3-of-4 block, once.
    bonuses = LedgerEntry.objects.filter(campaign=campaign, kind=LedgerKind.BONUS)
    for w in good:
        assert set(stored.filter(worker_id=w).values_list("status", flat=True)) == {
            AssignmentStatus.APPROVED
        }
        assert QualificationGrant.objects.get(worker_id=w).revoked_at is None
        expected = len(gold_bonus_blocks(tallies[w].outcomes))
        assert expected >= 1
        assert bonuses.filter(worker_id=w).count() == expected
    assert not bonuses.filter(worker_id__in=spammers).exists()
    assert set(bonuses.values_list("status", "amount")) == {(LedgerStatus.PLANNED, Decimal("0.25"))}
    assert first["worker_actions"]["revoked"] == len(spammers)
    # A spammer who gave up before answering 4 gold items is not judged by the gold rules.
    for w in unjudged:
        assert QualificationGrant.objects.get(worker_id=w).revoked_at is None
        assert not stored.filter(worker_id=w, decision_source="rule:gold_accuracy").exists()
    assert not any(second["worker_actions"].values())
    # Nothing left to decide: only the unjudged spammer's work stays without a decision.
    assert set(second["decisions"]) <= {"none"}

    quality = stage_quality(stage=stage)
    by_worker = {q.worker_id: q for q in quality.workers}
    assert all((by_worker[w].gold_accuracy or 0) < 0.5 for w in spammers)
    assert all(by_worker[w].approval_rate == 1.0 for w in good)
