"""The stage pages without a browser: edit (by state), clone, preview, upload templates,
the money confirmation, and the pieces they are built from (config fields, item
templates, the pipeline flow, charts)."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from campaigns.design.items import items_upload
from campaigns.insights.charts import campaign_work_time_histogram
from campaigns.insights.pipeline import campaign_pipeline_flow
from campaigns.models import Campaign, CampaignState, Item, ItemSource
from campaigns.recipes import RECIPES
from campaigns.recipes.services import campaign_create_with_recipe
from campaigns.tasktypes import task_type_get, task_type_names
from campaigns.tasktypes.config_fields import config_fields
from campaigns.tasktypes.item_template import item_template_csv, item_template_jsonl
from tests.factories import AssignmentFactory, HITFactory

pytestmark = pytest.mark.django_db


def _url(name: str, stage, **extra) -> str:
    return reverse(
        f"frontend:{name}", kwargs={"slug": stage.campaign.slug, "stage_id": stage.pk, **extra}
    )


def _item(stage, n: int = 0) -> Item:
    return Item.objects.create(
        stage=stage,
        external_id=f"cell-{n}",
        data={"topic": "rivers", "complexity_type": "count"},
        source=ItemSource.UPLOADED,
    )


def _form(stage, **changes) -> dict[str, str]:
    """The edit form as the page posts it, with ``changes``."""
    data = {
        "name": stage.name,
        "instructions": stage.instructions,
        "reward": str(stage.reward),
        "assignments_per_hit": str(stage.assignments_per_hit),
        "items_per_hit": str(stage.items_per_hit),
        "assignment_minutes": "60",
        "lifetime_hours": "168",
        "gold_ratio": "0",
        "qualification_requirements": "[]",
        "review_rules": "[]",
        "bonus_rules": "[]",
        "escalation_rule": "{}",
        "handoff": "{}",
        "next_stage": "",
        "config_json": json.dumps(stage.config, indent=2, sort_keys=True),
        "config_json_original": json.dumps(stage.config, indent=2, sort_keys=True),
        "cfg__questions_per_hit": str(stage.config.get("questions_per_hit", "")),
    }
    data.update(changes)
    return data


def test_every_task_type_schema_gives_fields_with_help(db):
    for name in task_type_names():
        task_type = task_type_get(name)
        for field in config_fields(task_type):
            assert field.help, f"{name}.{field.name} has no description in its schema"


def test_item_templates_pass_the_upload_for_every_task_type(requester):
    """Whatever the task type, its CSV and JSONL templates are accepted as they are."""
    campaign = Campaign.objects.create(owner=requester, name="T", slug="t")
    for position, name in enumerate(task_type_names()):
        stage = campaign.stages.create(name=name, task_type=name, position=position)
        task_type = task_type_get(name)
        csv_text = item_template_csv(task_type)
        header = next(csv.reader(io.StringIO(csv_text)))
        assert header[0] == "external_id"
        result = items_upload(stage=stage, content=csv_text.encode(), filename="t.csv")
        assert result.created == 1, name
        jsonl = item_template_jsonl(task_type).replace("example-1", "example-2")
        assert items_upload(stage=stage, content=jsonl.encode(), filename="t.jsonl").created == 1


def test_edit_saves_through_the_service_and_shows_errors_next_to_fields(alice_client, stage):
    response = alice_client.post(
        _url("stage-edit", stage), _form(stage, cfg__questions_per_hit="3")
    )
    assert response.status_code == 302
    stage.refresh_from_db()
    assert stage.config == {"questions_per_hit": 3}

    response = alice_client.post(
        _url("stage-edit", stage), _form(stage, cfg__questions_per_hit="0")
    )
    assert response.status_code == 400
    assert "greater than or equal to 1" in str(
        response.context["form"]["cfg__questions_per_hit"].errors
    )


def test_raw_json_wins_when_changed(alice_client, stage):
    response = alice_client.post(
        _url("stage-edit", stage), _form(stage, config_json='{"questions_per_hit": 2}')
    )
    assert response.status_code == 302
    stage.refresh_from_db()
    assert stage.config == {"questions_per_hit": 2}


def test_live_campaign_freezes_reward_and_config_on_the_form(alice_client, stage):
    Campaign.objects.filter(pk=stage.campaign_id).update(state=CampaignState.LIVE)
    response = alice_client.post(
        _url("stage-edit", stage),
        _form(stage, reward="9.00", cfg__questions_per_hit="1", instructions="New words"),
    )
    assert response.status_code == 302
    stage.refresh_from_db()
    # Disabled inputs are ignored: only the instructions moved.
    assert (stage.reward, stage.config, stage.instructions) == (
        Decimal("0.00"),
        {"questions_per_hit": 5},
        "New words",
    )


def test_clone_only_while_editable(alice_client, stage):
    response = alice_client.post(_url("stage-clone", stage))
    assert response.status_code == 302
    assert stage.campaign.stages.filter(name="Write questions (copy)").exists()
    Campaign.objects.filter(pk=stage.campaign_id).update(state=CampaignState.LIVE)
    alice_client.post(_url("stage-clone", stage))
    assert stage.campaign.stages.count() == 2


def test_preview_renders_the_worker_page_with_the_stage_items(alice_client, stage):
    _item(stage)
    response = alice_client.get(_url("stage-preview", stage))
    html = response.content.decode()
    assert response.status_code == 200
    assert response.headers["X-Frame-Options"] == "SAMEORIGIN"
    assert "rivers" in html
    assert 'name="questions/4/question"' in html
    # The unsaved form previews its own settings.
    response = alice_client.post(
        _url("stage-preview", stage), _form(stage, cfg__questions_per_hit="2")
    )
    html = response.content.decode()
    assert 'name="questions/1/question"' in html
    assert 'name="questions/2/question"' not in html


def test_preview_without_items_says_so(alice_client, stage):
    html = alice_client.get(_url("stage-preview", stage)).content.decode()
    assert "has no items yet" in html


def test_template_download_and_unknown_format(alice_client, stage):
    response = alice_client.get(_url("stage-item-template", stage, fmt="csv"))
    assert response.status_code == 200
    assert response["Content-Disposition"].endswith('items-template.csv"')
    assert response.content.decode().startswith("external_id,topic,complexity_type")
    assert alice_client.get(_url("stage-item-template", stage, fmt="xlsx")).status_code == 404


def test_paid_transition_without_confirmation_goes_to_the_confirmation(alice_client, stage):
    Campaign.objects.filter(pk=stage.campaign_id).update(provider="mturk")
    _item(stage)
    url = reverse("frontend:campaign-transition", kwargs={"slug": stage.campaign.slug})
    response = alice_client.post(url, {"to_state": "live"})
    assert response.status_code == 302
    assert "/transition/confirm/?to_state=live" in response["Location"]
    assert Campaign.objects.get(pk=stage.campaign_id).state == CampaignState.DRAFT


def test_nangia_flow_puts_the_four_arms_side_by_side(requester):
    campaign = campaign_create_with_recipe(
        owner=requester, name="Nangia", recipe="nangia", sample=False
    )
    flow = campaign_pipeline_flow(campaign=campaign)
    blocks = [seg for seg in flow if seg.arms]
    assert len(blocks) == 1
    assert sorted(blocks[0].arms) == ["BASELINE", "CROWD", "EXPERT", "JUSTIFICATION"]
    nodes = sum((len(v) for v in blocks[0].arms.values()), 0)
    shared = [seg.stage.name for seg in flow if seg.stage]
    assert nodes + len(shared) == len(RECIPES["nangia"].stages) == campaign.stages.count()
    assert all(n.percent is None for v in blocks[0].arms.values() for n in v)


def test_work_time_histogram_is_empty_without_work(requester, stage):
    histogram = campaign_work_time_histogram(campaign=stage.campaign)
    assert [n for _, n in histogram] == [0] * len(histogram)
    assert histogram[0][0] == "0 to 30 s"
    assert histogram[-1][0] == "≥ 1 h"


def test_chart_images_are_svg(alice_client, stage):
    for name in ("chart-activity", "chart-work-time"):
        url = reverse(f"frontend:{name}", kwargs={"slug": stage.campaign.slug})
        response = alice_client.get(url)
        assert response["Content-Type"] == "image/svg+xml"
        assert b"<svg" in response.content
    # The local workforce moves no money: no spend chart.
    url = reverse("frontend:chart-spend", kwargs={"slug": stage.campaign.slug})
    assert alice_client.get(url).status_code == 404


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("qualification_requirements", '{"system": "approval_rate"}'),
        ("review_rules", "[1, 2]"),
        ("escalation_rule", "[]"),
        ("handoff", '"x"'),
        ("bonus_rules", "{"),
    ],
)
def test_rules_of_the_wrong_shape_are_refused_beside_the_field(alice_client, stage, field, value):
    response = alice_client.post(_url("stage-edit", stage), _form(stage, **{field: value}))
    assert response.status_code == 400
    assert response.context["form"][field].errors
    stage.refresh_from_db()
    assert stage.qualification_requirements == []
    assert stage.review_rules == []


def test_local_workers_see_a_reward_only_when_the_requester_chooses(alice_client, stage):
    from datetime import timedelta

    from django.test import Client

    from campaigns.work.invites import invite_create, invite_token

    Campaign.objects.filter(pk=stage.campaign_id).update(state=CampaignState.LIVE)
    stage.reward = Decimal("0.25")
    stage.save(update_fields=["reward"])
    invite = invite_create(
        campaign=stage.campaign, created_by=stage.campaign.owner, expires_in=timedelta(days=1)
    )
    worker = Client()
    worker.post(reverse("worker:invite", kwargs={"token": invite_token(invite=invite)}))
    page = reverse("worker:stage", kwargs={"stage_id": stage.pk})
    assert "Reward per task" not in worker.get(page).content.decode()

    form = _form(stage, reward="0.25", show_reward_to_local_workers="on")
    assert alice_client.post(_url("stage-edit", stage), form).status_code == 302
    stage.refresh_from_db()
    assert stage.show_reward_to_local_workers is True
    assert "Reward per task: 0.25 USD." in worker.get(page).content.decode()


def _measured(stage, seconds: list[int]) -> None:
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


def test_the_stage_page_estimates_the_time_from_the_pilot(alice_client, stage):
    detail = reverse("frontend:campaign-detail", kwargs={"slug": stage.campaign.slug})
    page = alice_client.get(detail).content.decode()
    assert _url("stage-estimate-from-pilot", stage) in page
    _measured(stage, [60, 100])
    response = alice_client.post(_url("stage-estimate-from-pilot", stage), follow=True)
    assert "at least 5" in response.content.decode()
    stage.refresh_from_db()
    assert "estimated_from" not in (stage.config or {})
    _measured(stage, [130, 140, 900])
    response = alice_client.post(_url("stage-estimate-from-pilot", stage), follow=True)
    assert "now estimates 3 min per assignment" in response.content.decode()
    stage.refresh_from_db()
    assert stage.config["estimated_minutes"] == 3


def test_the_estimate_says_when_prolific_pay_falls_below_the_minimum(alice_client, stage):
    Campaign.objects.filter(pk=stage.campaign_id).update(provider="prolific", currency="GBP")
    stage.reward = Decimal("0.50")
    stage.save(update_fields=["reward"])
    _measured(stage, [600, 600, 600, 600, 600])
    html = alice_client.post(_url("stage-estimate-from-pilot", stage), follow=True)
    text = html.content.decode()
    assert "no longer meets the hourly minimum" in text
    stage.reward = Decimal("1.00")
    stage.save(update_fields=["reward"])
    text = alice_client.post(_url("stage-estimate-from-pilot", stage), follow=True)
    assert "it meets the minimum of 6.00 GBP" in text.content.decode()
