"""The local workforce's way in: signed invite links and grants to logged-in users.

An invite URL carries ``signing.dumps(invite id)``: the signature proves qaportal
made the link, the ``InviteLink`` row says whether it still admits anyone
(expiry, revocation, maximum uses). Following a link makes a fresh local worker
``invite:<invite id>:<random>``; a browser that already joined resumes its worker.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core import signing
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from campaigns.design.platform import platform_for
from campaigns.models import (
    Campaign,
    InviteLink,
    InviteRedemption,
    LocalGrant,
    Provider,
    Stage,
    Worker,
)
from campaigns.workforce.arms import campaign_worker_join
from qaportal.errors import DomainError

INVITE_SALT = "campaigns.invite"
MAX_INVITE_LIFETIME = timedelta(days=365)


class InviteInvalidError(DomainError):
    """An invite token that does not admit anyone (forged, expired, revoked, used up)."""

    code = "invite_invalid"


def _check_local(campaign: Campaign) -> None:
    if not platform_for(campaign).hosts_workforce:
        raise DomainError(
            f"Campaign {campaign.slug!r} runs on {campaign.provider!r}; invite links and "
            "grants are for the local workforce only.",
            errors={"provider": [campaign.provider]},
        )


def invite_token(*, invite: InviteLink) -> str:
    """The signed token of ``invite``; it names the row and nothing else.

    No timestamp in it: expiry and revocation live on the row, so an invite's
    link stays the same every time the requester looks at it.
    """
    return signing.Signer(salt=INVITE_SALT).sign_object(invite.pk)


def invite_url(*, invite: InviteLink) -> str:
    """The absolute URL to send to workers (``settings.SITE_URL`` + the landing page)."""
    path = reverse("worker:invite", kwargs={"token": invite_token(invite=invite)})
    return settings.SITE_URL.rstrip("/") + path


def invite_create(
    *,
    campaign: Campaign,
    stage: Stage | None = None,
    created_by: AbstractBaseUser,
    expires_in: timedelta,
    max_uses: int | None = None,
) -> InviteLink:
    """Create an invite link to ``campaign`` (or one of its stages), valid for ``expires_in``."""
    _check_local(campaign)
    if stage is not None and stage.campaign_id != campaign.pk:
        raise DomainError(
            "The stage belongs to another campaign.", errors={"stage": ["other campaign"]}
        )
    if not timedelta(0) < expires_in <= MAX_INVITE_LIFETIME:
        raise DomainError(
            "An invite link lives from a second up to a year.", errors={"expires_in": ["range"]}
        )
    if max_uses is not None and max_uses < 1:
        raise DomainError("max_uses must be at least 1.", errors={"max_uses": ["must be >= 1"]})
    return InviteLink.objects.create(
        campaign=campaign,
        stage=stage,
        created_by_id=created_by.pk,
        expires_at=timezone.now() + expires_in,
        max_uses=max_uses,
    )


def invite_revoke(*, invite: InviteLink) -> InviteLink:
    """Stop ``invite`` admitting workers; those who joined through it lose access too.

    Idempotent: revoking twice keeps the first revocation time. Locks the invite row.
    """
    with transaction.atomic():
        locked = InviteLink.objects.select_for_update().get(pk=invite.pk)
        if locked.revoked_at is None:
            locked.revoked_at = timezone.now()
            locked.save(update_fields=["revoked_at"])
    invite.refresh_from_db()
    return invite


def invite_check(*, token: str) -> InviteLink:
    """The invite named by ``token`` if it still admits workers; ``InviteInvalidError`` if not.

    A read: takes no lock. ``invite_redeem`` checks again under the lock.
    """
    try:
        invite_id = signing.Signer(salt=INVITE_SALT).unsign_object(token)
    except signing.BadSignature:
        raise InviteInvalidError(
            "This invite link is not valid: check that it was copied whole."
        ) from None
    invite = (
        InviteLink.objects.select_related("campaign", "stage").filter(pk=invite_id).first()
        if isinstance(invite_id, int)
        else None
    )
    if invite is None:
        raise InviteInvalidError("This invite link is not valid.")
    _check_usable(invite)
    return invite


def _check_usable(invite: InviteLink) -> None:
    if invite.revoked_at is not None:
        raise InviteInvalidError("This invite link was withdrawn by the requester.")
    if invite.expires_at <= timezone.now():
        raise InviteInvalidError("This invite link has expired; ask the requester for a new one.")


def invite_redeem(*, token: str, known_worker_ids: Iterable[int] = ()) -> tuple[InviteLink, Worker]:
    """Follow an invite link: the browser's worker for it, created on first use.

    ``known_worker_ids`` are the local workers this browser's session already
    holds; if one of them joined through this invite it is resumed and no use is
    counted. Otherwise a new worker ``invite:<id>:<random>`` joins the campaign.
    Locks the invite row, so ``max_uses`` holds under concurrent redemptions.
    """
    invite = invite_check(token=token)
    with transaction.atomic():
        invite = (
            InviteLink.objects.select_for_update(of=("self",))
            .select_related("campaign", "stage")
            .get(pk=invite.pk)
        )
        _check_usable(invite)
        resumed = Worker.objects.filter(
            pk__in=list(known_worker_ids), invite_redemption__invite=invite
        ).first()
        if resumed is not None:
            return invite, resumed
        if invite.max_uses is not None and invite.use_count >= invite.max_uses:
            raise InviteInvalidError(
                "This invite link has been used as often as the requester allowed."
            )
        worker = Worker.objects.create(
            provider=Provider.LOCAL,
            external_id=f"invite:{invite.pk}:{secrets.token_urlsafe(12)}",
        )
        InviteRedemption.objects.create(invite=invite, worker=worker)
        campaign_worker_join(campaign=invite.campaign, worker=worker)
        invite.use_count += 1
        invite.save(update_fields=["use_count"])
    return invite, worker


def local_worker_for_user(*, user: AbstractBaseUser) -> Worker:
    """The local worker of a qaportal account (``user:<pk>``), created on first need."""
    worker, _ = Worker.objects.get_or_create(
        provider=Provider.LOCAL, external_id=f"user:{user.pk}", defaults={"user_id": user.pk}
    )
    return worker


def local_grant_add(
    *, campaign: Campaign, user: AbstractBaseUser, granted_by: AbstractBaseUser | None = None
) -> LocalGrant:
    """Let ``user`` work on ``campaign`` when logged in. Idempotent."""
    _check_local(campaign)
    with transaction.atomic():
        grant, _ = LocalGrant.objects.get_or_create(
            campaign=campaign,
            user_id=user.pk,
            defaults={"granted_by_id": granted_by.pk if granted_by else None},
        )
        worker = local_worker_for_user(user=user)
        campaign_worker_join(campaign=campaign, worker=worker)
    return grant


def local_grant_remove(*, campaign: Campaign, user: AbstractBaseUser) -> bool:
    """Withdraw ``user``'s access to ``campaign``; their past work stays. True if removed."""
    deleted, _ = LocalGrant.objects.filter(campaign=campaign, user_id=user.pk).delete()
    return deleted > 0


QUIZ_REQUIREMENT_KEYS = ("quiz_stage",)


def invite_quiz_retake_warning(*, invite: InviteLink) -> str | None:
    """What an invite link without ``max_uses`` to quiz-gated work lets a worker do, or
    None. On the local workforce a person is their browser: one who failed the quiz
    can join again in a fresh browser, as a new worker, and retake it. Nothing here can
    tell them apart; a use limit (one per person) or named accounts (grants) can."""
    if invite.max_uses is not None:
        return None
    stages = [invite.stage] if invite.stage is not None else list(invite.campaign.stages.all())
    gated = any(
        isinstance(req, dict) and any(req.get(k) is not None for k in QUIZ_REQUIREMENT_KEYS)
        for stage in stages
        for req in (stage.qualification_requirements or [])
    )
    if not gated:
        return None
    return (
        "This link has no maximum number of uses and leads to work gated by a quiz: a "
        "worker who fails the quiz can join again in a fresh browser and retake it. Give "
        "each person a link with one use, or grant named accounts, to hold them to one "
        "quiz."
    )
