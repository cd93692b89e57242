"""The dashboard's stage figures (``stage_quality``, ``stage_agreement``, the label
triples, linking's entity agreement) read a stage's answers a chunk at a time: on a
small campaign of several stages they equal, at every chunk size, what the whole-stage
reads computed before (kept here as the reference), and so does the dataset card's
table built from them."""

from __future__ import annotations

import statistics
from collections import defaultdict
from decimal import Decimal
from typing import Any

import pytest

import linking.selectors as linking_selectors
import validation.selectors as quality_selectors
from campaigns.exports.card_facts import campaign_facts
from campaigns.exports.figures import stage_rows_markdown
from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    HITItem,
    Item,
    ItemSource,
    Provider,
    Stage,
    Worker,
)
from campaigns.tasktypes.base import answer_for_item
from linking.agreement import agreement_summary, entity_links, link_set
from linking.selectors import stage_entity_agreement, value_spans
from tests.factories import CampaignFactory
from tests.validation.db_helpers import mc_item, submit, worker
from validation.labels import LabelTable
from validation.rules.facts import facts_build
from validation.selectors import (
    AgreementSummary,
    StageQuality,
    WorkerQuality,
    hourly_wage,
    stage_agreement,
    stage_items_by_hit,
    stage_label_triples,
    stage_quality,
    stage_submissions,
)

pytestmark = pytest.mark.django_db

APPROVED, REJECTED, SUBMITTED = (
    AssignmentStatus.APPROVED,
    AssignmentStatus.REJECTED,
    AssignmentStatus.SUBMITTED,
)


def _stage(campaign: Campaign, name: str, task_type: str, **fields: Any) -> Stage:
    return Stage.objects.create(
        campaign=campaign,
        name=name,
        task_type=task_type,
        position=Stage.objects.filter(campaign=campaign).count(),
        reward=Decimal("0.40"),
        **{"assignments_per_hit": 3, **fields},
    )


def _hits(stage: Stage, layout: list[list[Item]]) -> list[HIT]:
    """One HIT per entry of ``layout`` holding those items (an item may repeat)."""
    out = []
    for n, items in enumerate(layout):
        hit = HIT.objects.create(
            stage=stage,
            provider=Provider.LOCAL,
            provider_hit_id=f"{stage.pk}-{n}",
            max_assignments=3,
            places_left=3,
            reward=stage.reward,
            status="published",
        )
        for position, item in enumerate(items):
            HITItem.objects.create(hit=hit, item=item, position=position)
        out.append(hit)
    return out


def _items(stage: Stage, data: list[dict[str, Any]], gold: dict[int, Any]) -> list[Item]:
    return [
        Item.objects.create(
            stage=stage,
            external_id=f"{stage.pk}-i{n}",
            data=d,
            gold=gold.get(n),
            source=ItemSource.UPLOADED,
        )
        for n, d in enumerate(data)
    ]


