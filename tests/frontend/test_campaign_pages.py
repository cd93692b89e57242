"""The campaign list and detail pages: creating campaigns, stages, transitions, uploads."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from campaigns.assist.endpoints import model_endpoint_create
from campaigns.design.services import campaign_transition
from campaigns.models import Campaign, CampaignState, Item, Stage
from campaigns.recipes import RECIPES
from campaigns.recipes.services import recipe_cost
from frontend.templatetags.frontend_tags import money
from tests.factories import ItemFactory

pytestmark = pytest.mark.django_db


def _detail(campaign: Campaign) -> str:
    return reverse("frontend:campaign-detail", kwargs={"slug": campaign.slug})


def _messages(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def _upload(client, stage, name: str, content: bytes):
    url = reverse(
        "frontend:stage-upload", kwargs={"slug": stage.campaign.slug, "stage_id": stage.pk}
    )
    return client.post(url, {"file": SimpleUploadedFile(name, content)})


# --- list and create ----------------------------------------------------------------


def test_list_shows_columns(alice_client, campaign, stage):
    content = alice_client.get(reverse("frontend:campaign-list")).content.decode()
    assert "Alice&#x27;s Mintaka" in content
    assert "Local workforce" in content
    assert "Draft" in content
    listed = alice_client.get(reverse("frontend:campaign-list")).context["campaigns"]
    assert [c.stage_count for c in listed] == [1]


def test_create_campaign(alice_client, requester):
    response = alice_client.post(
        reverse("frontend:campaign-create"),
        {"name": "WhyQA pilot", "provider": "prolific", "sandbox": "on", "budget_cap": "250.00"},
    )
    campaign = Campaign.objects.get(name="WhyQA pilot")
    assert response.status_code == 302
    assert response["Location"] == _detail(campaign)
    assert campaign.owner == requester
    assert campaign.provider == "prolific"
    assert campaign.currency == "GBP"
    # Prolific has no sandbox (its test participants are asked for when the pilot
    # starts): none is stored, so the campaign never reads as "sandbox".
    assert campaign.sandbox is False
    assert campaign.budget_cap == Decimal("250.00")
    assert campaign.state == CampaignState.DRAFT


def test_create_campaign_invalid_shows_errors_and_creates_nothing(alice_client):
    response = alice_client.post(
        reverse("frontend:campaign-create"),
        {"name": "Bad", "provider": "crowdflower", "budget_cap": "-1"},
    )
    assert response.status_code == 400
    form = response.context["form"]
    assert set(form.errors) == {"provider", "budget_cap"}
    assert not Campaign.objects.filter(name="Bad").exists()


def test_create_is_post_only(alice_client):
    assert alice_client.get(reverse("frontend:campaign-create")).status_code == 405


# --- detail -----------------------------------------------------------------------------


def test_detail_shows_pipeline_in_order_with_counts(alice_client, campaign, stage):
    from campaigns.design.services import stage_add, stage_link

    second = stage_add(campaign=campaign, name="Link answers", task_type="question_writing")
    stage_link(stage=stage, next_stage=second)
    ItemFactory(stage=stage)
    ItemFactory(stage=stage)

    response = alice_client.get(_detail(campaign))
    assert response.status_code == 200
    stages = response.context["stages"]
    assert [s.name for s in stages] == ["Write questions", "Link answers"]
    assert [s.item_count for s in stages] == [2, 0]
    content = response.content.decode()
    assert content.index("Write questions") < content.index("Link answers")
    assert f'href="#stage-{second.pk}"' in content


def test_detail_renders_cost_estimate_with_currency(alice_client, campaign, stage):
    from campaigns.design.services import stage_update

    stage_update(stage=stage, reward=Decimal("1.25"), assignments_per_hit=2)
    for _ in range(3):
        ItemFactory(stage=stage)
    response = alice_client.get(_detail(campaign))
    estimate = response.context["estimate"]
    assert estimate is not None, "campaigns.payments.costs is in the tree: it must be rendered"
    # 3 items x 2 assignments x 1.25, local workforce: no fees.
    assert estimate.total == Decimal("7.50")
    # ... and the local workforce is paid no rewards through qaportal: the page shows
    # no money that does not move (issue 20, point 11).
    assert "7.50 USD" not in response.content.decode()
    assert "nothing to estimate" in response.content.decode()

    Campaign.objects.filter(pk=campaign.pk).update(provider="mturk")
    content = alice_client.get(_detail(campaign)).content.decode()
    # On MTurk: 6 assignments x (1.25 + 20 % fee) = 9.00.
    assert "9.00 USD" in content


def test_detail_shows_only_legal_transition_buttons(alice_client, campaign):
    content = alice_client.get(_detail(campaign)).content.decode()
    assert "Start pilot" in content
    assert "Go live" in content
    assert "Pause" not in content
    assert "Complete" not in content


# --- transitions ----------------------------------------------------------------------


def test_transition_moves_state(alice_client, campaign, stage):
    ItemFactory(stage=stage)
    url = reverse("frontend:campaign-transition", kwargs={"slug": campaign.slug})
    response = alice_client.post(url, {"to_state": "pilot"})
    assert response.status_code == 302
    assert response["Location"] == _detail(campaign)
    campaign.refresh_from_db()
    assert campaign.state == CampaignState.PILOT
    assert _messages(response) == ["The campaign is now pilot."]


def test_paused_campaign_offers_resume(alice_client, campaign, stage):
    ItemFactory(stage=stage)
    campaign_transition(campaign=campaign, to_state="live")
    campaign_transition(campaign=campaign, to_state="paused")
    content = alice_client.get(_detail(campaign)).content.decode()
    assert "Resume" in content
    assert "Complete (final)" in content


def test_sandbox_is_not_ticked_or_stored_for_the_local_workforce(alice_client):
    """Issue 36, point 10."""
    page = alice_client.get(reverse("frontend:campaign-list")).content.decode()
    box = (
        page.split('name="sandbox"')[0].rsplit("<input", 1)[1]
        + page.split('name="sandbox"')[1].split(">")[0]
    )
    assert "checked" not in box
    assert 'data-sandbox-providers="mturk"' in page
    alice_client.post(
        reverse("frontend:campaign-create"), {"name": "Team", "provider": "local", "sandbox": "on"}
    )
    mturk = alice_client.post(
        reverse("frontend:campaign-create"), {"name": "Turk", "provider": "mturk", "sandbox": "on"}
    )
    assert mturk.status_code == 302
    assert Campaign.objects.get(name="Team").sandbox is False
    assert Campaign.objects.get(name="Turk").sandbox is True


def test_completing_asks_first_naming_what_ends(alice_client, campaign, stage):
    ItemFactory(stage=stage)
    ItemFactory(stage=stage)
    campaign_transition(campaign=campaign, to_state="live")
    url = reverse("frontend:campaign-transition", kwargs={"slug": campaign.slug})

    asked = alice_client.post(url, {"to_state": "completed"})

    page = asked.content.decode()
    assert asked.status_code == 200
    assert "Completing is final" in page
    assert "2 of 2 items stay unfinished" in page
    assert "read that it takes no more work" in page
    assert 'name="to_state" value="completed"' in page
    campaign.refresh_from_db()
    assert campaign.state == CampaignState.LIVE

    done = alice_client.post(url, {"to_state": "completed", "confirmed": "yes"})

    assert done.status_code == 302
    campaign.refresh_from_db()
    assert campaign.state == CampaignState.COMPLETED


@pytest.mark.parametrize(
    ("to_state", "message"),
    [
        ("completed", "cannot move to 'completed'"),
        ("pilot", "needs at least one stage"),
        ("nonsense", "Unknown state"),
    ],
)
def test_illegal_transition_shows_message(alice_client, campaign, to_state, message):
    url = reverse("frontend:campaign-transition", kwargs={"slug": campaign.slug})
    response = alice_client.post(url, {"to_state": to_state}, follow=True)
    assert response.status_code == 200
    shown = [str(m) for m in response.context["messages"]]
    assert len(shown) == 1
    assert message in shown[0]
    assert message.replace("'", "&#x27;") in response.content.decode()
    campaign.refresh_from_db()
    assert campaign.state == CampaignState.DRAFT


# --- stages -----------------------------------------------------------------------------

STAGE_POST = {
    "name": "Rephrase",
    "task_type": "question_writing",
    "reward": "0.40",
    "assignments_per_hit": "3",
    "items_per_hit": "5",
    "instructions": "Rephrase each question.",
    "config": '{"questions_per_hit": 5}',
}


def test_add_stage(alice_client, campaign, stage):
    response = alice_client.post(
        reverse("frontend:stage-add", kwargs={"slug": campaign.slug}), STAGE_POST
    )
    added = campaign.stages.get(name="Rephrase")
    assert response.status_code == 302
    assert response["Location"] == f"{_detail(campaign)}#stage-{added.pk}"
    assert added.position == stage.position + 1
    assert added.reward == Decimal("0.40")
    assert (added.assignments_per_hit, added.items_per_hit) == (3, 5)
    assert added.config == {"questions_per_hit": 5}
    assert added.instructions == "Rephrase each question."


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"config": '{"questions_per_hit": 99}'}, "config"),
        ({"config": '{"questions_per_hit": 5, "note": "a\\u0000b"}'}, "config"),
        ({"config": '{"questions_per_hit": 5, "note": "a\\ud800b"}'}, "config"),
        ({"config": "[" * 20_000 + "]" * 20_000}, "config"),
        ({"name": "Write questions"}, "name"),
        ({"task_type": "telepathy"}, "task_type"),
        ({"reward": "-1"}, "reward"),
    ],
)
def test_add_stage_refused_shows_errors(alice_client, campaign, stage, change, field):
    response = alice_client.post(
        reverse("frontend:stage-add", kwargs={"slug": campaign.slug}), {**STAGE_POST, **change}
    )
    assert response.status_code == 400
    assert field in response.context["stage_form"].errors
    assert campaign.stages.count() == 1


def test_add_stage_says_the_adversarial_option_needs_a_model_endpoint(
    alice_client, campaign, stage, requester
):
    baseline = model_endpoint_create(
        owner=requester, values={"name": "bm25", "kind": "baseline_bm25"}
    )
    config = {"questions_per_hit": 1, "adversarial": {"endpoint": baseline.pk}}
    response = alice_client.post(
        reverse("frontend:stage-add", kwargs={"slug": campaign.slug}),
        {**STAGE_POST, "config": json.dumps(config)},
    )
    assert response.status_code == 400
    errors = " ".join(response.context["stage_form"].errors["config"])
    assert "register an OpenAI-compatible model endpoint" in errors
    assert "OpenAI-compatible model endpoint" in response.content.decode()
    assert campaign.stages.count() == 1


def test_add_stage_to_live_campaign_is_refused(alice_client, campaign, stage):
    ItemFactory(stage=stage)
    campaign_transition(campaign=campaign, to_state="live")
    response = alice_client.post(
        reverse("frontend:stage-add", kwargs={"slug": campaign.slug}), STAGE_POST
    )
    assert response.status_code == 400
    assert "only draft and pilot campaigns are editable" in str(
        response.context["stage_form"].non_field_errors()
    )
    assert campaign.stages.count() == 1


# --- uploads ----------------------------------------------------------------------------


def test_upload_stores_items(alice_client, stage):
    content = (
        b"external_id,topic,complexity_type\nmovies-count,movies,count\nmusic-yesno,music,yesno\n"
    )
    response = _upload(alice_client, stage, "cells.csv", content)
    assert response.status_code == 302
    assert response["Location"].endswith(f"#stage-{stage.pk}")
    assert dict(stage.items.values_list("external_id", "data__topic")) == {
        "movies-count": "movies",
        "music-yesno": "music",
    }
    assert _messages(response) == ["Stored 2 items from cells.csv in stage “Write questions”."]


def test_upload_with_bad_rows_shows_them_and_stores_nothing(alice_client, stage):
    content = (
        b"external_id,topic,complexity_type\nok,movies,count\nbad,movies,telepathic\nempty,,yesno\n"
    )
    response = _upload(alice_client, stage, "cells.csv", content)
    assert response.status_code == 400
    assert not Item.objects.filter(stage=stage).exists()
    rejection = response.context["rejection"]
    assert {e["row"] for e in rejection["rows"]} == {3, 4}
    html = response.content.decode()
    assert "row-errors" in html
    # Said once, at the anchor the upload form posts to (issue 36, point 3).
    assert html.lower().count("was stored") == 1
    assert 'id="upload-outcome"' in html
    assert "items/#upload-outcome" in html
    assert '<td class="num">3</td><td>complexity_type</td>' in html


def test_upload_lists_at_most_50_row_errors(alice_client, stage):
    rows = b"".join(b"r%d,movies,nope\n" % i for i in range(80))
    response = _upload(
        alice_client, stage, "cells.csv", b"external_id,topic,complexity_type\n" + rows
    )
    assert response.status_code == 400
    rejection = response.context["rejection"]
    assert len(rejection["rows"]) == 50
    assert rejection["more"] == 30
    assert response.content.decode().count('<tr><td class="num">') == 50
    assert not stage.items.exists()


def test_upload_without_file_is_refused(alice_client, stage):
    url = reverse(
        "frontend:stage-upload", kwargs={"slug": stage.campaign.slug, "stage_id": stage.pk}
    )
    response = alice_client.post(url, {})
    assert response.status_code == 400
    assert "file" in response.context["upload_form"].errors


def test_upload_too_large_is_refused_before_reading(alice_client, stage, settings):
    settings.ITEM_UPLOAD_MAX_BYTES = 10
    response = _upload(alice_client, stage, "cells.csv", b"external_id,topic\n" * 3)
    assert response.status_code == 400
    assert "larger than 10 bytes" in str(response.context["upload_form"].errors)
    assert not stage.items.exists()


def test_upload_to_completed_campaign_shows_message(alice_client, campaign, stage):
    ItemFactory(stage=stage)
    campaign_transition(campaign=campaign, to_state="live")
    campaign_transition(campaign=campaign, to_state="completed")
    response = _upload(alice_client, stage, "cells.csv", b"topic,complexity_type\nx,count\n")
    assert response.status_code == 302
    assert "cannot be added" in _messages(response)[0]
    assert stage.items.count() == 1


def test_a_second_campaign_of_one_recipe_takes_its_own_name(alice_client, requester):
    """Issue 35, point 13: on the page, as with ``load_recipe --name``."""
    url = reverse("frontend:campaign-create")
    first = {"name": "Nangia", "provider": "local", "recipe": "nangia", "sample": "on"}
    assert alice_client.post(url, first).status_code == 302
    again = alice_client.post(url, first)
    assert again.status_code == 400
    assert "name" in again.context["form"].errors
    second = alice_client.post(url, {**first, "name": "Nangia, second run"})
    assert second.status_code == 302
    assert Campaign.objects.filter(owner=requester, recipe="nangia").count() == 2


def test_prolific_confirmation_names_the_stages_below_the_minimum_and_offers_no_step(
    alice_client, requester
):
    """Prolific has no sandbox: the pages say real money and test participants, and the
    go-live confirmation refuses (names, offers no button for) stages under the minimum."""
    campaign = Campaign.objects.create(
        owner=requester, name="On Prolific", slug="on-prolific", provider="prolific"
    )
    campaign.currency = "GBP"
    campaign.save(update_fields=["currency"])
    write = Stage.objects.create(
        campaign=campaign,
        name="Write",
        task_type="question_writing",
        config={"questions_per_hit": 1, "estimated_minutes": 5},
        reward=Decimal("1.00"),
        position=0,
    )
    Item.objects.create(
        stage=write, external_id="c1", data={"topic": "t", "complexity_type": "count"}
    )
    Stage.objects.create(
        campaign=campaign,
        name="Grading 1",
        task_type="question_writing",
        config={"questions_per_hit": 1, "estimated_minutes": 5},
        reward=Decimal("0.00"),
        position=1,
    )
    Stage.objects.create(
        campaign=campaign,
        name="Cheap",
        task_type="question_writing",
        config={"questions_per_hit": 1, "estimated_minutes": 15},
        reward=Decimal("0.20"),
        position=2,
    )
    detail = alice_client.get(_detail(campaign)).content.decode()
    assert "sandbox" not in detail.split("<dt>Provider</dt>")[1].split("</dd>")[0]
    assert "real money; test participants for pilots" in detail
    url = reverse("frontend:campaign-transition-confirm", kwargs={"slug": campaign.slug})
    page = alice_client.get(f"{url}?to_state=pilot")
    html = page.content.decode()
    assert "(real money)" in html
    assert "(sandbox" not in html
    assert "has no sandbox" in html
    assert "test participants" in html
    refused = page.context["refused"]
    assert list(refused) == ["Grading 1", "Cheap"]
    assert "pays every task" in refused["Grading 1"]
    assert "raise the reward to 1.50 GBP" in refused["Cheap"]
    assert 'name="confirmed"' not in html  # no step offered
    # Posted anyway: refused, every such stage named, nothing moves.
    answer = alice_client.post(
        reverse("frontend:campaign-transition", kwargs={"slug": campaign.slug}),
        {"to_state": "pilot", "confirmed": "yes"},
        follow=True,
    )
    text = " ".join(str(m) for m in answer.context["messages"])
    assert "2 stage(s) do not meet the platform" in text
    assert "Grading 1" in text
    assert "Cheap" in text
    assert Campaign.objects.get(pk=campaign.pk).state == CampaignState.DRAFT


def test_stage_card_shows_waiting_items_with_a_publish(alice_client, campaign, stage):
    """Issue 36, point 2: a stage kept manual shows what waits and publishes it."""
    ItemFactory(stage=stage)
    campaign_transition(campaign=campaign, to_state="live")
    stage.publish_added = False
    stage.save(update_fields=["publish_added"])
    _upload(alice_client, stage, "late.csv", b"external_id,topic,complexity_type\nl1,lakes,count\n")

    page = alice_client.get(_detail(campaign)).content.decode()
    assert "2 items waiting" in page
    assert "Publish 2 waiting items" in page

    url = reverse("frontend:stage-publish", kwargs={"slug": campaign.slug, "stage_id": stage.pk})
    response = alice_client.post(url)

    assert response.status_code == 302
    assert _messages(response) == ["Stage “Write questions”: published 2 HITs."]
    assert not stage.items.filter(status="pending").exists()
    assert (
        "waiting"
        not in alice_client.get(_detail(campaign))
        .content.decode()
        .split("Stage details")[1]
        .split("Quality")[0]
    )


def test_new_campaign_table_prices_the_pilot_on_prolific_as_it_loads(alice_client):
    """Issue 34: the side table's Prolific figure is ``recipe_cost`` on Prolific (the
    rewards raised to the hourly minimum, in pounds), not the paper's dollars."""
    html = alice_client.get(reverse("frontend:campaign-list")).content.decode()
    for name in RECIPES:
        quoted = recipe_cost(name=name, provider="prolific")
        assert quoted.currency == "GBP"
        row = html[html.index(f'data-recipe="{name}"') :]
        row = row[: row.index("</tr>")]
        assert f"Prolific: {money(quoted.total, 'GBP')}" in row, name


def test_new_campaign_page_works_when_prolifics_currency_has_no_rate(alice_client, settings):
    settings.PROLIFIC_CURRENCY = "CHF"  # no dollar rate configured for it
    response = alice_client.get(reverse("frontend:campaign-list"))
    assert response.status_code == 200
    assert "Prolific: " not in response.content.decode()
