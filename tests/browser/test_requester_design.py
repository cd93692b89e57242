"""Issue 20, the requester's day in Debian's chromium (Playwright): edit and clone a
stage in every state, the stage configuration as a form from the task type's schema
with the raw JSON a click away, the live preview of the worker's page, the money
confirmation before a paid step, upload columns and templates, duplicate campaign
names. Each test checks what the requester sees on the page."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from campaigns.design.services import campaign_create, stage_add
from campaigns.models import Campaign, CampaignState, Item, ItemSource, Stage
from tests.browser.a11y import assert_person_can_use
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery"


def log_in(page, username: str = "alice") -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")


def writing_campaign(owner, *, provider: str = "local", items: int = 3, **fields) -> Stage:
    campaign = campaign_create(owner=owner, name="Design pilot", provider=provider, **fields)
    stage = stage_add(
        campaign=campaign,
        name="Write questions",
        task_type="question_writing",
        reward=Decimal("0.50"),
        assignments_per_hit=2,
        instructions="Be concise.",
    )
    for n in range(items):
        Item.objects.create(
            stage=stage,
            external_id=f"cell-{n}",
            data={"topic": ["rivers", "films", "books"][n % 3], "complexity_type": "count"},
            source=ItemSource.UPLOADED,
        )
    return stage


def edit_url(stage: Stage) -> str:
    return f"/campaigns/{stage.campaign.slug}/stages/{stage.pk}/edit/"


def test_stage_config_is_a_form_from_the_schema_with_json_and_a_live_preview(page):
    """Points 1, 2, 3: every setting on one form, the task type's settings as fields with
    help, defaults and errors next to them, the raw JSON one click away, and the
    worker's page with the stage's own items following the form before saving."""
    alice = UserFactory.create(username="alice")
    stage = writing_campaign(alice)
    log_in(page)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"/campaigns/{stage.campaign.slug}/")
    page.locator(f"#stage-{stage.pk}").get_by_role("link", name="Edit").click()
    page.wait_for_url(f"**{edit_url(stage)}")

    form = page.locator("#stage-form")
    for label in (
        "Name",
        "Instructions",
        "Reward",
        "Assignments per HIT",
        "Items per HIT",
        "Time per assignment (minutes)",
        "HITs available for (hours)",
        "Qualification requirements as JSON",
        "Review rules as JSON",
        "Bonus rules as JSON",
        "Escalation rule as JSON",
        "Accepted output feeds",
        "Hand-off options as JSON",
        "Add to qualification requirements",
        "Add to review rules",
        "Add to bonus rules",
        "Add to escalation",
        "Target",
    ):
        assert form.get_by_label(label, exact=True).is_editable(), label
    # The task type's own setting, from its schema: label, help text and default.
    per_hit = form.get_by_label("Questions per hit")
    field = form.locator(".field", has=page.get_by_label("Questions per hit"))
    assert "Question-answer pairs a worker writes in one HIT." in field.inner_text()
    assert "Default: 5." in field.inner_text()
    assert page.locator("#what-changes-title").is_visible()
    assert "Nothing is published yet" in page.locator(".what-changes").inner_text()
    assert_person_can_use(page, where="stage edit page", touch=False)

    # The preview shows the worker's page with the stage's first item, and follows edits.
    frame = page.frame_locator("#stage-preview")
    frame.get_by_text("rivers").first.wait_for()
    assert (
        frame.locator(
            'textarea[name="questions/4/question"], input[name="questions/4/question"]'
        ).count()
        == 1
    )
    per_hit.fill("2")
    form.get_by_label("Instructions").fill("Ask about length only.")
    frame.get_by_text("Ask about length only.").wait_for()
    frame.locator('[name="questions/1/question"]').wait_for()
    assert frame.locator('[name="questions/2/question"]').count() == 0
    assert frame.get_by_role("button", name="Submit").is_disabled()

    # Out of range: the form says so next to the field, nothing is saved.
    per_hit.fill("30")
    form.get_by_role("button", name="Save stage").click()
    error = page.locator(".field.has-error", has=page.get_by_label("Questions per hit"))
    assert "less than or equal to 20" in error.inner_text()
    assert_person_can_use(page, where="stage edit page, a refused value", touch=False)
    stage.refresh_from_db()
    assert stage.config == {}

    page.get_by_label("Questions per hit").fill("3")
    page.locator("#stage-form").get_by_label("Reward").fill("0.75")
    page.locator("#stage-form").get_by_role("button", name="Save stage").click()
    page.get_by_text("Stage “Write questions” saved.").wait_for()
    stage.refresh_from_db()
    assert stage.config == {"questions_per_hit": 3}
    assert stage.reward == Decimal("0.75")

    # The raw JSON, one click away, for what the form has no field for.
    page.goto(edit_url(stage))
    page.get_by_text("Edit the configuration as JSON").click()
    raw = page.get_by_label("Configuration as JSON")
    assert '"questions_per_hit": 3' in raw.input_value()
    example = {"question": "How many moons has Mars?", "answer": "2"}
    raw.fill(json.dumps({"questions_per_hit": 2, "examples": {"count": [example]}}))
    page.get_by_role("button", name="Save stage").click()
    page.get_by_text("Stage “Write questions” saved.").wait_for()
    stage.refresh_from_db()
    assert stage.config["questions_per_hit"] == 2
    assert stage.config["examples"]["count"][0]["answer"] == "2"

    # A configuration the task type refuses comes back next to the JSON.
    page.goto(edit_url(stage))
    page.get_by_text("Edit the configuration as JSON").click()
    page.get_by_label("Configuration as JSON").fill('{"questions_per_hit": "many"}')
    page.get_by_role("button", name="Save stage").click()
    error = page.locator(".raw-json .field.has-error")
    assert "'many' is not of type 'integer'" in error.inner_text()

    # Clone: a copy of the settings, no items, opened for editing.
    page.goto(edit_url(stage))
    page.get_by_role("button", name="Clone this stage").click()
    page.get_by_text("Stage “Write questions (copy)” added as a copy").wait_for()
    copy = Stage.objects.get(name="Write questions (copy)")
    assert (copy.config, copy.reward, copy.items.count()) == (stage.config, stage.reward, 0)
    assert page.get_by_label("Name", exact=True).input_value() == "Write questions (copy)"


def test_a_live_stage_says_what_may_still_change_and_keeps_the_rest(page):
    """Point 1 once HITs are out: reward and places are shown but fixed, with the reason
    and the effect on published HITs and cost; the texts and rules still change; the API
    answers the same."""
    alice = UserFactory.create(username="alice")
    stage = writing_campaign(alice)
    Campaign.objects.filter(pk=stage.campaign_id).update(state=CampaignState.LIVE)
    log_in(page)
    page.goto(edit_url(stage))

    notes = page.locator(".what-changes").inner_text()
    assert "HITs are out" in notes
    assert "cannot change" in notes
    assert "new bonus rules add to the cost" in notes
    reward = page.get_by_label("Reward")
    assert reward.is_disabled()
    assert (
        "Fixed in this state"
        in page.locator(".field", has=page.get_by_label("Reward")).inner_text()
    )
    assert page.get_by_label("Questions per hit").is_disabled()
    assert page.get_by_role("button", name="Clone this stage").count() == 0
    assert_person_can_use(page, where="stage edit page, live", touch=False)

    page.get_by_label("Instructions").fill("Now with an example of a good question.")
    page.get_by_role("button", name="Save stage").click()
    page.get_by_text("Stage “Write questions” saved.").wait_for()
    stage.refresh_from_db()
    assert stage.instructions == "Now with an example of a good question."
    assert stage.reward == Decimal("0.50")

    # (The API uses the same service: tests/campaigns/api/test_stages.py.)
    Campaign.objects.filter(pk=stage.campaign_id).update(state=CampaignState.COMPLETED)
    page.goto(edit_url(stage))
    assert "completed" in page.locator(".what-changes").inner_text()
    assert page.get_by_role("button", name="Save stage").count() == 0


def test_going_live_on_a_paid_platform_states_the_money_first(page):
    """Point 4: "Go live" on MTurk opens a confirmation with places, rewards, fees and the
    total from the cost estimate; nothing changes until it is confirmed."""
    alice = UserFactory.create(username="alice")
    stage = writing_campaign(alice, provider="mturk", budget_cap=Decimal("100.00"))
    log_in(page)
    page.goto(f"/campaigns/{stage.campaign.slug}/")
    page.get_by_role("button", name="Go live…").click()
    page.wait_for_url("**/transition/confirm/?to_state=live")

    # 3 items x 2 assignments = 6 places at 0.50: rewards 3.00, MTurk's 20 % fee 0.60.
    summary = page.locator(".confirm-summary").inner_text()
    assert "6 places (assignments)" in summary
    assert "rewards 3.00 USD" in summary
    assert "platform fees 0.60 USD" in summary
    assert "total 3.60 USD" in summary
    assert "sandbox: no real money" in page.locator("#confirm-title").inner_text()
    assert page.get_by_role("button", name="Go live: commit 3.60 USD").is_visible()
    assert_person_can_use(page, where="go-live confirmation", touch=False)

    page.get_by_role("link", name="Cancel").click()
    page.wait_for_url(f"**/campaigns/{stage.campaign.slug}/")
    assert Campaign.objects.get(pk=stage.campaign_id).state == CampaignState.DRAFT


def test_upload_shows_the_columns_and_its_template_uploads_as_is(page, tmp_path):
    """Point 5: beside the upload field, the columns the task type needs and CSV and
    JSONL templates; the downloaded template is accepted by the upload."""
    alice = UserFactory.create(username="alice")
    stage = writing_campaign(alice, items=0)
    log_in(page)
    page.goto(f"/campaigns/{stage.campaign.slug}/")
    columns = page.locator(f"#stage-{stage.pk} .upload-columns")
    text = columns.inner_text()
    assert "topic required" in text
    assert "complexity_type required" in text
    assert "one of count, comparative" in text
    assert "topic_hint optional" in text

    with page.expect_download() as download:
        columns.get_by_role("link", name="CSV").click()
    csv_path = Path(download.value.path())
    header = csv_path.read_text(encoding="utf-8").splitlines()[0]
    assert header == "external_id,topic,complexity_type"
    with page.expect_download() as download:
        columns.get_by_role("link", name="JSONL").click()
    assert '"complexity_type": "count"' in Path(download.value.path()).read_text("utf-8")

    upload = tmp_path / "template.csv"
    upload.write_bytes(csv_path.read_bytes())
    page.locator("form.upload input[type=file]").set_input_files(str(upload))
    page.locator("form.upload").get_by_role("button", name="Upload", exact=True).click()
    page.get_by_text("Stored 1 item from template.csv").wait_for()
    assert_person_can_use(page, where="campaign page after an upload", touch=False)


def test_a_second_campaign_with_the_same_name_is_refused_on_the_form(page):
    """Point 6: the form refuses the name with a free one suggested (the API agrees:
    tests/campaigns/api/test_campaigns.py)."""
    alice = UserFactory.create(username="alice")
    campaign_create(owner=alice, name="Mintaka pilot")
    log_in(page)
    page.get_by_label("Name").fill("Mintaka pilot")
    page.get_by_role("button", name="Create campaign").click()
    error = page.locator(".field.has-error", has=page.get_by_label("Name"))
    assert "You have a campaign named 'Mintaka pilot' already" in error.inner_text()
    assert "e.g. 'Mintaka pilot (2)'" in error.inner_text()
    assert_person_can_use(page, where="new campaign form, a refused name", touch=False)
    assert Campaign.objects.filter(name="Mintaka pilot").count() == 1