def _campaign() -> Campaign:
    """Four stages: a validation stage with gold, mixed decisions and a missing work
    time; one of two items per HIT where a HIT repeats an item (reused gold); an entity
    linking stage; and a stage with no work."""
    campaign = CampaignFactory.create(state="live", provider=Provider.LOCAL)
    people = [worker(f"chunk-{n}") for n in range(5)]

    one = _stage(
        campaign,
        "Validate",
        "mc_validation",
        review_rules=[{"rule": "gold_accuracy", "sentence_threshold": 0.5}],
    )
    items = _items(one, [mc_item(n) for n in range(7)], gold={0: 1, 3: 2})
    statuses = [APPROVED, APPROVED, REJECTED, SUBMITTED, APPROVED]
    for h, hit in enumerate(_hits(one, [[i] for i in items])):
        for k, who in enumerate(people[: 3 + h % 3]):
            made = submit(
                hit,
                who,
                {"choice": (h + k * (h % 2)) % 4},
                seconds=40 + 17 * ((h * 5 + k * 3) % 11),
                status=statuses[(h + k) % len(statuses)],
            )
            if (h, k) == (2, 1):
                Assignment.objects.filter(pk=made.pk).update(work_seconds=None)

    two = _stage(campaign, "Validate pairs", "mc_validation", items_per_hit=2)
    items = _items(two, [mc_item(n) for n in range(5)], gold={4: 0})
    layout = [[items[0], items[1]], [items[2], items[3]], [items[4], items[0]]]
    for h, hit in enumerate(_hits(two, layout)):
        for k, who in enumerate(people[1:4]):
            submit(hit, who, {"choice": (h * k) % 3}, seconds=30 + 11 * h + 7 * k)

    three = _stage(campaign, "Link", "answer_entity_linking", assignments_per_hit=2)
    data = [{"question": f"Who is {n}?", "answer": f"Person {n}"} for n in range(4)]
    items = _items(three, data, gold={})
    for h, hit in enumerate(_hits(three, [[i] for i in items])):
        for k, who in enumerate(people[: 2 + h % 2]):
            qid = f"Q{h}" if k < 2 or h == 3 else "Q99"
            qid = "Q7" if (h, k) == (2, 1) else qid
            links = [{"start": 0, "end": 6, "text": f"Person {h}", "qid": qid, "none": False}]
            submit(hit, who, {"links": links}, seconds=50 + 9 * k, status=APPROVED)

    _stage(campaign, "Nothing yet", "mc_validation")
    return campaign


# --- The whole-stage reads as they were before the chunks (the reference) ------------


def _triples_before(stage: Stage, items: Any, submissions: Any) -> list[Any]:
    triples, seen = [], set()
    for sub in submissions:
        if sub.status == REJECTED:
            continue
        refs = [{"id": i.id, "external_id": i.external_id} for i in items.get(sub.hit_id, [])]
        for item_id, entry in quality_selectors.entries_by_item(sub.answers, refs).items():
            label = quality_selectors.categorical_label(
                stage.task_type, entry, dimension="answerable"
            )
            if label is not None and (item_id, sub.worker_id) not in seen:
                seen.add((item_id, sub.worker_id))
                triples.append((item_id, sub.worker_id, label))
    return triples


def _agreement_before(triples: list[Any]) -> AgreementSummary:
    if not triples:
        return AgreementSummary(None, None, 0, 0, 0)
    table = LabelTable.from_triples(triples)
    counts = table.value_counts
    m = counts.sum(axis=1)
    same = counts[table.item_code, table.label_code] - 1
    others = m[table.item_code] - 1
    ok = others > 0
    per = defaultdict(list)
    for code, share in zip(table.annotator_code[ok], (same[ok] / others[ok]), strict=True):
        per[int(code)].append(float(share))
    return AgreementSummary(
        alpha=quality_selectors.krippendorff_alpha(table),
        percent_agreement=quality_selectors.percent_agreement(table),
        items=len(table.items),
        annotators=len(table.annotators),
        labels=len(table.labels),
        per_worker={
            int(table.annotators[c]): float(quality_selectors.np.mean(v))  # type: ignore[call-overload]
            for c, v in per.items()
        },
    )


