"""A requester runs a campaign from the dashboard in Debian's chromium (Playwright):
log in, create a campaign with a question-writing stage, upload items, start the
pilot on the local workforce, watch the progress bars move while simulated workers
submit, then bulk-approve with the confirmation of the money involved, and download the dataset in
Mintaka's schema."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from campaigns.models import Assignment, AssignmentStatus, Campaign
from campaigns.simulate import simulate_crowd
from tests.browser.a11y import assert_person_can_use
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ITEMS = (
    "external_id,topic,complexity_type\n"
    "movies-count,movies,count\n"
    "music-comparative,music,comparative\n"
    "books-superlative,books,superlative\n"
)


def test_requester_publishes_watches_progress_and_bulk_approves(page, live_server, tmp_path):
    UserFactory.create(username="alice")
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")

    # A campaign from scratch, one stage: question writing at 0.25 a HIT.
    page.get_by_label("Name").fill("Browser pilot")
    page.get_by_role("button", name="Create campaign").click()
    page.wait_for_url("**/campaigns/browser-pilot/")
    stage_form = page.locator("#add-stage form")
    stage_form.get_by_label("Name").fill("Write questions")
    stage_form.get_by_label("Task type").select_option("question_writing")
    stage_form.get_by_label("Reward").fill("0.25")
    stage_form.get_by_role("button", name="Add stage").click()
    page.wait_for_url("**/campaigns/browser-pilot/#stage-*")

    items = tmp_path / "cells.csv"
    items.write_text(ITEMS, encoding="utf-8")
    page.locator("form.upload input[type=file]").set_input_files(str(items))
    page.locator("form.upload").get_by_role("button", name="Upload", exact=True).click()
    page.get_by_text("Stored 3 items from cells.csv").wait_for()

    page.get_by_role("button", name="Start pilot").click()
    page.get_by_text("The campaign is now pilot").wait_for()
    progress = page.locator("#progress .progress-total")
    assert "0 done, 3 to go" in progress.inner_text()
    assert_person_can_use(page, where="campaign page, pilot started", touch=False)

    # Simulated workers submit while the page is open; the live section follows.
    campaign = Campaign.objects.get(slug="browser-pilot")
    run = threading.Thread(
        target=simulate_crowd,
        kwargs={
            "campaign": campaign,
            "workers": 3,
            "seed": 5,
            "shares": {"good": 1.0},
            "base_url": live_server.url,
        },
    )
    run.start()
    run.join(timeout=120)
    assert not run.is_alive()
    page.locator("#progress .progress-total").get_by_text("3 done, 0 to go").wait_for(
        timeout=15_000
    )
    assert page.locator("#progress [data-live-updated]").count() == 1
    submitted = Assignment.objects.filter(status=AssignmentStatus.SUBMITTED).count()
    assert submitted == 3

    # Bulk approval asks first; the local workforce is paid nothing through qaportal,
    # so neither the rows nor the confirmation state money (issue 20, point 11).
    page.get_by_role("link", name="Review").click()
    page.wait_for_url("**/review/")
    assert page.locator("dd.pay").count() == 0
    for box in page.locator('input[name="ids"]').all():
        box.check()
    dialogs: list[str] = []

    def accept(dialog) -> None:
        dialogs.append(dialog.message)
        dialog.accept()

    page.on("dialog", accept)
    page.get_by_role("button", name="Approve selected").click()
    page.get_by_text("Approved 3 assignments.").wait_for()
    assert dialogs == ["Approve 3 assignment(s)?"]
    assert Assignment.objects.filter(status=AssignmentStatus.APPROVED).count() == 3
    assert_person_can_use(page, where="review queue after a bulk approval", touch=False)

    # The dataset in Mintaka's schema, downloaded from the campaign page.
    page.get_by_role("link", name="Browser pilot").click()
    page.wait_for_url("**/campaigns/browser-pilot/")
    link = page.locator("#export").get_by_role("link", name="all", exact=True)
    with page.expect_download(timeout=30_000) as download:
        link.click()
    examples = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
    assert download.value.suggested_filename == "browser-pilot-mintaka.json"
    written = sum(len((a.answers or {})["questions"]) for a in Assignment.objects.all())
    assert len(examples) == written >= 3
    assert {e["category"] for e in examples} == {"movies", "music", "books"}
    assert all(set(e) >= {"id", "question", "answer", "questionEntity"} for e in examples)
