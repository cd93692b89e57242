"""Stages: /api/v1/campaigns/{slug}/stages/, /api/v1/stages/{id}/ and /link/."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from campaigns.models import Campaign, CampaignState, Stage
from tests.factories import AssignmentFactory, HITFactory, ItemFactory, StageFactory

pytestmark = pytest.mark.django_db

STAGES = "/api/v1/campaigns/alpha/stages/"


def stage_url(stage_id: int, suffix: str = "") -> str:
    return f"/api/v1/stages/{stage_id}/{suffix}"


NEW_STAGE = {
    "name": "Elicit questions",
    "task_type": "question_writing",
    "config": {"questions_per_hit": 5},
    "instructions": "Write five questions.",
    "reward": "0.50",
    "assignments_per_hit": 2,
    "items_per_hit": 3,
    "assignment_duration": 1800,
    "lifetime": 3 * 86400,
    "gold_ratio": "0.100",
}


def test_list_stages_in_order_with_counts(token_client, campaign):
    second = StageFactory.create(campaign=campaign, name="Link answers", position=1)
    first = StageFactory.create(campaign=campaign, name="Write", position=0)
    ItemFactory.create_batch(2, stage=first)
    hit = HITFactory.create(stage=first)
    AssignmentFactory.create_batch(3, hit=hit)

    response = token_client.get(STAGES)

    assert response.status_code == 200
    rows = response.json()["results"]
    assert [r["id"] for r in rows] == [first.pk, second.pk]
    assert (rows[0]["item_count"], rows[0]["hit_count"], rows[0]["assignment_count"]) == (2, 1, 3)
    assert (rows[1]["item_count"], rows[1]["hit_count"], rows[1]["assignment_count"]) == (0, 0, 0)


def test_add_stage(token_client, campaign):
    response = token_client.post(STAGES, NEW_STAGE, format="json")

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["campaign"] == "alpha"
    assert body["position"] == 0
    assert body["reward"] == "0.50"
    assert body["gold_ratio"] == "0.100"
    assert body["assignment_duration"] == 1800
    assert body["lifetime"] == 259200
    assert body["config"] == {"questions_per_hit": 5}
    stored = Stage.objects.get(pk=body["id"])
    assert stored.assignment_duration == timedelta(minutes=30)
    assert stored.lifetime == timedelta(days=3)
    assert stored.reward == Decimal("0.50")


def test_add_stage_defaults_and_positions(token_client, stage):
    response = token_client.post(
        STAGES, {"name": "Second", "task_type": "question_writing"}, format="json"
    )

    assert response.status_code == 201
    body = response.json()
    assert body["position"] == stage.position + 1
    assert body["assignment_duration"] == 3600
    assert body["lifetime"] == 7 * 86400


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"task_type": "translate"}, "task_type"),
        ({"reward": "-1"}, "reward"),
        ({"items_per_hit": 0}, "items_per_hit"),
        ({"gold_ratio": "1.5"}, "gold_ratio"),
        ({"assignment_duration": "1h"}, "assignment_duration"),
        ({"lifetime": 0}, "lifetime"),
        ({"config": ["not", "an", "object"]}, "config"),
        ({"position": 4}, "position"),
    ],
)
def test_add_stage_validation_errors_name_the_field(token_client, campaign, change, field):
    response = token_client.post(STAGES, {**NEW_STAGE, **change}, format="json")

    assert response.status_code == 400
    assert field in response.json()
    assert not Stage.objects.exists()


def test_add_stage_config_checked_by_task_type(token_client, campaign):
    response = token_client.post(
        STAGES, {**NEW_STAGE, "config": {"questions_per_hit": 50}}, format="json"
    )

    assert response.status_code == 400
    assert "config" in response.json()["errors"]


def test_unknown_config_key_is_refused_by_name(token_client, campaign, stage):
    """Issue 36, point 5: a misspelt setting is not stored and silently ignored."""
    added = token_client.post(
        STAGES, {**NEW_STAGE, "config": {"questions_per_hitt": 3}}, format="json"
    )
    patched = token_client.patch(
        stage_url(stage.pk), {"config": {"questions_per_hit": 2, "colour": "red"}}, format="json"
    )

    for response in (added, patched):
        assert response.status_code == 400
        (problem,) = response.json()["errors"]["config"]
        assert problem.startswith("questions_per_hitt: unknown setting") or problem.startswith(
            "colour: unknown setting"
        )
        assert "questions_per_hit" in problem.split("known:")[1]
    stage.refresh_from_db()
    assert "colour" not in stage.config
    # Settings every stage may carry (the protocol arm, expected minutes) stay accepted.
    ok = token_client.patch(
        stage_url(stage.pk),
        {"config": {"questions_per_hit": 2, "arm": "CROWD", "estimated_minutes": 4}},
        format="json",
    )
    assert ok.status_code == 200


def test_a_requirement_naming_nothing_known_is_refused(token_client, campaign, stage):
    """The help's old example saved silently and enforced nothing."""
    wrong = [{"system": "approval_rate", "comparator": ">=", "value": 95}]
    added = token_client.post(
        STAGES, {**NEW_STAGE, "qualification_requirements": wrong}, format="json"
    )
    patched = token_client.patch(
        stage_url(stage.pk),
        {"qualification_requirements": [{"kind": "approval_rat", "min": 95}]},
        format="json",
    )

    assert added.status_code == 400
    (problem,) = added.json()["errors"]["qualification_requirements"]
    assert "comparator, system, value" in problem
    assert '{"kind": "approval_rate", "min": 95}' in problem
    assert patched.status_code == 400
    assert "unknown kind 'approval_rat'" in patched.json()["detail"]
    right = token_client.patch(
        stage_url(stage.pk),
        {"qualification_requirements": [{"kind": "approval_rate", "min": 95}]},
        format="json",
    )
    assert right.status_code == 200


