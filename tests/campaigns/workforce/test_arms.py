"""Randomized protocol arms: balanced blocks dealt on first contact, sticky, the same
under concurrent first contacts; an arm's stages only for its workers, and a
campaign-wide invite leads each worker to their own arm's first stage."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection

from campaigns.design.services import campaign_create, stage_add
from campaigns.models import CampaignWorker, Item, ItemSource
from campaigns.platforms.publishing import campaign_start
from campaigns.work.allocation import assignment_accept
from campaigns.work.invites import invite_create, invite_redeem, invite_token
from campaigns.work.selectors.access import stage_entry_for_invite
from campaigns.workforce.arms import campaign_worker_join
from campaigns.workforce.selectors import arm_for_position, campaign_arms
from qaportal.errors import DomainError
from tests.factories import WorkerFactory

ARMS = ("BASELINE", "CROWD", "EXPERT", "JUSTIFICATION")


def _campaign(owner, slug="arms"):
    campaign = campaign_create(owner=owner, name="Protocols", slug=slug)
    stages = {}
    for arm in ARMS:
        stages[arm] = stage_add(
            campaign=campaign,
            name=f"Write ({arm})",
            task_type="question_writing",
            config={"questions_per_hit": 1, "arm": arm},
        )
        for n in range(3):
            Item.objects.create(
                stage=stages[arm],
                external_id=f"{arm}-{n}",
                data={"topic": "rivers", "complexity_type": "comparative"},
                source=ItemSource.UPLOADED,
            )
    campaign = campaign_start(campaign=campaign, to_state="pilot")
    return campaign, stages


def test_blocks_are_balanced_and_reproducible():
    dealt = [arm_for_position(campaign_id=7, arms=list(ARMS), position=n) for n in range(40)]
    for block in range(10):
        assert sorted(dealt[block * 4 : block * 4 + 4]) == list(ARMS)
    assert dealt == [
        arm_for_position(campaign_id=7, arms=list(ARMS), position=n) for n in range(40)
    ]
    assert dealt != [
        arm_for_position(campaign_id=8, arms=list(ARMS), position=n) for n in range(40)
    ]
    assert len({tuple(dealt[b * 4 : b * 4 + 4]) for b in range(10)}) > 1  # shuffled per block


@pytest.mark.django_db
def test_first_contact_deals_an_arm_that_sticks(requester):
    campaign, _stages = _campaign(requester)
    assert campaign_arms(campaign=campaign) == sorted(ARMS)
    workers = [WorkerFactory.create() for _ in range(8)]
    arms = [campaign_worker_join(campaign=campaign, worker=w).arm for w in workers]
    assert Counter(arms) == dict.fromkeys(ARMS, 2)
    again = [campaign_worker_join(campaign=campaign, worker=w).arm for w in workers]
    assert again == arms
    assert CampaignWorker.objects.filter(campaign=campaign).count() == 8


@pytest.mark.django_db
def test_an_arms_stage_is_only_for_its_workers(requester):
    campaign, stages = _campaign(requester, slug="arm-access")
    invite = invite_create(campaign=campaign, created_by=requester, expires_in=timedelta(days=1))
    _, worker = invite_redeem(token=invite_token(invite=invite))
    arm = CampaignWorker.objects.get(campaign=campaign, worker=worker).arm
    entry = stage_entry_for_invite(invite=invite, worker_ids=[worker.pk])
    assert entry == stages[arm]
    assert assignment_accept(stage=stages[arm], worker=worker).hit.stage == stages[arm]
    other = next(a for a in ARMS if a != arm)
    with pytest.raises(DomainError):
        assignment_accept(stage=stages[other], worker=worker)


@pytest.mark.django_db(transaction=True)
def test_concurrent_first_contacts_stay_balanced(requester):
    campaign, _ = _campaign(requester, slug="arm-race")
    invite = invite_create(campaign=campaign, created_by=requester, expires_in=timedelta(days=1))
    token = invite_token(invite=invite)
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def join() -> None:
        try:
            start.wait()
            invite_redeem(token=token)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=join) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    arms = Counter(CampaignWorker.objects.filter(campaign=campaign).values_list("arm", flat=True))
    assert arms == dict.fromkeys(ARMS, 2)


@pytest.mark.django_db
def test_arms_side_by_side(requester):
    from django.test import Client
    from django.urls import reverse
    from rest_framework.test import APIClient

    from campaigns.insights.arms import campaign_arm_comparison
    from campaigns.work.decisions import assignment_approve
    from campaigns.work.submission import assignment_submit

    campaign, stages = _campaign(requester, slug="arm-compare")
    invite = invite_create(campaign=campaign, created_by=requester, expires_in=timedelta(days=1))
    done = []
    for n in range(4):
        _, worker = invite_redeem(token=invite_token(invite=invite))
        arm = CampaignWorker.objects.get(campaign=campaign, worker=worker).arm
        a = assignment_accept(stage=stages[arm], worker=worker)
        question = (
            "Which river is longer?" if n % 2 else "Which of the two rivers is longer, really?"
        )
        telemetry = {"pastes": [{"field": "x", "length": 5}]} if arm == "CROWD" else {}
        result = assignment_submit(
            assignment_id=a.pk,
            worker=worker,
            form={"questions/0/question": question, "questions/0/answer": "The Nile"},
            telemetry=telemetry,
        )
        assert result.stored, result.errors
        if arm in ("CROWD", "EXPERT"):
            assignment_approve(assignment=result.assignment, decided_by=requester, source="t")
        done.append(arm)

    rows = {r.arm: r for r in campaign_arm_comparison(campaign=campaign)}

    assert sorted(rows) == sorted(ARMS)
    assert all(r.workers == 1 and r.stored == 1 and r.stages == 1 for r in rows.values())
    assert rows["CROWD"].accepted == rows["EXPERT"].accepted == 1
    assert rows["BASELINE"].accepted == 0
    assert rows["CROWD"].pasted_share == 1.0
    assert rows["EXPERT"].pasted_share == 0.0
    assert (rows["CROWD"].mean_answer_chars or 0) > 10
    api = APIClient()
    api.force_authenticate(requester)
    body = api.get(f"/api/v1/campaigns/{campaign.slug}/arms/").json()
    assert [r["arm"] for r in body] == sorted(ARMS)
    page = Client()
    page.force_login(requester)
    html = page.get(reverse("frontend:campaign-quality", kwargs={"slug": campaign.slug})).content
    assert b"Protocol arms side by side" in html
    assert b"JUSTIFICATION" in html
