"""Issue 20, the campaign page in Debian's chromium (Playwright): the pipeline as a flow
with the protocol arms side by side (Nangia's 20 stages), a progress table that fits
1280 px and tells an empty stage from a finished one, charts and quality numbers that
show, and no money that does not move for the local workforce. The last test keeps
the screenshots under docs/screenshots/ when QAPORTAL_SCREENSHOTS names that folder."""

from __future__ import annotations

import os
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.urls import reverse

from campaigns.design.services import campaign_create, stage_add
from campaigns.models import Campaign, CampaignState, Item, ItemSource
from campaigns.platforms.publishing import campaign_start
from campaigns.recipes.services import campaign_create_with_recipe
from campaigns.work.invites import invite_create, invite_token
from tests.browser.a11y import assert_person_can_use
from tests.browser.test_requester_design import log_in
from tests.factories import UserFactory
from tests.helpers import local_pipeline, submitted_assignment

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDE = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


def _no_horizontal_scroll(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_nangia_pipeline_is_a_flow_with_the_four_arms_side_by_side(page):
    """Point 7: 20 stages as a flow; the arms are columns next to each other, each
    stage with its counts; the page is no longer an 8,000-pixel list."""
    alice = UserFactory.create(username="alice")
    campaign = campaign_create_with_recipe(owner=alice, name="Nangia", recipe="nangia")
    assert campaign.stages.count() == 24  # issue 35: the tutorials' writing and grading
    log_in(page)
    page.set_viewport_size(WIDE)
    page.goto(f"/campaigns/{campaign.slug}/")

    arms = page.locator("#pipeline .arm")
    assert arms.count() == 4
    boxes = [arms.nth(i).bounding_box() for i in range(4)]
    names = [arms.nth(i).locator(".arm-name").inner_text() for i in range(4)]
    assert sorted(n.upper() for n in names) == ["BASELINE", "CROWD", "EXPERT", "JUSTIFICATION"]
    # Side by side: one row, left to right, all inside the 1280 px window.
    assert len({round(b["y"]) for b in boxes}) == 1
    assert [b["x"] for b in boxes] == sorted(b["x"] for b in boxes)
    assert all(b["x"] + b["width"] <= 1280 for b in boxes)
    # Every stage is in the flow once, with its counts.
    nodes = page.locator("#pipeline .flow-node")
    assert nodes.count() == 24
    tutorial = page.locator("#pipeline .flow-node", has_text="CROWD: Tutorial").first
    assert "item" in tutorial.locator(".flow-counts").inner_text()
    crowd = page.locator('.arm[aria-label="Arm CROWD"] .flow-node')
    # its tutorial (Nangia et al.: only CROWD and EXPERT have one) with its writing and
    # grading, three rounds, three gradings, the main round
    assert crowd.count() == 10
    assert "CROWD: Grading 1" in crowd.nth(4).inner_text()
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 7000, height  # 24 stages; the list was 8,000 px for 19
    flow_height = page.locator("#pipeline .flow").bounding_box()["height"]
    assert flow_height < 1100, flow_height

    # A node leads to the stage's card, which opens.
    page.locator("#pipeline .flow-node", has_text="Validation quiz").click()
    page.locator(".stage", has_text="Validation quiz").locator(
        "details.stage-card[open]"
    ).wait_for()


def test_progress_fits_1280_and_an_empty_stage_is_not_done(page):
    """Point 8: the table fits; the next stage, still empty, says "no work yet", not
    "100 %"; the percent and the items finished agree."""
    alice = UserFactory.create(username="alice")
    campaign, writing, linking = local_pipeline(alice, slug="progress")
    submitted_assignment(writing)
    log_in(page)
    page.set_viewport_size(WIDE)
    page.goto(f"/campaigns/{campaign.slug}/")

    wrap = page.locator("#progress .table-wrap")
    assert wrap.evaluate("e => e.scrollWidth <= e.clientWidth")
    row = page.locator(f"#progress-{writing.pk}")
    assert row.locator(".stage-percent").inner_text() == "50.0 %"
    assert row.locator(".items-done").inner_text() == "1 of 2"
    empty = page.locator(f"#progress-{linking.pk}")
    assert empty.locator(".stage-percent").inner_text() == "no work yet"
    assert "100" not in empty.inner_text()

    submitted_assignment(writing, question="Which river is wider?")
    page.reload()
    row = page.locator(f"#progress-{writing.pk}")
    assert row.locator(".stage-percent").inner_text() == "100.0 %"
    assert row.locator(".items-done").inner_text() == "2 of 2"
    assert _no_horizontal_scroll(page)


def test_charts_show_and_quality_numbers_replace_measuring_within_a_second(page):
    """Point 9: submissions and approvals over time, work-time distribution and
    agreement over time as images; quality numbers, not "Measuring…", after a second."""
    alice = UserFactory.create(username="alice")
    campaign, writing, _ = local_pipeline(alice, slug="charts")
    submitted_assignment(writing)
    submitted_assignment(writing, question="Which river is wider?")
    log_in(page)
    page.set_viewport_size(WIDE)
    page.goto(f"/campaigns/{campaign.slug}/")

    quality = page.locator("#quality")
    quality.get_by_text("Krippendorff's alpha").wait_for(timeout=1000)
    assert "Measuring" not in quality.inner_text()
    assert "2 stored assignments" in quality.inner_text()

    charts = page.locator("#charts img")
    assert charts.count() == 2  # activity and work time; no spend chart on local
    for i in range(charts.count()):
        img = charts.nth(i)
        img.scroll_into_view_if_needed()
        page.wait_for_function(
            "img => img.complete && img.naturalWidth > 0", arg=img.element_handle()
        )
    activity = page.request.get(f"/campaigns/{campaign.slug}/charts/activity.svg").text()
    assert "Submitted" in activity
    assert "Approved" in activity
    assert '<desc class="value">2</desc>' in activity  # two submitted so far
    work = page.request.get(f"/campaigns/{campaign.slug}/charts/work-time.svg").text()
    # Both took under 30 s: the first bar holds them.
    assert '<desc class="value">2</desc>' in work


def test_spend_chart_against_the_budget_on_a_paid_platform(page):
    """Point 9 (money): on a paid platform, spend against the budget cap over time."""
    alice = UserFactory.create(username="alice")
    campaign = campaign_create(
        owner=alice, name="Paid", provider="mturk", budget_cap=Decimal("50.00")
    )
    log_in(page)
    page.goto(f"/campaigns/{campaign.slug}/")
    assert page.locator('#charts img[alt^="Money spent"]').count() == 1
    svg = page.request.get(f"/campaigns/{campaign.slug}/charts/spend.svg").text()
    assert "No money committed yet" in svg


def test_local_campaign_shows_no_money_that_does_not_move(page):
    """Point 11: no held, forecast or estimated amounts for the local workforce; its
    workers see no reward line."""
    owner = UserFactory.create(username="alice")
    campaign = campaign_create(owner=owner, name="In-house")
    stage = stage_add(
        campaign=campaign, name="Write", task_type="question_writing", reward=Decimal("0.25")
    )
    Item.objects.create(
        stage=stage,
        external_id="c1",
        data={"topic": "rivers", "complexity_type": "count"},
        source=ItemSource.UPLOADED,
    )
    campaign_start(campaign=campaign, to_state=CampaignState.LIVE)
    log_in(page)
    page.goto(f"/campaigns/{campaign.slug}/")
    costs = page.locator("#costs").inner_text()
    assert "nothing to estimate" in costs
    assert "USD" not in costs
    assert "Reward" not in page.locator(f"#stage-{stage.pk} .facts").inner_text()

    page.goto(f"/campaigns/{campaign.slug}/costs/")
    summary = page.locator("#summary").inner_text()
    for phantom in ("Held", "Forecast", "Planned"):
        assert phantom not in summary
    assert "Forecast" not in page.locator("#by-stage").inner_text()
    assert "paid no rewards through qaportal" in summary

    invite = invite_create(campaign=campaign, created_by=owner, expires_in=timedelta(days=1))
    worker = page.context.browser.new_context(base_url=page.url.split("/campaigns")[0])
    worker_page = worker.new_page()
    worker_page.goto(reverse("worker:invite", kwargs={"token": invite_token(invite=invite)}))
    worker_page.get_by_role("button", name="Start").click()
    worker_page.get_by_role("heading", name="Instructions").wait_for()
    assert "Reward" not in worker_page.locator("main").inner_text()

    # ... unless the requester, who pays them some other way, chooses to show it.
    page.goto(f"/campaigns/{campaign.slug}/stages/{stage.pk}/edit/")
    page.get_by_label("Tell local workers what they earn").check()
    page.get_by_role("button", name="Save stage").click()
    page.get_by_text("Stage “Write” saved.").wait_for()
    worker_page.reload()
    assert "Reward per task: 0.25 USD." in worker_page.locator("main").inner_text()
    worker.close()


PAGES = (
    ("campaign-list", "/"),
    ("campaign-nangia", "/campaigns/{nangia}/"),
    ("campaign-progress", "/campaigns/{progress}/"),
    ("stage-edit", "/campaigns/{progress}/stages/{writing}/edit/"),
    ("go-live-confirm", "/campaigns/{paid}/transition/confirm/?to_state=live"),
    ("costs-local", "/campaigns/{progress}/costs/"),
)


def test_requester_pages_at_1280_and_390_without_horizontal_scroll(page, tmp_path):
    """The main requester pages at a desktop and a phone width: nothing wider than the
    screen. With QAPORTAL_SCREENSHOTS=docs/screenshots the screenshots land there."""
    out = Path(os.environ.get("QAPORTAL_SCREENSHOTS") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    alice = UserFactory.create(username="alice")
    nangia = campaign_create_with_recipe(owner=alice, name="Nangia protocols", recipe="nangia")
    campaign, writing, _ = local_pipeline(alice, slug="mintaka-pilot")
    Campaign.objects.filter(pk=campaign.pk).update(name="Mintaka pilot")
    submitted_assignment(writing)
    paid = campaign_create(owner=alice, name="Prolific study", provider="prolific")
    paid_stage = stage_add(
        campaign=paid,
        name="Why questions",
        task_type="question_writing",
        reward=Decimal("0.80"),
        assignments_per_hit=3,
    )
    for n in range(4):
        Item.objects.create(
            stage=paid_stage,
            external_id=f"c{n}",
            data={"topic": "rivers", "complexity_type": "count"},
            source=ItemSource.UPLOADED,
        )
    log_in(page)
    slugs = {
        "nangia": nangia.slug,
        "progress": campaign.slug,
        "writing": writing.pk,
        "paid": paid.slug,
    }
    for width_name, size in (("1280", WIDE), ("390", PHONE)):
        page.set_viewport_size(size)
        for name, path in PAGES:
            page.goto(path.format(**slugs))
            page.wait_for_load_state("networkidle")
            if page.locator("#quality").count():
                page.locator("#quality .live[data-live-updated]").wait_for(state="attached")
            assert _no_horizontal_scroll(page), f"{name} at {width_name} px scrolls sideways"
            assert_person_can_use(page, where=f"{name} at {width_name} px", touch=False)
            page.screenshot(path=str(out / f"requester-{name}-{width_name}.png"), full_page=True)
    assert len(list(out.glob("requester-*.png"))) == 2 * len(PAGES)
