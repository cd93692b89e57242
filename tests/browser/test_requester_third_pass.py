"""Issue 36, the requester's day in Debian's chromium (Playwright), at 1280 and 390 px
with axe-core on every state visited: nothing irreversible happens unasked (completing a
campaign, rejecting many, revoking an invite link: a page names the consequence, with
or without JavaScript), items added to a running stage are published (a manual stage
shows them waiting, with a Publish), and a rejected upload answers where the requester
is: at its per-row table, once."""

from __future__ import annotations

from typing import Any

import pytest

from campaigns.models import HIT, Assignment, AssignmentStatus, Campaign, CampaignState, Item
from campaigns.recipes.services import campaign_create_with_recipe
from tests.browser.a11y import assert_person_can_use
from tests.browser.pages import WIDTHS, live_stage, screenshot
from tests.browser.test_requester_design import log_in
from tests.factories import UserFactory
from tests.helpers import submitted_assignment

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CELLS = [
    {"external_id": f"cell-{n}", "data": {"topic": t, "complexity_type": "comparative"}}
    for n, t in enumerate(("rivers", "films"))
]


def _campaign(page, width: int):
    alice = UserFactory.create(username="alice")
    stage, invite = live_stage(
        task_type="question_writing", config={"questions_per_hit": 1}, items=CELLS, owner=alice
    )
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page)
    return stage, invite


def _in_view(page, selector: str) -> bool:
    return page.evaluate(
        "(s) => { const r = document.querySelector(s).getBoundingClientRect();"
        " return r.top > -2 && r.top < window.innerHeight; }",  # sub-pixel scrolling
        selector,
    )


@pytest.mark.parametrize("width", WIDTHS.values())
def test_completing_asks_first_and_cancel_changes_nothing(page, width):
    stage, _ = _campaign(page, width)
    campaign = stage.campaign
    page.goto(f"/campaigns/{campaign.slug}/")

    page.get_by_role("button", name="Complete (final)…").click()
    page.get_by_role("heading", name=f"Complete “{campaign.name}”?").wait_for()
    consequence = page.locator(".consequence").inner_text()
    assert "Completing is final" in consequence
    assert "2 of 2 items stay unfinished" in consequence
    assert_person_can_use(page, where=f"complete confirmation at {width}", touch=False)
    screenshot(page, "flow-confirm-complete")

    page.get_by_role("link", name="Cancel").click()
    page.wait_for_url(f"**/campaigns/{campaign.slug}/")
    assert Campaign.objects.get(pk=campaign.pk).state == CampaignState.LIVE

    page.get_by_role("button", name="Complete (final)…").click()
    page.get_by_role("button", name="Complete the campaign (final)").click()
    page.get_by_text("The campaign is now completed.").wait_for()
    assert Campaign.objects.get(pk=campaign.pk).state == CampaignState.COMPLETED


