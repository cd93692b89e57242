"""Issue 19, point 18: Nangia et al.'s 10-way validation subset (ACL 2021, §4-5.1) as a
stage option: 500 examples per arm get ten validators; four of them plus the writer
vote the gold label, the other six estimate human performance."""

from __future__ import annotations

from collections.abc import Hashable
from decimal import Decimal

import pytest
from django.utils import timezone

from campaigns.design.services import campaign_create, stage_add
from campaigns.models import HIT, Assignment, HITItem, Item, ItemSource
from campaigns.recipes.services import recipe_apply
from qaportal.errors import DomainError
from tests.factories import WorkerFactory
from validation.selectors import stage_final_labels
from validation.ten_way import ten_way_estimate, ten_way_gold_labels
from validation.ten_way_subset import ten_way_subset_select


def test_estimate_uses_four_plus_the_writer_for_gold_and_six_for_humans():
    # Ten validators: seven say "1", three say "2"; the writer says "1".
    labels = ["1"] * 7 + ["2"] * 3
    result = ten_way_estimate({"q": ("1", labels)}, gold_votes=4, min_labels=10)
    assert (result.items, result.scored, result.gold) == (1, 1, {"q": "1"})
    voters = ten_way_gold_labels({"q": labels}, gold_votes=4)["q"]
    assert len(voters) == 4
    held: list[Hashable] = list(labels)
    for label in voters:
        held.remove(label)
    assert len(held) == 6
    ones = held.count("1")
    if ones != 3:  # a 3-3 tie is broken at random
        assert result.accuracy == (1.0 if ones > 3 else 0.0)
    # Nine of ten agree with the writer: the six held out always match the gold.
    clear = ten_way_estimate({"q": ("1", ["1"] * 9 + ["2"])}, min_labels=10)
    assert clear.accuracy == 1.0
    # "invalid" as gold and no majority are discarded; 2-way items do not count.
    invalid = ten_way_estimate(
        {"q": ("invalid", ["invalid"] * 10)}, discard_labels=["invalid"], min_labels=10
    )
    assert (invalid.scored, invalid.discarded) == (0, 1)
    assert ten_way_estimate({"q": ("1", ["1", "1"])}, min_labels=10).items == 0
    many = {f"q{n}": ("1", ["1"] * 8 + ["2"] * 2) for n in range(50)}
    assert ten_way_estimate(many, min_labels=10).accuracy == 1.0


@pytest.mark.django_db
def test_ten_way_subset_as_a_stage_option(requester):
    from rest_framework.test import APIClient

    campaign = campaign_create(owner=requester, name="Ng", slug="ng-ten")
    writing = {
        arm: stage_add(
            campaign=campaign,
            name=f"{arm}: Main",
            task_type="mc_question_writing",
            config={"arm": arm},
        )
        for arm in ("BASELINE", "EXPERT")
    }
    validation = stage_add(
        campaign=campaign,
        name="Validation",
        task_type="mc_validation",
        assignments_per_hit=2,
        config={"ten_way": {"per_arm": 2, "annotators": 10, "gold_votes": 4}},
        review_rules=[{"rule": "final_labels", "count_writer": True, "dimension": "choice"}],
    )
    now = timezone.now()
    hits = {}
    for arm, stage in writing.items():
        for n in range(4):
            work = Assignment.objects.create(
                hit=HIT.objects.create(stage=stage, provider="local", reward=Decimal("3.50")),
                worker=WorkerFactory.create(provider="local"),
                provider="local",
                status="approved",
                answers={},
                accepted_at=now,
                submitted_at=now,
            )
            item = Item.objects.create(
                stage=validation,
                external_id=f"{arm}-{n}",
                source=ItemSource.PRODUCED,
                source_assignment=work,
                data={
                    "passage": "P.",
                    "question": "Q?",
                    "options": ["a", "b", "c", "d"],
                    "writer_correct": 1,
                },
            )
            hit = HIT.objects.create(
                stage=validation,
                provider="local",
                reward=Decimal("0.75"),
                max_assignments=2,
                places_left=2,
                status="published",
            )
            HITItem.objects.create(hit=hit, item=item, position=0)
            hits[item.external_id] = hit
    api = APIClient()
    api.force_authenticate(requester)
    picked = api.post(f"/api/v1/stages/{validation.pk}/ten-way/").json()
    assert picked["items"] == {"BASELINE": 2, "EXPERT": 2}
    assert picked["raised"] == 4
    raised = [k for k, h in hits.items() if HIT.objects.get(pk=h.pk).max_assignments == 10]
    assert sorted(k.split("-")[0] for k in raised) == ["BASELINE"] * 2 + ["EXPERT"] * 2
    again = api.post(f"/api/v1/stages/{validation.pk}/ten-way/").json()
    assert again["raised"] == 0  # idempotent

    # Ten validators on one 10-way example: 7 agree with the writer ("1"), 3 say "2".
    chosen = next(k for k in raised if k.startswith("EXPERT"))
    item = Item.objects.get(external_id=chosen)
    for choice in [1] * 7 + [2] * 3:
        Assignment.objects.create(
            hit=hits[chosen],
            worker=WorkerFactory.create(provider="local"),
            provider="local",
            status="submitted",
            answers={"items": [{"external_id": chosen, "choice": choice}]},
            accepted_at=now,
            submitted_at=now,
        )
    body = api.get(f"/api/v1/stages/{validation.pk}/ten-way/").json()
    assert body["settings"] == {"per_arm": 2, "annotators": 10, "gold_votes": 4}
    assert body["overall"]["items"] == 1
    assert body["arms"]["EXPERT"]["scored"] == 1
    assert body["overall"]["accuracy"] is not None
    # The final label of a 10-way item is voted by four validators plus the writer.
    vote = stage_final_labels(stage=validation)
    assert vote.labels[item.pk] == "1"

    plain = stage_add(campaign=campaign, name="Plain", task_type="mc_validation")
    assert api.get(f"/api/v1/stages/{plain.pk}/ten-way/").status_code == 400
    assert api.post(f"/api/v1/stages/{plain.pk}/ten-way/").status_code == 400
    with pytest.raises(DomainError):
        stage_add(
            campaign=campaign,
            name="Bad",
            task_type="mc_validation",
            config={"ten_way": {"per_arm": 0}},
        )