def test_add_stage_with_taken_name(token_client, stage):
    response = token_client.post(STAGES, {**NEW_STAGE, "name": stage.name}, format="json")

    assert response.status_code == 400
    assert response.json()["errors"] == {"name": ["taken"]}


def test_stages_frozen_once_live(token_client, stage):
    Campaign.objects.filter(slug="alpha").update(state=CampaignState.LIVE)

    added = token_client.post(STAGES, NEW_STAGE, format="json")
    changed = token_client.patch(stage_url(stage.pk), {"reward": "9.00"}, format="json")

    assert added.status_code == 409
    assert changed.status_code == 409
    assert "only draft and pilot" in changed.json()["detail"]
    stage.refresh_from_db()
    assert stage.reward == Decimal("1.25")


def test_retrieve_stage(token_client, stage):
    ItemFactory.create(stage=stage)

    response = token_client.get(stage_url(stage.pk))

    assert response.status_code == 200
    assert response.json()["name"] == "Write questions"
    assert response.json()["item_count"] == 1


def test_retrieve_missing_stage_is_404(token_client, stage):
    assert token_client.get(stage_url(stage.pk + 1000)).status_code == 404


def test_patch_stage(token_client, stage):
    response = token_client.patch(
        stage_url(stage.pk),
        {"reward": "0.80", "lifetime": 600, "config": {"questions_per_hit": 3}},
        format="json",
    )

    assert response.status_code == 200, response.json()
    assert response.json()["lifetime"] == 600
    stage.refresh_from_db()
    assert stage.reward == Decimal("0.80")
    assert stage.lifetime == timedelta(minutes=10)
    assert stage.config == {"questions_per_hit": 3}


def test_patch_cannot_change_task_type(token_client, stage):
    response = token_client.patch(stage_url(stage.pk), {"task_type": "other"}, format="json")

    assert response.status_code == 400
    assert "task_type" in response.json()


def test_patch_invalid_config(token_client, stage):
    response = token_client.patch(
        stage_url(stage.pk), {"config": {"questions_per_hit": 0}}, format="json"
    )

    assert response.status_code == 400
    assert "config" in response.json()["errors"]


# --- link ------------------------------------------------------------------------------


def link(client, stage_id: int, payload: dict):
    return client.post(stage_url(stage_id, "link/"), payload, format="json")


def test_link_and_unlink(token_client, stage, campaign):
    nxt = StageFactory.create(campaign=campaign, name="Link answers", position=1)

    response = link(
        token_client,
        stage.pk,
        {"next_stage": nxt.pk, "handoff": {"exclude_answer_types": ["boolean"]}},
    )

    assert response.status_code == 200, response.json()
    assert response.json()["next_stage"] == nxt.pk
    assert response.json()["handoff"] == {"exclude_answer_types": ["boolean"]}
    stage.refresh_from_db()
    assert stage.next_stage == nxt

    response = link(token_client, stage.pk, {"next_stage": None})

    assert response.status_code == 200
    assert response.json()["next_stage"] is None
    stage.refresh_from_db()
    assert stage.next_stage is None
    assert stage.handoff == {}


def test_link_needs_next_stage_key(token_client, stage):
    response = link(token_client, stage.pk, {})

    assert response.status_code == 400
    assert "next_stage" in response.json()


def test_link_to_stage_of_another_own_campaign_is_400(token_client, stage, requester):
    elsewhere = StageFactory.create(campaign__owner=requester)

    response = link(token_client, stage.pk, {"next_stage": elsewhere.pk})

    assert response.status_code == 400
    assert "next_stage" in response.json()
    stage.refresh_from_db()
    assert stage.next_stage is None


