"""The review queue beside each submission: what it pays, the worker's history in the
campaign, a bonus (paid once per form however often it is sent) and a block; the
script that confirms the money of a bulk decision and the keyboard shortcuts."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from campaigns.models import LedgerEntry, LedgerKind, WorkerBlock
from campaigns.work.decisions import assignment_approve
from tests.helpers import local_pipeline, submitted_assignment

pytestmark = pytest.mark.django_db


@pytest.fixture
def queue(requester):
    campaign, writing, _ = local_pipeline(requester, slug="review-actions")
    waiting = submitted_assignment(writing)
    return campaign, writing, waiting


def _url(name, campaign, **kw):
    return reverse(f"frontend:{name}", kwargs={"slug": campaign.slug, **kw})


def test_rows_show_pay_history_and_the_script(queue, alice_client, requester):
    campaign, _writing, waiting = queue
    html = alice_client.get(_url("campaign-review", campaign)).content.decode()
    reward = waiting.hit.reward
    assert f'data-reward="{reward}"' in html
    assert 'data-fee="0.00"' in html  # the local workforce charges no fee
    assert "0 approved, 0 rejected, 1 waiting" in html
    assert "frontend/review.js" in html
    # The local workforce is paid nothing through qaportal: no bonus form (issue 36,
    # point 8), unless a stage says the requester pays it some other way.
    assert _url("review-bonus", campaign, assignment_id=waiting.pk) not in html
    assert "Bonus (" not in html
    assert _url("review-block", campaign, assignment_id=waiting.pk) in html
    waiting.hit.stage.__class__.objects.filter(pk=waiting.hit.stage_id).update(
        show_reward_to_local_workers=True
    )
    html = alice_client.get(_url("campaign-review", campaign)).content.decode()
    assert _url("review-bonus", campaign, assignment_id=waiting.pk) in html


def test_bonus_is_paid_once_per_form(queue, alice_client):
    campaign, _writing, waiting = queue
    form = {
        "amount": "0.50",
        "reason": "Careful work",
        "bonus_key": "abc123",
        "status": "submitted",
    }
    url = _url("review-bonus", campaign, assignment_id=waiting.pk)

    first = alice_client.post(url, form)
    again = alice_client.post(url, form)

    assert first.status_code == again.status_code == 302
    bonuses = LedgerEntry.objects.filter(assignment=waiting, kind=LedgerKind.BONUS)
    assert [b.amount for b in bonuses] == [Decimal("0.50")]
    other = {**form, "bonus_key": "def456"}
    third = alice_client.post(url, other)
    assert bonuses.all().count() == 2, [str(m) for m in get_messages(third.wsgi_request)]


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"amount": "lots", "reason": "x", "bonus_key": "k1"}, "plain decimal text"),
        ({"amount": "0.50", "reason": "", "bonus_key": "k2"}, "needs a reason"),
        ({"amount": "-1", "reason": "x", "bonus_key": "k3"}, "cannot be negative"),
        ({"amount": "0.50", "reason": "x", "bonus_key": ""}, "incomplete"),
    ],
)
def test_bad_bonus_is_refused_with_a_message(queue, alice_client, form, message):
    campaign, _writing, waiting = queue
    response = alice_client.post(_url("review-bonus", campaign, assignment_id=waiting.pk), form)
    shown = [str(m) for m in get_messages(response.wsgi_request)]
    assert any(message in m for m in shown), shown
    assert not LedgerEntry.objects.filter(kind=LedgerKind.BONUS).exists()


@pytest.mark.parametrize("amount", ["1e1", "1_0", "\uff11\uff10", "NaN", "sNaN", "Infinity", "-0"])
def test_an_amount_decimal_would_read_is_refused_with_a_400(queue, alice_client, amount):
    """``Decimal()`` reads ``1e1`` and ``1_0`` as 10 and full-width digits as digits; NaN
    and Infinity made a 500. The strict parser refuses them all and shows the queue."""
    campaign, _writing, waiting = queue
    response = alice_client.post(
        _url("review-bonus", campaign, assignment_id=waiting.pk),
        {"amount": amount, "reason": "x", "bonus_key": "k9", "status": "submitted"},
    )
    assert response.status_code == 400
    assert b"No bonus paid" in response.content
    assert not LedgerEntry.objects.filter(kind=LedgerKind.BONUS).exists()


def test_block_from_the_queue_and_history_counts(queue, alice_client, requester):
    campaign, _writing, waiting = queue
    assignment_approve(assignment=waiting, decided_by=requester, source="requester")
    url = _url("review-block", campaign, assignment_id=waiting.pk)

    refused = alice_client.post(url, {"reason": ""})
    assert not WorkerBlock.objects.exists()
    assert any("reason" in str(m) for m in get_messages(refused.wsgi_request))

    alice_client.post(url, {"reason": "Copied answers"})
    assert WorkerBlock.objects.filter(worker=waiting.worker).count() == 1

    html = alice_client.get(_url("campaign-review", campaign) + "?status=approved").content
    assert b"1 approved, 0 rejected, 0 waiting" in html


def test_collaborator_cannot_block_and_others_get_404(
    queue, alice_client, bob_client, other_requester
):
    campaign, _writing, waiting = queue
    url = _url("review-block", campaign, assignment_id=waiting.pk)
    assert bob_client.post(url, {"reason": "x"}).status_code == 404
    assert (
        bob_client.post(
            _url("review-bonus", campaign, assignment_id=waiting.pk),
            {"amount": "1", "reason": "x", "bonus_key": "k"},
        ).status_code
        == 404
    )
    campaign.collaborators.add(other_requester)
    response = bob_client.post(url, {"reason": "x"})
    assert response.status_code == 302
    assert not WorkerBlock.objects.exists()
    missing = _url("review-bonus", campaign, assignment_id=10**9)
    assert (
        alice_client.post(missing, {"amount": "1", "reason": "x", "bonus_key": "k"}).status_code
        == 404
    )