@pytest.mark.parametrize("width", WIDTHS.values())
def test_rejecting_many_asks_with_and_without_javascript(browser, live_server, page, width):
    stage, _ = _campaign(page, width)
    campaign = stage.campaign
    first, second = submitted_assignment(stage), submitted_assignment(stage)

    # With JavaScript: the dialog asks, and the server does not ask a second time.
    page.goto(f"/campaigns/{campaign.slug}/review/")
    page.locator(f'input[name="ids"][value="{first.pk}"]').check()
    page.locator("#bulk-feedback").fill("Vague.")
    asked: list[str] = []

    def answer(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept()

    page.once("dialog", answer)
    page.get_by_role("button", name="Reject selected").click()
    page.get_by_text("Rejected 1 assignment.").wait_for()
    assert [m.split("?")[0] for m in asked] == ["Reject 1 assignment(s)"]

    # Without JavaScript: the server's page names the consequence and the feedback.
    context = browser.new_context(
        base_url=live_server.url,
        viewport={"width": width, "height": 900},
        java_script_enabled=False,
    )
    bare = context.new_page()
    log_in(bare)
    bare.goto(f"/campaigns/{campaign.slug}/review/")
    bare.locator(f'input[name="ids"][value="{second.pk}"]').check()
    bare.locator("#bulk-feedback").fill("Off topic.")
    bare.get_by_role("button", name="Reject selected").click()
    bare.get_by_role("heading", name="Reject 1 assignment?").wait_for()
    assert "“Off topic.”" in bare.locator(".consequence").inner_text()
    assert Assignment.objects.get(pk=second.pk).status == AssignmentStatus.SUBMITTED
    bare.get_by_role("button", name="Reject 1 assignment").click()
    bare.get_by_text("Rejected 1 assignment.").wait_for()
    assert Assignment.objects.get(pk=second.pk).status == AssignmentStatus.REJECTED
    context.close()
    # axe runs scripts: the confirmation page checked in the scripted context.
    page.goto(f"/campaigns/{campaign.slug}/workforce/")
    page.locator("table.invites").get_by_role("button", name="Revoke").first.click()
    page.get_by_role("heading", name="Revoke this invite link?").wait_for()
    assert_person_can_use(page, where=f"revoke confirmation at {width}", touch=False)


@pytest.mark.parametrize("width", WIDTHS.values())
def test_added_items_are_published_or_wait_visibly_for_publish(page, width, tmp_path):
    stage, _ = _campaign(page, width)
    campaign = stage.campaign
    rows = tmp_path / "late.csv"
    rows.write_text("external_id,topic,complexity_type\nlate-1,lakes,count\n", encoding="utf-8")
    page.goto(f"/campaigns/{campaign.slug}/")
    hits = HIT.objects.filter(stage=stage).count()

    page.locator("form.upload input[type=file]").set_input_files(str(rows))
    page.locator("form.upload").get_by_role("button", name="Upload", exact=True).click()
    page.get_by_text("Stored 1 item from late.csv").wait_for()
    assert HIT.objects.filter(stage=stage).count() == hits + 1
    assert page.locator(".waiting-items").count() == 0

    stage.publish_added = False
    stage.save(update_fields=["publish_added"])
    rows.write_text("external_id,topic,complexity_type\nlate-2,bridges,count\n", encoding="utf-8")
    page.locator("form.upload input[type=file]").set_input_files(str(rows))
    page.locator("form.upload").get_by_role("button", name="Upload", exact=True).click()
    page.get_by_text("Stored 1 item from late.csv").wait_for()
    waiting = page.locator(".waiting-items")
    assert "1 item waiting" in waiting.inner_text()
    assert_person_can_use(page, where=f"stage card with waiting items at {width}", touch=False)
    screenshot(page, "flow-stage-waiting-items")
    waiting.get_by_role("button", name="Publish 1 waiting item").click()
    page.get_by_text("published 1 HIT.").wait_for()
    assert not Item.objects.filter(stage=stage, status="pending").exists()


@pytest.mark.parametrize("width", WIDTHS.values())
def test_a_rejected_upload_answers_at_its_row_table_once(page, width, tmp_path):
    stage, _ = _campaign(page, width)
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "external_id,topic,complexity_type\nb1,lakes,telepathic\nb2,,count\n", encoding="utf-8"
    )
    page.goto(f"/campaigns/{stage.campaign.slug}/")
    page.locator("form.upload input[type=file]").set_input_files(str(bad))
    page.locator("form.upload").get_by_role("button", name="Upload", exact=True).click()
    page.locator("#upload-outcome").wait_for()
    page.wait_for_load_state("load")

    assert page.url.endswith("#upload-outcome")
    page.wait_for_function(
        "() => document.activeElement && document.activeElement.id === 'upload-outcome'"
    )
    assert _in_view(page, "#upload-outcome")
    assert page.locator("#upload-outcome table.row-errors tbody tr").count() == 2
    assert page.locator("body").inner_text().lower().count("was stored") == 1
    assert_person_can_use(page, where=f"rejected upload at {width}", touch=False)
    screenshot(page, "flow-upload-rejected")


@pytest.mark.parametrize("width", WIDTHS.values())
def test_workers_table_shows_earnings_without_scrolling_and_orders_in_words(page, width):
    """Point 10: at 1280 px Earnings is in view without scrolling the table sideways;
    the ordering list is in words. (The stage states its reward: a planning rate.)"""
    stage, _ = _campaign(page, width)
    stage.show_reward_to_local_workers = True
    stage.save(update_fields=["show_reward_to_local_workers"])
    submitted_assignment(stage)
    page.goto(f"/campaigns/{stage.campaign.slug}/workers/")

    header = page.locator("table.workers th", has_text="Earnings")
    box = header.bounding_box()
    assert box is not None
    if width == 1280:
        assert box["x"] + box["width"] <= 1280
    options = page.get_by_label("Order by").locator("option").all_inner_texts()
    assert "Median time, highest first" in options
    assert not [o for o in options if "_" in o]
    assert_person_can_use(page, where=f"workers table at {width}", touch=False)


@pytest.mark.parametrize("width", WIDTHS.values())
def test_nangia_stage_cards_are_grouped_by_arm_and_folded(page, width):
    """Point 9: the pipeline summary first, then the stage cards in one folded group per
    arm (and the shared steps); a stage linked from the flow opens its group."""
    alice = UserFactory.create(username="alice")
    campaign = campaign_create_with_recipe(owner=alice, name="Nangia", recipe="nangia")
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page)
    page.goto(f"/campaigns/{campaign.slug}/")

    groups = page.locator("details.arm-group")
    titles = page.locator("details.arm-group > summary > strong").all_inner_texts()
    arms = {str((st.config or {}).get("arm") or "") for st in campaign.stages.all()}
    expected = {f"Arm {a}" if a else "Shared steps" for a in arms}
    assert set(titles) == expected
    assert len([a for a in arms if a]) == 4
    assert all(not g.evaluate("(d) => d.open") for g in groups.all())
    screenshot(page, "flow-campaign-nangia-arms")
    assert page.locator("#pipeline").bounding_box()["y"] < groups.first.bounding_box()["y"]
    height = page.evaluate("() => document.documentElement.scrollHeight")
    # 7,886 px before (20 stages, unfolded); now 24 stages (with the tutorial writing and
    # its grading per arm), folded, the pipeline summary the longest part.
    assert height < (5500 if width == 1280 else 8500), height
    assert_person_can_use(page, where=f"Nangia campaign page at {width}", touch=False)

    crowd_tutorial = campaign.stages.get(name="CROWD: Tutorial")
    page.locator(f'#pipeline a[href="#stage-{crowd_tutorial.pk}"]').first.click()
    card = page.locator(f"#stage-{crowd_tutorial.pk} details.stage-card")
    assert card.evaluate("(d) => d.open")
    assert card.is_visible()
