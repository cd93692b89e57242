"""Publishing on a platform: a campaign starting, pausing, stopping; stages published;
hand-off HITs published in batches on paid platforms."""

from __future__ import annotations

import logging
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Min, Sum
from django.utils import timezone

from campaigns.design.platform import platform_for
from campaigns.design.platform_rules import RequirementRefused
from campaigns.design.services import campaign_transition
from campaigns.models import (
    HIT,
    Campaign,
    CampaignState,
    HITStatus,
    ItemStatus,
    OperationState,
    ProviderOperation,
    Stage,
)
from campaigns.platforms.operations import PUBLISH_KINDS
from campaigns.work.selectors.access import WORKABLE_STATES
from campaigns.workforce.requirements import stage_requirements
from qaportal.errors import DomainError

logger = logging.getLogger(__name__)


def campaign_start(*, campaign: Campaign, to_state: str, test_study: bool = False) -> Campaign:
    """Move ``campaign`` to ``to_state``; entering pilot/live publishes its pending work.

    ``test_study`` (into pilot, on a platform with test participants): the pending work
    goes to the platform's test participants only, at no cost (Prolific's test study).

    The platform follows the new state (``Platform.campaign_follow``: Prolific
    studies paused, resumed, stopped; MTurk HITs expired or re-opened) and publishes
    each stage with pending items (``Platform.stage_publish``: local HITs open at
    once; a paid platform checks the budget and asks for an operation). The
    transition locks the campaign row (``campaign_transition``); publishing happens
    in the same transaction, so a refusal (budget) leaves the campaign where it was.
    """
    if test_study and (
        to_state != CampaignState.PILOT or not platform_for(campaign).rules().test_participants
    ):
        raise DomainError(
            "A test study is published into the pilot, on a platform with test participants.",
            errors={"test_study": [f"{campaign.provider} → {to_state}"]},
        )
    with transaction.atomic():
        previous = (
            Campaign.objects.select_for_update().values_list("state", flat=True).get(pk=campaign.pk)
        )
        campaign = campaign_transition(campaign=campaign, to_state=to_state)
        platform = platform_for(campaign)
        platform.campaign_follow(campaign=campaign, previous=previous, to_state=to_state)
        if to_state in WORKABLE_STATES:
            # Every stage, fed ones too: a hand-off must not meet a refusal later.
            campaign_rules_check(campaign=campaign)
            pending = campaign.stages.filter(items__status=ItemStatus.PENDING).distinct()
            for stage in pending.order_by("position"):
                platform.stage_publish(stage=stage, test=test_study)
    return campaign


def campaign_rules_problems(*, campaign: Campaign) -> dict[str, str]:
    """Stage name -> why its platform would refuse it (a requirement it cannot express,
    a reward under its minimum hourly rate), for every stage; {} when none. Reads only."""
    problems = {}
    for stage in campaign.stages.order_by("position"):
        try:
            stage_rules_check(stage=stage)
        except DomainError as exc:
            problems[stage.name] = str(exc)
    return problems


def campaign_rules_check(*, campaign: Campaign) -> None:
    """Refuse (``DomainError``) a campaign any of whose stages its platform would refuse,
    naming every such stage (``campaign_rules_problems``)."""
    problems = campaign_rules_problems(campaign=campaign)
    if problems:
        names = ", ".join(f"“{n}”" for n in problems)
        raise DomainError(
            f"{len(problems)} stage(s) do not meet the platform's rules: {names}. "
            + " ".join(problems.values()),
            errors={"stages": list(problems)},
        )


def stage_rules_check(*, stage: Stage) -> None:
    """Refuse (``DomainError``, a 4xx) what the stage's platform would refuse or silently
    change: a requirement it cannot express, a reward under its minimum hourly rate.
    Reads only."""
    rules = platform_for(stage.campaign).rules()
    try:
        rules.requirements_check(stage_requirements(stage=stage))
    except RequirementRefused as exc:
        raise DomainError(
            f"Stage “{stage.name}”: {exc}",
            errors={"qualification_requirements": [str(exc.requirement)]},
        ) from exc
    pay = rules.pay_check(
        reward=Decimal(stage.reward),
        currency=stage.campaign.currency,
        config=stage.config,
        assignment_duration=stage.assignment_duration,
    )
    if pay.problem:
        raise DomainError(f"Stage “{stage.name}”: {pay.problem}", errors={"reward": [pay.problem]})


def stage_provider_publish(
    *, stage: Stage, allow_partial: bool = True, test: bool = False
) -> ProviderOperation | None:
    """Publish the stage's pending items on its paid platform (``Platform.stage_publish``:
    a Prolific study, MTurk HITs); the operation asked for, None if nothing is pending."""
    platform = platform_for(stage.campaign)
    if platform.hits_open_when_made:
        raise DomainError("stage_provider_publish handles campaigns on paid platforms.")
    return platform.stage_publish(stage=stage, allow_partial=allow_partial, test=test)