def _quality_before(stage: Stage) -> StageQuality:
    floor = quality_selectors.DEFAULT_WAGE_FLOOR
    submissions = stage_submissions(stage=stage)
    items = stage_items_by_hit(stage=stage)
    facts = facts_build(
        task_type=stage.task_type,
        items_by_hit=items,
        submissions=submissions,
        rules=[{"rule": "gold_accuracy", "sentence_threshold": 0.5}],
    )
    agreement = _agreement_before(_triples_before(stage, items, submissions))
    by_worker: dict[int, list[Any]] = defaultdict(list)
    for sub in submissions:
        by_worker[sub.worker_id].append(sub)
    names = dict(Worker.objects.filter(pk__in=list(by_worker)).values_list("pk", "pseudonym"))
    workers = []
    for worker_id, subs in sorted(by_worker.items()):
        approved = sum(s.status == APPROVED for s in subs)
        rejected = sum(s.status == REJECTED for s in subs)
        tally = facts.gold_tally(worker_id, 0.5)
        times = [s.work_seconds for s in subs if s.work_seconds is not None]
        median = statistics.median(times) if times else None
        wage = hourly_wage(stage.reward, median)
        workers.append(
            WorkerQuality(
                worker_id=worker_id,
                pseudonym=names.get(worker_id, ""),
                submitted=len(subs),
                approved=approved,
                rejected=rejected,
                approval_rate=approved / (approved + rejected) if approved + rejected else None,
                gold_correct=tally.correct,
                gold_total=tally.total,
                gold_accuracy=tally.accuracy,
                agreement=agreement.per_worker.get(worker_id),
                median_work_seconds=median,
                hourly_wage=wage,
                below_wage_floor=wage is not None and wage < floor,
            )
        )
    approved = sum(w.approved for w in workers)
    rejected = sum(w.rejected for w in workers)
    times = [s.work_seconds for s in submissions if s.work_seconds is not None]
    median = statistics.median(times) if times else None
    wage = hourly_wage(stage.reward, median)
    correct = sum(w.gold_correct for w in workers)
    total = sum(w.gold_total for w in workers)
    return StageQuality(
        stage_id=stage.pk,
        assignments=len(submissions),
        approved=approved,
        rejected=rejected,
        held=0,
        approval_rate=approved / (approved + rejected) if approved + rejected else None,
        gold_correct=correct,
        gold_total=total,
        gold_accuracy=correct / total if total else None,
        agreement=agreement,
        median_work_seconds=median,
        hourly_wage=wage,
        wage_floor=floor,
        below_wage_floor=wage is not None and wage < floor,
        workers=workers,
    )


def _entity_before(stage: Stage) -> Any:
    rows = list(
        HITItem.objects.filter(hit__stage=stage)
        .order_by("item_id")
        .values_list("hit_id", "item_id", "item__external_id", "item__data")
    )
    answers: dict[int, list[Any]] = defaultdict(list)
    for hit_id, answer in (
        Assignment.objects.filter(hit__stage=stage, status__in=(SUBMITTED, APPROVED))
        .order_by("submitted_at", "id")
        .values_list("hit_id", "answers")
    ):
        answers[hit_id].append(answer)
    out = []
    for hit_id, _item_id, external_id, data in rows:
        sets = []
        for answer in answers.get(hit_id, []):
            entry = answer_for_item(answer, {"external_id": external_id})
            if entry is not None:
                sets.append(link_set(entry.get("links", [])))
        values = value_spans(data.get("proposed_spans") or [])
        prefilled = link_set(data.get("prefilled_links", [])) if data.get("seen") else None
        out.append(([entity_links(s, values=values) for s in sets], prefilled))
    return agreement_summary(out)


@pytest.mark.parametrize("chunk", [1, 2, 3, 10_000])
def test_chunked_figures_equal_the_whole_stage_reads(monkeypatch, chunk):
    campaign = _campaign()
    stages = list(campaign.stages.order_by("position"))
    before = {s.pk: (_quality_before(s), _entity_before(s)) for s in stages}
    card_before = stage_rows_markdown(campaign_facts(campaign=campaign))

    monkeypatch.setattr(quality_selectors, "LOAD_CHUNK", chunk)
    monkeypatch.setattr(linking_selectors, "LINK_SETS_CHUNK", chunk)
    for stage in stages:
        quality, entity = before[stage.pk]
        assert stage_quality(stage=stage) == quality, stage.name
        assert stage_agreement(stage=stage) == quality.agreement, stage.name
        items = stage_items_by_hit(stage=stage)
        assert stage_label_triples(stage=stage) == _triples_before(
            stage, items, stage_submissions(stage=stage)
        )
        assert stage_entity_agreement(stage=stage) == entity, stage.name
    assert stage_rows_markdown(campaign_facts(campaign=campaign)) == card_before

    # The campaign has what the comparison is about.
    validate, pairs, link, empty = (before[s.pk] for s in stages)
    assert validate[0].gold_total
    assert validate[0].rejected
    assert validate[0].agreement.alpha
    assert validate[0].assignments == 27
    assert pairs[0].agreement.items == 5
    assert (link[1].items, link[1].with_two, link[1].agreed_after_2) == (4, 4, 3)
    assert empty[0].assignments == 0
