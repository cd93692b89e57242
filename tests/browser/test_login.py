"""A requester logs in through a real browser and lands on the campaign list."""

import pytest

from tests.browser.a11y import assert_person_can_use
from tests.factories import CampaignFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_requester_logs_in_and_sees_only_own_campaigns(page):
    alice = UserFactory.create(username="alice")
    CampaignFactory.create(owner=alice, name="Alice's Mintaka")
    CampaignFactory.create(owner=UserFactory.create(username="bob"), name="Bob's WhyQA")
    page.goto("/accounts/login/")
    assert_person_can_use(page, where="login page", touch=False)
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("correct horse battery")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")
    body = page.locator("body").inner_text()
    assert "Alice's Mintaka" in body
    assert "Bob's WhyQA" not in body
    assert_person_can_use(page, where="campaign list", touch=False)