def hits_being_published(*, stage: Stage) -> set[int]:
    """HITs of ``stage`` in a publish operation that has not ended (a Prolific study,
    MTurk HITs): they wait for it, and must not be published a second time."""
    payloads = ProviderOperation.objects.filter(
        kind__in=PUBLISH_KINDS,
        payload__stage_id=stage.pk,
        state__in=[OperationState.PENDING, OperationState.RUNNING],
    ).values_list("payload__hit_ids", flat=True)
    return {int(h) for ids in payloads for h in (ids or [])}


def publish_key(
    *, provider: str, stage: Stage, hit_ids: list[int]
) -> tuple[ProviderOperation | None, str]:
    """(the live publish operation for these HITs, or None; the key for a new one).

    Key ``publish:stage:<id>:hits:<first>-<last>:<count>``: the same HITs are published
    once; after a failed attempt, the next request gets ``…:retry<n>``."""
    base = f"publish:stage:{stage.pk}:hits:{hit_ids[0]}-{hit_ids[-1]}:{len(hit_ids)}"
    earlier = ProviderOperation.objects.filter(provider=provider, idempotency_key__startswith=base)
    live = earlier.exclude(state=OperationState.FAILED).first()
    if live is not None:
        return live, base
    return None, base if not earlier.exists() else f"{base}:retry{earlier.count()}"


def paid_handoff_publish(*, stage: Stage, force: bool = False) -> ProviderOperation | None:
    """Publish the HITs a hand-off put into ``stage`` on its paid platform, in batches.

    Hand-off items arrive one approval at a time; a study per approval would scatter
    the work over many tiny studies. So the pending HITs of a fed stage are published
    together once they hold ``PAID_HANDOFF_BATCH_PLACES`` places, or the oldest has
    waited ``PAID_HANDOFF_MAX_WAIT_SECONDS``, or ``force`` (the source stage is drained:
    nothing more will come). Called after each hand-off and by beat
    (``handoff_flush``). Idempotent through ``stage_provider_publish``'s key.
    """
    campaign = stage.campaign
    if platform_for(campaign).hits_open_when_made or campaign.state not in WORKABLE_STATES:
        return None
    waiting = HIT.objects.filter(
        stage=stage, status=HITStatus.PENDING, provider_hit_id__isnull=True
    ).exclude(pk__in=hits_being_published(stage=stage))
    summary = waiting.aggregate(places=Sum("max_assignments"), oldest=Min("created_at"))
    if not summary["places"]:
        return None
    max_wait = timedelta(seconds=int(getattr(settings, "PAID_HANDOFF_MAX_WAIT_SECONDS", 900)))
    due = (
        force
        or summary["places"] >= int(getattr(settings, "PAID_HANDOFF_BATCH_PLACES", 50))
        or summary["oldest"] <= timezone.now() - max_wait
    )
    if not due:
        return None
    try:
        return stage_provider_publish(stage=stage, allow_partial=force)
    except DomainError as exc:  # the stage was changed to break a platform rule: HITs wait
        logger.warning("hand-off publication of stage %s refused: %s", stage.pk, exc)
        return None


def stage_publish_added(*, stage: Stage, campaign: Campaign, **_: object) -> None:
    """Publish the items just added to ``stage`` when its campaign (the announcer's
    locked row) is in pilot or live and the stage publishes added items
    (``Stage.publish_added``, the default); subscribed to ``items_added``.

    Runs inside the upload's transaction, in a savepoint: a refusal (the budget cap, a
    platform rule) leaves the items stored and waiting, logged, for the stage card's
    Publish to say why. Nothing is lost either way."""
    if campaign.state not in WORKABLE_STATES or not stage.publish_added:
        return
    try:
        with transaction.atomic():
            stage_rules_check(stage=stage)
            platform_for(campaign).stage_publish(stage=stage)
    except DomainError as exc:
        logger.warning("stage %s: added items wait, not published: %s", stage.pk, exc)


def stage_publish_waiting(*, stage: Stage) -> int:
    """Publish the stage's waiting (pending) items now (the stage card's Publish); the
    HITs made (0 on a paid platform: its operation makes them). ``DomainError`` when the
    campaign is not in pilot or live, or the platform refuses (budget, rules)."""
    campaign = stage.campaign
    if campaign.state not in WORKABLE_STATES:
        raise DomainError(
            f"The campaign is {campaign.get_state_display().lower()}: stages are published "
            "in pilot or live, and starting the pilot publishes every waiting item.",
            errors={"state": [campaign.state]},
        )
    with transaction.atomic():
        stage_rules_check(stage=stage)
        made = platform_for(campaign).stage_publish(stage=stage)
    return made if isinstance(made, int) else 0
