"""Invite links and grants: signed, expiring, revocable, limited; logged-in annotators."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import signing
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from campaigns.models import CampaignWorker, InviteLink, Worker
from campaigns.work.allocation import NoWorkAvailableError, WorkerNotAllowedError, assignment_accept
from campaigns.work.invites import (
    InviteInvalidError,
    invite_create,
    invite_quiz_retake_warning,
    invite_redeem,
    invite_revoke,
    invite_token,
    invite_url,
    local_grant_add,
    local_grant_remove,
)
from campaigns.work.publishing import stage_publish
from campaigns.work.selectors.access import worker_has_stage_access
from campaigns.work.submission import assignment_submit
from qaportal.errors import DomainError
from tests.factories import CampaignFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def stage(make_stage):
    return make_stage(items=1)


def _invite(stage, **kwargs):
    kwargs.setdefault("expires_in", timedelta(days=3))
    return invite_create(campaign=stage.campaign, created_by=stage.campaign.owner, **kwargs)


def _invite_to(stage):
    return invite_create(
        campaign=stage.campaign,
        stage=stage,
        created_by=stage.campaign.owner,
        expires_in=timedelta(days=1),
    )


def test_invite_url_uses_site_url(stage):
    link = _invite(stage)
    url = invite_url(invite=link)
    assert url.startswith("https://qa.example.org/work/i/")
    assert url.endswith(f"{invite_token(invite=link)}/")


def test_redeem_creates_a_local_worker_in_the_campaign(stage):
    link = _invite(stage)
    found, worker = invite_redeem(token=invite_token(invite=link))
    assert found == link
    assert worker.provider == "local"
    assert worker.external_id.startswith(f"invite:{link.pk}:")
    assert CampaignWorker.objects.filter(campaign=stage.campaign, worker=worker).exists()
    assert worker_has_stage_access(worker=worker, stage=stage)
    link.refresh_from_db()
    assert link.use_count == 1


def test_redeem_resumes_the_sessions_worker(stage):
    token = invite_token(invite=_invite(stage, max_uses=1))
    _, worker = invite_redeem(token=token)
    _, again = invite_redeem(token=token, known_worker_ids=[worker.pk])
    assert again == worker
    assert Worker.objects.filter(external_id__startswith="invite:").count() == 1


def test_max_uses(stage):
    token = invite_token(invite=_invite(stage, max_uses=2))
    invite_redeem(token=token)
    invite_redeem(token=token)
    with pytest.raises(InviteInvalidError, match="used as often"):
        invite_redeem(token=token)


@pytest.mark.parametrize(
    "tamper",
    [
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),
        lambda t: signing.dumps(999, salt="campaigns.invite", key="guessed-key"),
        lambda t: signing.dumps(1, salt="another-salt"),
        lambda t: "garbage",
    ],
)
def test_tampered_token_rejected(stage, tamper):
    token = invite_token(invite=_invite(stage))
    with pytest.raises(InviteInvalidError, match="not valid"):
        invite_redeem(token=tamper(token))


def test_other_invite_id_with_a_forged_signature_rejected(stage):
    mine = _invite(stage)
    token = invite_token(invite=mine)
    _payload, _, signature = token.rpartition(":")
    other = _invite(stage)
    forged = invite_token(invite=other).rpartition(":")[0] + ":" + signature
    assert forged != token
    with pytest.raises(InviteInvalidError):
        invite_redeem(token=forged)


def test_expired_invite_rejected(stage):
    link = _invite(stage)
    InviteLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(InviteInvalidError, match="expired"):
        invite_redeem(token=invite_token(invite=link))


def test_revoked_invite_rejected_and_cuts_off_its_workers(stage):
    link = _invite(stage)
    _, worker = invite_redeem(token=invite_token(invite=link))
    invite_revoke(invite=link)
    first_revocation = link.revoked_at
    invite_revoke(invite=link)
    assert link.revoked_at == first_revocation
    with pytest.raises(InviteInvalidError, match="withdrawn"):
        invite_redeem(token=invite_token(invite=link), known_worker_ids=[worker.pk])
    assert not worker_has_stage_access(worker=worker, stage=stage)


def test_invite_to_one_stage_covers_that_stage_only(stage, make_stage):
    other = make_stage(campaign=stage.campaign, position=1, items=1)
    _, worker = invite_redeem(token=invite_token(invite=_invite_to(other)))
    assert worker_has_stage_access(worker=worker, stage=other)
    assert not worker_has_stage_access(worker=worker, stage=stage)


def test_invites_are_for_local_campaigns(user_factory):
    campaign = CampaignFactory.create(provider="mturk")
    with pytest.raises(DomainError, match="local workforce"):
        invite_create(campaign=campaign, created_by=campaign.owner, expires_in=timedelta(days=1))


def test_invite_lifetime_checked(stage):
    with pytest.raises(DomainError):
        _invite(stage, expires_in=timedelta(0))


def test_grant_to_a_logged_in_user(stage, user_factory):
    annotator = user_factory(username="annotator")
    local_grant_add(campaign=stage.campaign, user=annotator, granted_by=stage.campaign.owner)
    local_grant_add(campaign=stage.campaign, user=annotator)  # idempotent
    worker = Worker.objects.get(user=annotator)
    assert worker.provider == "local"
    assert worker.external_id == f"user:{annotator.pk}"
    assert worker_has_stage_access(worker=worker, stage=stage)

    assert local_grant_remove(campaign=stage.campaign, user=annotator)
    assert not local_grant_remove(campaign=stage.campaign, user=annotator)
    assert not worker_has_stage_access(worker=worker, stage=stage)


def test_an_unlimited_link_to_quiz_gated_work_warns_of_retakes(stage, make_stage):
    gated = make_stage(campaign=stage.campaign, position=1, items=1)
    gated.qualification_requirements = [{"quiz_stage": stage.pk}]
    gated.save(update_fields=["qualification_requirements"])
    assert "retake" in (invite_quiz_retake_warning(invite=_invite(stage)) or "")
    assert "retake" in (invite_quiz_retake_warning(invite=_invite_to(gated)) or "")
    # One use per person, or a link to work no quiz gates: nothing to warn of.
    assert invite_quiz_retake_warning(invite=_invite(stage, max_uses=1)) is None
    assert invite_quiz_retake_warning(invite=_invite_to(stage)) is None


def test_the_api_says_so_when_it_makes_such_a_link(stage, make_stage):
    gated = make_stage(campaign=stage.campaign, position=1, items=1)
    gated.qualification_requirements = [{"quiz_stage": stage.pk}]
    gated.save(update_fields=["qualification_requirements"])
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=stage.campaign.owner)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    url = f"/api/v1/campaigns/{stage.campaign.slug}/invites/"
    unlimited = client.post(url, {"stage": None}, format="json")
    assert unlimited.status_code == 201, unlimited.content
    assert "retake" in unlimited.json()["warnings"][0]
    limited = client.post(url, {"stage": None, "max_uses": 1}, format="json")
    assert "warnings" not in limited.json()


def test_a_task_accepted_before_the_link_was_revoked_can_still_be_handed_in(stage):
    """Decided: revoking stops new tasks at once, but work a worker accepted while the
    link was valid is theirs to finish until its deadline (docs/worker-pages.md)."""
    link = _invite(stage)
    _, worker = invite_redeem(token=invite_token(invite=link))
    stage_publish(stage=stage)
    assignment = assignment_accept(stage=stage, worker=worker)
    invite_revoke(invite=link)
    form = {f"items/{n}/text": "careful words" for n in range(stage.items_per_hit)}
    result = assignment_submit(
        assignment_id=assignment.pk, worker=worker, form=form, telemetry=None
    )
    assert result.stored, result.errors
    with pytest.raises((NoWorkAvailableError, WorkerNotAllowedError)):
        assignment_accept(stage=stage, worker=worker)
