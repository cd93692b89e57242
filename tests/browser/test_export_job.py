"""A requester exports from the campaign page in Debian's chromium: "Export" starts a
job, its page's progress bar (job.js) reaches 100 %, the download link appears with
the row count and SHA-256, and the downloaded file matches them."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from tests.browser.a11y import assert_person_can_use
from tests.factories import (
    AssignmentFactory,
    CampaignFactory,
    HITFactory,
    StageFactory,
    UserFactory,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_export_button_shows_progress_and_downloads_the_named_file(
    page, live_server, tmp_path: Path, settings
):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    alice = UserFactory.create(username="alice")
    campaign = CampaignFactory.create(owner=alice, slug="browser-export", name="Browser export")
    stage = StageFactory.create(campaign=campaign, position=0)
    for _ in range(6):
        AssignmentFactory.create(
            hit=HITFactory.create(stage=stage),
            status="submitted",
            submitted_at=timezone.now() + timedelta(seconds=5),
        )
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")

    page.goto("/campaigns/browser-export/#export")
    form = page.locator("form.export-job").filter(has_text="Collection metadata")
    form.get_by_role("button", name="Export").click()
    page.wait_for_url("**/jobs/*/")
    page.wait_for_function("document.getElementById('job-progress').value === 1")
    assert page.locator("#job-percent").inner_text() == "100 %"
    assert page.locator("#job-status").inner_text() == "done"
    assert page.locator("#job-row-count").inner_text() == "6"
    checksum = page.locator("#job-checksum").inner_text()
    assert_person_can_use(page, where="export job, done", touch=False)
    page.screenshot(path=str(tmp_path / "job.png"))

    with page.expect_download() as info:
        page.locator("#job-download").click()
    body = Path(info.value.path()).read_bytes()
    assert hashlib.sha256(body).hexdigest() == checksum
    assert info.value.suggested_filename == "browser-export-collection-metadata.csv"
    assert body.count(b"\n") == 7  # header and six rows
