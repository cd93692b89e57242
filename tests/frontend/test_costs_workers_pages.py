"""The Costs and Workers pages: numbers, filters, actions through the services,
permissions, CSRF, and escaping of what requesters and workers typed."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from campaigns.models import (
    CampaignWorker,
    OperationKind,
    ProviderOperation,
    QualificationGrant,
    QualificationType,
    WorkerBlock,
)
from campaigns.work.decisions import assignment_approve
from tests.factories import LedgerEntryFactory, UserFactory, WorkerFactory
from tests.helpers import local_pipeline, submitted_assignment

pytestmark = pytest.mark.django_db

MARKUP = '<img src=x onerror="alert(1)">'


@pytest.fixture
def team(requester):
    campaign, writing, _ = local_pipeline(requester, slug="pages", topics=("a", "b"))
    good = submitted_assignment(writing, question="Which river is longer?")
    waiting = submitted_assignment(writing, question="Which lake is deeper?")
    assignment_approve(assignment=good, decided_by=requester, source="requester")
    CampaignWorker.objects.filter(campaign=campaign, worker=good.worker).update(arm=MARKUP)
    writing.name = f"Write {MARKUP}"
    writing.save(update_fields=["name"])
    return campaign, writing, good, waiting


def _url(name, campaign):
    return reverse(f"frontend:{name}", kwargs={"slug": campaign.slug})


def test_campaign_page_links_costs_and_workers(team, alice_client):
    html = alice_client.get(_url("campaign-detail", team[0])).content.decode()
    assert _url("campaign-costs", team[0]) in html
    assert _url("campaign-workers", team[0]) in html


def test_costs_page_shows_sums_and_escapes_stage_names(team, alice_client):
    campaign, writing, _good, _ = team
    LedgerEntryFactory.create(
        campaign=campaign, stage=writing, kind="bonus", status="paid", amount=Decimal("1.25")
    )
    LedgerEntryFactory.create(
        campaign=campaign, stage=writing, kind="bonus", status="committed", amount=Decimal("0.40")
    )
    response = alice_client.get(_url("campaign-costs", campaign))
    assert response.status_code == 200
    html = response.content.decode()
    assert '<dd class="spent">1.25 USD</dd>' in html
    assert '<dd class="committed">0.40 USD</dd>' in html
    assert MARKUP not in html
    assert "Write &lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html


def test_costs_and_workers_pages_are_private(team, bob_client):
    for name in ("campaign-costs", "campaign-workers"):
        assert bob_client.get(_url(name, team[0])).status_code == 404
        anonymous = Client().get(_url(name, team[0]))
        assert anonymous.status_code == 302
        assert "/accounts/login/" in anonymous["Location"]


def test_workers_page_table_filters_and_escaping(team, alice_client, requester):
    campaign, _, good, waiting = team
    qual = QualificationType.objects.create(owner=requester, name=f"Q {MARKUP}", kind="manual")
    QualificationGrant.objects.create(qualification_type=qual, worker=good.worker)
    html = alice_client.get(_url("campaign-workers", campaign)).content.decode()
    assert good.worker.pseudonym in html
    assert waiting.worker.pseudonym in html
    assert good.worker.external_id not in html
    assert MARKUP not in html
    assert "&lt;img src=x" in html
    filtered = alice_client.get(_url("campaign-workers", campaign), {"status": "submitted"})
    assert waiting.worker.pseudonym in filtered.content.decode()
    assert good.worker.pseudonym not in filtered.content.decode()
    bad = alice_client.get(_url("campaign-workers", campaign), {"min_approval": "7"})
    assert bad.status_code == 400


def test_workers_table_orders_in_words_and_shows_no_earnings_on_local(team, alice_client):
    """Issue 36, points 8 and 10: the ordering list in words; an unpaid workforce has
    no Earnings column unless a stage says the requester pays it some other way."""
    campaign, writing, _, _ = team
    html = alice_client.get(_url("campaign-workers", campaign)).content.decode()

    assert '<option value="-median_work_seconds">Median time, highest first</option>' in html
    assert ">-median_work_seconds<" not in html
    assert "Earnings" not in html.split("<table")[1]
    writing.show_reward_to_local_workers = True
    writing.save(update_fields=["show_reward_to_local_workers"])
    paid = alice_client.get(_url("campaign-workers", campaign)).content.decode()
    header = paid.split("<thead>")[1].split("</thead>")[0]
    # Earnings next to the worker, visible without scrolling sideways.
    assert header.index("Earnings") < header.index("Qualifications")


def test_message_from_the_page_is_a_notify_operation(team, alice_client):
    campaign, _, good, waiting = team
    response = alice_client.post(
        _url("campaign-workers-act", campaign),
        {
            "action": "message",
            "workers": f"{good.worker.pseudonym}\n{waiting.worker.pseudonym}",
            "subject": "Thanks",
            "body": f"Well done {MARKUP}",
        },
    )
    assert response.status_code == 302
    op = ProviderOperation.objects.get(kind=OperationKind.NOTIFY)
    assert op.payload["worker_ids"] == [good.worker.pk, waiting.worker.pk]
    assert op.payload["body"] == f"Well done {MARKUP}"
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "Send a message: done for 2 worker(s)."
    ]


def test_page_action_errors_are_escaped_and_do_nothing(team, alice_client):
    campaign = team[0]
    response = alice_client.post(
        _url("campaign-workers-act", campaign),
        {"action": "message", "workers": "<b>nobody</b>", "body": "hi"},
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "Not workers of this campaign: &lt;b&gt;nobody&lt;/b&gt;." in html
    missing_body = alice_client.post(
        _url("campaign-workers-act", campaign),
        {"action": "message", "workers": team[2].worker.pseudonym, "body": " "},
    )
    assert missing_body.status_code == 400
    assert "A message needs a body." in missing_body.content.decode()
    assert not ProviderOperation.objects.filter(kind=OperationKind.NOTIFY).exists()


def test_block_grant_and_unblock_from_the_page(team, alice_client, requester):
    campaign, _, good, _ = team
    act = _url("campaign-workers-act", campaign)
    name = good.worker.pseudonym
    alice_client.post(act, {"action": "block", "workers": name, "reason": "spam"})
    assert WorkerBlock.objects.filter(worker=good.worker, lifted_at__isnull=True).exists()
    qual = QualificationType.objects.create(owner=requester, name="Round 2", kind="round")
    alice_client.post(act, {"action": "grant", "workers": name, "qualification_type": qual.pk})
    assert QualificationGrant.objects.get(worker=good.worker).revoked_at is None
    alice_client.post(act, {"action": "unblock", "workers": name})
    assert not WorkerBlock.objects.filter(worker=good.worker, lifted_at__isnull=True).exists()


def test_collaborator_cannot_block_from_the_page(team):
    campaign, _, good, _ = team
    carol = UserFactory.create(username="carol")
    campaign.collaborators.add(carol)
    client = Client()
    client.force_login(carol)
    response = client.post(
        _url("campaign-workers-act", campaign),
        {"action": "block", "workers": good.worker.pseudonym, "reason": "spam"},
    )
    assert response.status_code == 403
    assert not WorkerBlock.objects.exists()


def test_actions_need_csrf(team, requester):
    client = Client(enforce_csrf_checks=True)
    client.force_login(requester)
    response = client.post(
        _url("campaign-workers-act", team[0]),
        {"action": "message", "workers": team[2].worker.pseudonym, "body": "hi"},
    )
    assert response.status_code == 403
    assert not ProviderOperation.objects.filter(kind=OperationKind.NOTIFY).exists()


def test_worker_of_another_campaign_is_refused(team, alice_client):
    stranger = WorkerFactory.create()
    response = alice_client.post(
        _url("campaign-workers-act", team[0]),
        {"action": "block", "workers": stranger.pseudonym, "reason": "x"},
    )
    assert response.status_code == 400
    assert not WorkerBlock.objects.exists()
