"""A requester completes the datasheet and downloads the Hugging Face dataset in
Debian's chromium (Playwright): from the export section to the datasheet page, the
marked questions counted, an answer written and saved, then the zip downloaded, whose
folder ``datasets`` loads and whose datasheet is the saved one."""

from __future__ import annotations

import zipfile
from decimal import Decimal

import pytest

from campaigns.models import AssignmentStatus, Datasheet
from tests.browser.a11y import assert_person_can_use
from tests.factories import UserFactory
from tests.validation.db_helpers import hits, make_stage, submit, worker

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_requester_completes_the_datasheet_and_downloads_the_dataset(page, tmp_path):
    stage = make_stage(items=3, reward=Decimal("0.50"))
    campaign = stage.campaign
    campaign.owner = UserFactory.create(username="alice")
    campaign.save(update_fields=["owner"])
    for n, hit in enumerate(hits(stage)):
        for who in ("a", "b", "c"):
            submit(hit, worker(who), {"choice": n % 2}, status=AssignmentStatus.APPROVED)

    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")

    page.goto(f"/campaigns/{campaign.slug}/#export")
    page.get_by_role("link", name="Edit the datasheet").click()
    page.wait_for_url(f"**/campaigns/{campaign.slug}/datasheet/")
    open_count = page.locator(".open-questions").inner_text()
    assert "still to answer" in open_count
    before = int(open_count.split()[0])
    text = page.get_by_label("Datasheet (Markdown)").input_value()
    assert "**Were any ethical review processes conducted?**\n**[TO ANSWER]**" in text
    answered = text.replace(
        "**Were any ethical review processes conducted?**\n**[TO ANSWER]** IRB or ethics "
        "board, with the approval reference.",
        "**Were any ethical review processes conducted?**\nYes: IRB 2026-117, approved.",
    )
    page.get_by_label("Datasheet (Markdown)").fill(answered)
    page.get_by_role("button", name="Save the datasheet").click()
    page.get_by_text("Saved: the next hf export includes this datasheet.").wait_for()
    assert int(page.locator(".open-questions").inner_text().split()[0]) == before - 1
    assert "IRB 2026-117" in Datasheet.objects.get(campaign=campaign).text
    assert_person_can_use(page, where="datasheet, saved", touch=False)

    page.goto(f"/campaigns/{campaign.slug}/#export")
    with page.expect_download() as download_info:
        row = page.locator("#export li", has_text="Hugging Face dataset (zip)")
        row.get_by_role("link", name="direct download").click()
    archive = tmp_path / "hf.zip"
    download_info.value.save_as(archive)
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(tmp_path)
    folder = tmp_path / campaign.slug
    assert "IRB 2026-117" in (folder / "datasheet.md").read_text()
    assert "IRB 2026-117" in (folder / "README.md").read_text()

    import datasets

    loaded = datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "cache"))
    assert sum(len(split) for split in loaded.values()) == 9
