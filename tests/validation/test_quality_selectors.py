"""Dashboard selectors on a small stage computed by hand."""

from __future__ import annotations

from decimal import Decimal

import pytest

from campaigns.models import AssignmentStatus
from tests.factories import UserFactory
from tests.validation.db_helpers import hits, make_stage, mc_item, submit, worker
from validation.selectors import stage_agreement, stage_final_labels, stage_quality
from validation.services import assignment_override

pytestmark = pytest.mark.django_db


def _stage():
    """3 items x 3 workers. Labels: item 0 (0,0,0), item 1 (0,0,2), item 2 (2,2,2).
    Gold: item 0 = 1 (all wrong), item 2 = 2 (all right). Writer of item 1 says 2."""

    def data(n):
        return {**mc_item(n), **({"writer_correct": 2} if n == 1 else {})}

    stage = make_stage(items=3, gold={0: 1, 2: 2}, data=data, reward=Decimal("0.50"))
    w1, w2, w3 = worker("a"), worker("b"), worker("c")
    labels = {w1: (0, 0, 2), w2: (0, 0, 2), w3: (0, 2, 2)}
    seconds = {w1: (60, 60, 60), w2: (90, 90, 90), w3: (240, 240, 240)}
    for n, hit in enumerate(hits(stage)):
        for who in (w1, w2, w3):
            submit(
                hit,
                who,
                {"choice": labels[who][n]},
                seconds=seconds[who][n],
                status=AssignmentStatus.APPROVED,
            )
    return stage, (w1, w2, w3)


def test_agreement_by_hand():
    stage, (w1, _w2, w3) = _stage()
    agreement = stage_agreement(stage=stage)
    # Coincidences: o(0,2) = o(2,0) = 1 (item 1); n_0 = 5, n_2 = 4, n = 9.
    # D_o = 2/9, D_e = 2*5*4/(9*8) = 5/9, alpha = 1 - 0.4 = 0.6.
    assert agreement.alpha == pytest.approx(0.6)
    assert agreement.percent_agreement == pytest.approx((1 + 1 / 3 + 1) / 3)
    assert (agreement.items, agreement.annotators, agreement.labels) == (3, 3, 2)
    assert agreement.per_worker[w1.pk] == pytest.approx((1 + 0.5 + 1) / 3)
    assert agreement.per_worker[w3.pk] == pytest.approx((1 + 0 + 1) / 3)


def test_quality_gold_approval_time_and_wage():
    stage, (w1, _w2, w3) = _stage()
    quality = stage_quality(stage=stage)
    assert (quality.assignments, quality.approved, quality.rejected) == (9, 9, 0)
    assert (quality.gold_correct, quality.gold_total) == (3, 6)
    assert quality.gold_accuracy == 0.5
    assert quality.median_work_seconds == 90
    assert quality.hourly_wage == Decimal("20.00")  # 0.50 * 3600 / 90
    assert not quality.below_wage_floor
    workers = {q.worker_id: q for q in quality.workers}
    assert (workers[w1.pk].gold_correct, workers[w1.pk].gold_total) == (1, 2)
    assert workers[w3.pk].hourly_wage == Decimal("7.50")  # 0.50 * 3600 / 240
    assert workers[w3.pk].below_wage_floor
    assert not workers[w1.pk].below_wage_floor
    assert stage_quality(stage=stage, wage_floor=Decimal("25")).below_wage_floor

    from campaigns.models import Assignment

    one = Assignment.objects.filter(worker=w3).earliest("pk")
    assignment_override(
        assignment=one, decision="reject", decided_by=UserFactory.create(), reason="spam"
    )
    quality = stage_quality(stage=stage)
    workers = {q.worker_id: q for q in quality.workers}
    assert workers[w3.pk].approval_rate == pytest.approx(2 / 3)
    assert quality.approval_rate == pytest.approx(8 / 9)


def test_final_labels_with_and_without_the_writer():
    stage, _ = _stage()
    items = {i.external_id: i.pk for i in stage.items.all()}
    plain = stage_final_labels(stage=stage)
    assert plain.labels == {items["i0"]: "0", items["i1"]: "0", items["i2"]: "2"}
    # Nangia et al.: the writer's label is one more vote: item 1 becomes 0,0,2 + 2 -> tie.
    nangia = stage_final_labels(stage=stage, count_writer=True)
    assert items["i1"] not in nangia.labels
    assert nangia.discarded[items["i1"]] == "tie"
    # The same as a stage option.
    stage.review_rules = [{"rule": "final_labels", "count_writer": True}]
    assert stage_final_labels(stage=stage).labels == nangia.labels
    assert stage_final_labels(stage=stage, discard_labels=["2"]).discarded[items["i2"]] == (
        "discard_label"
    )
