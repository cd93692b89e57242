"""An MTurk worker in a real browser: the HIT's ExternalQuestion page inside a
cross-origin iframe, as MTurk shows it — preview, accept, fill, submit, and the
assignment handed back to (a local fake of) MTurk's externalSubmit.

The fake MTurk page is served from ``localhost``, the task page from ``127.0.0.1``:
two sites, so the task page's own cookies would be third-party cookies here, as
they are inside MTurk. The page must work without them.
"""

from __future__ import annotations

from decimal import Decimal
from urllib.parse import quote, urlencode, urlsplit

import pytest

from campaigns import tasktypes
from campaigns.models import HIT, Assignment, AssignmentStatus, HITItem
from tests.browser import mturk_urls
from tests.browser.a11y import axe_violations, layout_problems
from tests.campaigns.work.conftest import TEMPLATES_DIR, EchoTask, add_items
from tests.factories import CampaignFactory, StageFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HIT_ID = "3YGYP1364Z8NFH3JMC9V5CRQR4DMZX"
ASSIGNMENT_ID = "3ZAK8W07I4EJH7YMFNDB6SAA0AD0UX"


@pytest.fixture
def mturk_site(settings, monkeypatch, live_server):
    monkeypatch.setitem(tasktypes._REGISTRY, EchoTask.name, EchoTask())
    engine = dict(settings.TEMPLATES[0])
    engine["DIRS"] = [*engine.get("DIRS", []), TEMPLATES_DIR]
    settings.TEMPLATES = [engine]
    settings.ROOT_URLCONF = "tests.browser.mturk_urls"
    settings.MTURK_SUBMIT_HOSTS_EXTRA = [live_server.url]
    mturk_urls.RECEIVED.clear()
    port = urlsplit(live_server.url).port
    return live_server.url, f"http://127.0.0.1:{port}"


@pytest.fixture
def hit():
    campaign = CampaignFactory.create(provider="mturk", state="live")
    stage = StageFactory.create(campaign=campaign, task_type="test_echo", name="Describe")
    hit = HIT.objects.create(
        stage=stage,
        provider="mturk",
        provider_hit_id=HIT_ID,
        max_assignments=1,
        places_left=1,
        reward=Decimal("0.50"),
        status="published",
    )
    (item,) = add_items(stage, ["a cat on a mat"])
    HITItem.objects.create(hit=hit, item=item)
    return hit


def _in_mturk(page, mturk_origin: str, task_origin: str, assignment_id: str):
    params = {
        "assignmentId": assignment_id,
        "hitId": HIT_ID,
        "workerId": "A1X2Y3Z4W5V6U7",
        "turkSubmitTo": mturk_origin,
    }
    src = f"{task_origin}/w/mturk/?{urlencode(params)}"
    page.goto(f"{mturk_origin}/fake-mturk/?src={quote(src)}")
    return page.frame_locator("#task")


def _person_can_use_the_frame(page, *, where: str) -> None:
    """The checks on the task page inside the frame (the fake MTurk page around it is
    the test's own): axe-core is in every frame (the page fixture's init script)."""
    frame = next(f for f in page.frames if f is not page.main_frame)
    problems = axe_violations(frame) + layout_problems(frame)
    assert not problems, f"{where}:\n" + "\n".join(problems)


def test_mturk_worker_previews_accepts_and_submits_in_the_frame(page, mturk_site, hit):
    mturk_origin, task_origin = mturk_site

    preview = _in_mturk(page, mturk_origin, task_origin, "ASSIGNMENT_ID_NOT_AVAILABLE")
    preview.get_by_text("Accept the HIT to start").wait_for()
    assert preview.get_by_text("a cat on a mat").is_visible()
    assert preview.get_by_role("button", name="Submit").count() == 0
    assert not Assignment.objects.exists()
    _person_can_use_the_frame(page, where="MTurk preview in the frame")

    task = _in_mturk(page, mturk_origin, task_origin, ASSIGNMENT_ID)
    task.locator('[name="items/0/text"]').wait_for()
    _person_can_use_the_frame(page, where="MTurk task in the frame")
    task.locator('[name="items/0/text"]').fill("A cat sits on a mat.")
    task.get_by_role("button", name="Submit").click()

    task.get_by_role("heading", name=f"MTurk received {ASSIGNMENT_ID}").wait_for()
    assert mturk_urls.RECEIVED == [{"assignmentId": ASSIGNMENT_ID, "qaportal_saved": "1"}]
    assignment = Assignment.objects.get()
    assert assignment.status == AssignmentStatus.SUBMITTED
    assert assignment.provider_assignment_id == ASSIGNMENT_ID
    assert assignment.answers is not None
    assert assignment.answers["items"][0]["text"] == "A cat sits on a mat."
    assert assignment.review_details["identity"]["status"] == "unconfirmed"