def test_link_cycle_is_400(token_client, stage, campaign):
    nxt = StageFactory.create(campaign=campaign, position=1, next_stage=stage)

    response = link(token_client, stage.pk, {"next_stage": nxt.pk})

    assert response.status_code == 400
    assert response.json()["errors"] == {"next_stage": ["cycle"]}


def test_rename_to_taken_name_is_400(token_client, stage, campaign):
    StageFactory.create(campaign=campaign, name="Other", position=5)

    response = token_client.patch(stage_url(stage.pk), {"name": "Other"}, format="json")

    assert response.status_code == 400


def test_live_stage_takes_new_texts_and_rules_but_not_reward(token_client, stage):
    Campaign.objects.filter(slug="alpha").update(state=CampaignState.LIVE)

    texts = token_client.patch(
        stage_url(stage.pk), {"instructions": "Shorter, please.", "name": "Write"}, format="json"
    )
    money = token_client.patch(
        stage_url(stage.pk), {"reward": "2.00", "instructions": "x"}, format="json"
    )

    assert texts.status_code == 200
    assert texts.json()["instructions"] == "Shorter, please."
    assert money.status_code == 409
    assert money.json()["errors"]["reward"] == ["frozen"]
    stage.refresh_from_db()
    assert (stage.reward, stage.instructions) == (Decimal("1.25"), "Shorter, please.")


def test_completed_stage_takes_nothing(token_client, stage):
    Campaign.objects.filter(slug="alpha").update(state=CampaignState.COMPLETED)

    response = token_client.patch(stage_url(stage.pk), {"instructions": "x"}, format="json")

    assert response.status_code == 409


def test_clone_copies_settings_not_items(token_client, stage):
    response = token_client.post(f"/api/v1/stages/{stage.pk}/clone/", {}, format="json")
    named = token_client.post(f"/api/v1/stages/{stage.pk}/clone/", {"name": "B"}, format="json")

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["name"] == f"{stage.name} (copy)"
    assert (body["reward"], body["item_count"], body["next_stage"]) == ("1.25", 0, None)
    assert named.json()["name"] == "B"


def test_clone_refused_once_live(token_client, stage):
    Campaign.objects.filter(slug="alpha").update(state=CampaignState.LIVE)

    response = token_client.post(f"/api/v1/stages/{stage.pk}/clone/", {}, format="json")

    assert response.status_code == 409


def _pilot(stage, seconds: list[int]) -> None:
    hit = HITFactory.create(stage=stage)
    now = timezone.now()
    for s in seconds:
        AssignmentFactory.create(
            hit=hit,
            status="submitted",
            accepted_at=now,
            submitted_at=now,
            answers={},
            work_seconds=s,
        )


def test_estimate_from_pilot_sets_the_median_minutes(token_client, campaign):
    stage = StageFactory.create(campaign=campaign, name="Write", reward=Decimal("0.50"))
    _pilot(stage, [100, 130, 170, 200, 3000])
    response = token_client.post(stage_url(stage.pk, "estimate-from-pilot/"))
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["estimate"]["estimated_minutes"] == 3  # median 170 s, rounded up
    assert body["estimate"]["assignments"] == 5
    assert body["estimate"]["minimum_hourly"] is None  # no minimum on this platform
    assert body["estimate"]["meets_minimum"] is True
    assert body["stage"]["config"]["estimated_minutes"] == 3
    stage.refresh_from_db()
    assert stage.config["estimated_from"] == {"median_seconds": 170.0, "assignments": 5}


def test_estimate_from_pilot_says_when_prolific_pay_falls_short(token_client, campaign):
    Campaign.objects.filter(pk=campaign.pk).update(provider="prolific", currency="GBP")
    stage = StageFactory.create(campaign=campaign, name="Write", reward=Decimal("0.50"))
    _pilot(stage, [590, 600, 600, 610, 620])  # 10 minutes: £0.50 is £3.00 an hour
    body = token_client.post(stage_url(stage.pk, "estimate-from-pilot/")).json()
    assert body["estimate"]["estimated_minutes"] == 10
    assert body["estimate"]["meets_minimum"] is False
    assert body["estimate"]["hourly_rate"] == "3.00"
    assert body["estimate"]["minimum_hourly"] == "6.00"
    assert body["estimate"]["problem"]


def test_estimate_from_pilot_refuses_too_few_assignments(token_client, campaign):
    stage = StageFactory.create(campaign=campaign, name="Write", config={"k": 1})
    _pilot(stage, [100, 130])
    response = token_client.post(stage_url(stage.pk, "estimate-from-pilot/"))
    assert response.status_code == 409
    assert "at least 5" in str(response.json())
    stage.refresh_from_db()
    assert stage.config == {"k": 1}  # nothing changed