@pytest.mark.django_db
def test_nangia_validation_stage_has_the_ten_way_option(requester):
    campaign = campaign_create(owner=requester, name="Ng", slug="ng-recipe-ten")
    stages = {s.name: s for s in recipe_apply(campaign=campaign, name="nangia", scale="paper")}
    assert stages["Validation"].config["ten_way"] == {
        "per_arm": 500,
        "annotators": 10,
        "gold_votes": 4,
    }


def test_ten_way_gold_needs_a_majority_not_a_plurality():
    """Issue 35, point 4 (§5): gold is a majority over four validators plus the writer;
    two of five (writer "1", validators 1 / 2 / 3 / 0) is no majority: discarded."""
    split = ten_way_estimate({"q": ("1", ["1", "2", "3", "0"])}, gold_votes=4, min_labels=4)
    assert (split.scored, split.discarded, split.gold) == (0, 1, {})
    clear = ten_way_estimate({"q": ("1", ["1", "1", "3", "0"])}, gold_votes=4, min_labels=4)
    assert (clear.scored, clear.gold) == (1, {"q": "1"})


@pytest.mark.django_db
def test_ten_way_subset_is_drawn_from_all_of_an_arms_examples(requester):
    """Issue 35, point 4 (§4: 500 randomly sampled examples per protocol): HITs whose
    places are all taken count too (they are reopened), and a HIT holding two arms'
    examples (§4 shuffles the protocols together) counts for both."""
    campaign = campaign_create(owner=requester, name="Ng", slug="ng-ten-all")
    writing = {
        arm: stage_add(
            campaign=campaign,
            name=f"{arm}: Main",
            task_type="mc_question_writing",
            config={"arm": arm},
        )
        for arm in ("BASELINE", "EXPERT")
    }
    validation = stage_add(
        campaign=campaign,
        name="Validation",
        task_type="mc_validation",
        assignments_per_hit=2,
        items_per_hit=2,
        config={"ten_way": {"per_arm": 3, "annotators": 10, "gold_votes": 4}},
    )
    now = timezone.now()
    hits = []
    for n in range(4):
        hit = HIT.objects.create(
            stage=validation,
            provider="local",
            reward=Decimal("0.75"),
            max_assignments=2,
            places_left=0,
            status="completed",
        )
        hits.append(hit)
        for position, (arm, stage) in enumerate(writing.items()):
            work = Assignment.objects.create(
                hit=HIT.objects.create(stage=stage, provider="local", reward=Decimal("3.50")),
                worker=WorkerFactory.create(provider="local"),
                provider="local",
                status="approved",
                answers={},
                accepted_at=now,
                submitted_at=now,
            )
            item = Item.objects.create(
                stage=validation,
                external_id=f"{arm}-{n}",
                source=ItemSource.PRODUCED,
                source_assignment=work,
                data={"passage": "P.", "question": "Q?", "options": ["a", "b", "c", "d"]},
            )
            HITItem.objects.create(hit=hit, item=item, position=position)
    picked = ten_way_subset_select(stage=validation)
    assert picked.items == {"BASELINE": 3, "EXPERT": 3}
    assert picked.raised == 3
    reopened = HIT.objects.filter(pk__in=[h.pk for h in hits], max_assignments=10)
    assert reopened.count() == 3
    assert set(reopened.values_list("status", flat=True)) == {"published"}
    assert ten_way_subset_select(stage=validation).raised == 0
