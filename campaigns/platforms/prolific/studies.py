"""Paid providers and qaportal's own records: publishing stages, allocating platform
sessions to assignments, and syncing submissions back.

- ``stage_provider_publish``: a stage's pending HITs become one Prolific study,
  asked for as a ``create_study`` operation (budget checked first).
- ``prolific_assignment_accept``: a participant arriving from a study (PID, study,
  session) gets an assignment; the session id (Prolific's submission id) becomes
  its ``provider_assignment_id``.
- ``prolific_studies_sync``: reads each study's submissions and records, per
  assignment, what Prolific says (status, times, code) and whether the participant
  matches the worker who submitted on our page (``review_details["identity"]``).
  Identity from the URL is a claim; only ``confirmed`` assignments are ever paid.
  Stages with ``{"rule": "auto_approve"}`` then approve what Prolific confirmed.
- ``campaign_provider_pause`` / ``_resume`` / ``_stop``: the campaign's studies
  follow the campaign (Prolific study transitions PAUSE / START / STOP).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from datetime import timedelta
from decimal import Decimal
from typing import Any, cast

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from campaigns.design.platform_rules import estimated_minutes
from campaigns.design.stage_rules import stage_auto_approves
from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    CampaignState,
    HITStatus,
    OperationKind,
    OperationState,
    Provider,
    ProviderOperation,
    QualificationType,
    Stage,
    Worker,
)
from campaigns.platforms import fee_model_for, provider_for
from campaigns.platforms.base import ProviderError, SubmissionRecord
from campaigns.platforms.operations import operation_request
from campaigns.platforms.prolific.provider import (
    ProlificProvider,
    maximum_allowed_minutes,
    short_id,
    study_body,
    study_filters,
)
from campaigns.platforms.publishing import hits_being_published, publish_key, stage_rules_check
from campaigns.platforms.review import (
    assignments_not_rejecting,
    campaign_budget_check,
    paid_assignments_approve,
    submission_identity,
)
from campaigns.platforms.workers import block_group_name, qualification_group_name
from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.instructions import stage_instructions
from campaigns.work.allocation import (
    NoWorkAvailableError,
    WorkerNotAllowedError,
    hit_take_allowed,
)
from campaigns.work.publishing import stage_publish
from campaigns.work.selectors.access import WORKABLE_STATES
from campaigns.work.submission import STORED_STATES
from campaigns.workforce.requirements import stage_requirements
from qaportal.errors import DomainError

logger = logging.getLogger(__name__)


# --- Publishing --------------------------------------------------------------------------


def _allow_groups(stage: Stage) -> tuple[list[str], dict[str, str]]:
    """The participant groups of the stage's qualification requirements: the ids of those
    Prolific has, and ``{qualification type id: group name}`` of those it has not yet
    (nobody granted yet): the publish operation makes them (empty) before the study, so
    the study opens to no one until the qualification is granted."""
    ids = [r.get("qualification_type_id") for r in stage_requirements(stage=stage)]
    wanted = [int(i) for i in ids if i is not None]
    if not wanted:
        return [], {}
    groups = dict(
        QualificationType.objects.filter(pk__in=wanted).values_list(
            "pk", "provider_qualification_id"
        )
    )
    to_make = {str(i): qualification_group_name(i) for i in wanted if not groups.get(i)}
    return [str(groups[i]) for i in wanted if groups.get(i)], to_make


def _block_groups(owner_id: int) -> list[str]:
    done = ProviderOperation.objects.filter(
        provider=Provider.PROLIFIC,
        kind=OperationKind.BLOCK,
        state=OperationState.DONE,
        payload__group_name=block_group_name(owner_id),
    ).values_list("result", flat=True)
    return sorted({str(r["group_id"]) for r in done if r and r.get("group_id")})


def _catalogue_for(
    *, campaign: Campaign, requirements: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """Prolific's filters catalogue when a requirement needs it (a country), else None.
    A cached read, or one call to ``get-filters`` (cached for the next stages)."""
    if not any(r.get("kind") in ("locale", "country") for r in requirements):
        return None
    try:
        provider = cast(ProlificProvider, provider_for(Provider.PROLIFIC, campaign_id=campaign.pk))
        catalogue = provider.filters()
    except ProviderError as exc:
        raise DomainError(
            f"Prolific's filters catalogue could not be read, so the countries cannot be "
            f"sent: {exc}",
            errors={"qualification_requirements": [str(exc)]},
        ) from exc
    return catalogue


def prolific_filters_refresh(*, campaign: Campaign | None = None) -> dict[str, Any]:
    """Read Prolific's filters catalogue again (the cache is replaced); the catalogue."""
    provider = cast(
        ProlificProvider,
        provider_for(Provider.PROLIFIC, campaign_id=campaign.pk if campaign is not None else None),
    )
    return provider.filters(refresh=True)


def _running_study(*, stage: Stage) -> ProviderOperation | None:
    """The create operation of the stage's study (created by qaportal, not a test study):
    new HITs of the stage become more places on it, whatever its state: a study that
    finished or was stopped is reactivated by the places (update-study), so a stage
    keeps one study rather than many small ones, which Prolific's rate limit targets."""
    ops = ProviderOperation.objects.filter(
        provider=Provider.PROLIFIC,
        kind=OperationKind.CREATE_STUDY,
        state=OperationState.DONE,
        payload__stage_id=stage.pk,
    ).order_by("-pk")
    for op in ops:
        result = op.result or {}
        if result.get("study_id") and not result.get("test") and not (op.payload or {}).get("test"):
            return op
    return None


def prolific_stage_publish(
    *, stage: Stage, allow_partial: bool = True, test: bool = False
) -> ProviderOperation | None:
    """Publish the stage's pending items on Prolific, in the stage's study.

    Puts pending items into HITs (``stage_publish``, which leaves paid HITs pending),
    checks the stage against the platform's rules (``stage_rules_check``) and the budget
    for every place, and asks for a ``create_study`` operation keyed
    ``publish:stage:<id>:hits:<first>-<last>:<count>`` (the same HITs are published once;
    after a failed attempt, the next request gets a new key). When the stage already
    has a study, running or finished, the operation raises that study's places instead
    of creating another (``grow_study_id``: one study per stage, reactivated when it had
    finished; Prolific rate-limits many small studies), with that study's completion
    codes. ``test`` (pilot only): the study is published to the
    workspace's test participants (Prolific's test study), which costs no credits.
    The HITs become ``published`` when the operation is done. None if nothing is pending.
    """
    campaign = stage.campaign
    if test and campaign.state != CampaignState.PILOT:
        raise DomainError(
            "A test study is for the pilot: move the campaign back to pilot first.",
            errors={"state": [campaign.state]},
        )
    stage_rules_check(stage=stage)
    requirements = stage_requirements(stage=stage)
    catalogue = _catalogue_for(campaign=campaign, requirements=requirements)
    stage_publish(stage=stage, allow_partial=allow_partial)
    with transaction.atomic():
        stage = Stage.objects.select_for_update().select_related("campaign").get(pk=stage.pk)
        campaign = stage.campaign
        hits = [
            h
            for h in HIT.objects.filter(
                stage=stage, status=HITStatus.PENDING, provider_hit_id__isnull=True
            ).order_by("pk")
            if h.pk not in hits_being_published(stage=stage)
        ]
        if not hits:
            return None
        hit_ids = [h.pk for h in hits]
        live, key = publish_key(provider=campaign.provider, stage=stage, hit_ids=hit_ids)
        if live is not None:
            return live
        places = sum(h.max_assignments for h in hits)
        if not test:
            fee = fee_model_for(campaign.provider).assignment_fee(
                reward=stage.reward, max_assignments=stage.assignments_per_hit
            )
            campaign_budget_check(
                campaign=campaign,
                extra=(stage.reward + fee) * places,
                what="Publishing this stage",
            )
        running = None if test else _running_study(stage=stage)
        if running is not None:
            codes = dict(running.payload.get("codes", {}))
        else:
            codes = {
                "completed": secrets.token_hex(4).upper(),
                "failed_check": secrets.token_hex(4).upper(),
                "screened_out": secrets.token_hex(4).upper(),
            }
        config = stage.config or {}
        allow_groups, groups_to_make = _allow_groups(stage)
        body = study_body(
            key=key,
            name=f"{campaign.name}: {stage.name}",
            description=stage_instructions(stage),
            stage_id=stage.pk,
            places=places,
            reward=Decimal(stage.reward),
            duration_minutes=max(1, int(stage.assignment_duration.total_seconds() // 60)),
            estimated_minutes=estimated_minutes(
                config=config, assignment_duration=stage.assignment_duration
            ),
            codes=codes,
            filters=study_filters(
                requirements,
                allow_groups=allow_groups,
                block_groups=_block_groups(campaign.owner_id),
                catalogue=catalogue,
            ),
            site_url=getattr(settings, "SITE_URL", "http://127.0.0.1:8000"),
            max_per_participant=_max_per_participant(config),
        )
        payload: dict[str, Any] = {
            "stage_id": stage.pk,
            "hit_ids": hit_ids,
            "codes": codes,
            "study": body,
        }
        if groups_to_make:
            payload["allow_groups_to_make"] = groups_to_make
        if running is not None:
            payload["grow_study_id"] = (running.result or {})["study_id"]
        if test:
            payload["test"] = True
        op, _ = operation_request(
            provider=campaign.provider,
            kind=OperationKind.CREATE_STUDY,
            key=key,
            payload=payload,
            campaign=campaign,
        )
    return op


def _max_per_participant(config: Mapping[str, Any]) -> int:
    raw = config.get("max_tasks_per_participant", 1)
    try:
        return max(1, int(raw)) if not isinstance(raw, bool) else 1
    except (TypeError, ValueError):
        return 1


def prolific_study_codes(*, study_id: str) -> dict[str, str] | None:
    """The completion codes of a study qaportal created (from its create operation)."""
    op = (
        ProviderOperation.objects.filter(
            provider=Provider.PROLIFIC, kind=OperationKind.CREATE_STUDY, result__study_id=study_id
        )
        .only("payload")
        .first()
    )
    return dict(op.payload.get("codes", {})) if op is not None else None


def prolific_study_of_submission(*, submission_id: str) -> str | None:
    """The study of the assignment whose Prolific session is ``submission_id`` (a hook's
    ``resource_id`` for submission events); None when qaportal has no such session."""
    return (
        Assignment.objects.filter(provider=Provider.PROLIFIC, provider_assignment_id=submission_id)
        .values_list("hit__provider_group_id", flat=True)
        .first()
    )


def prolific_study_stage(*, study_id: str, stage_id: int | None = None) -> Stage | None:
    """The stage whose HITs make up study ``study_id`` (``stage_id`` from the URL, checked)."""
    hits = HIT.objects.filter(provider=Provider.PROLIFIC, provider_group_id=study_id)
    if stage_id is not None:
        hits = hits.filter(stage_id=stage_id)
    hit = hits.select_related("stage__campaign").first()
    if hit is None or hit.stage.campaign.provider != Provider.PROLIFIC:
        return None
    return hit.stage


def prolific_participant(*, pid: str) -> Worker:
    """The worker a Prolific participant id stands for (made on first contact)."""
    worker, _ = Worker.objects.get_or_create(provider=Provider.PROLIFIC, external_id=pid)
    return worker


def prolific_assignment_of(*, assignment_id: int, worker_id: int) -> Assignment | None:
    """Prolific assignment ``assignment_id`` if it is worker ``worker_id``'s."""
    return (
        Assignment.objects.filter(pk=assignment_id, worker_id=worker_id, provider=Provider.PROLIFIC)
        .select_related("hit__stage__campaign")
        .first()
    )


def prolific_time_allowed(*, stage: Stage) -> timedelta:
    """The time a participant has for one of the stage's tasks: the study's
    ``maximum_allowed_time`` (at least Prolific's least for the estimate, which can be
    longer than the stage's ``assignment_duration``), so qaportal never expires an
    assignment Prolific still lets the participant finish."""
    duration = max(1, int(stage.assignment_duration.total_seconds() // 60))
    estimate = estimated_minutes(config=stage.config, assignment_duration=stage.assignment_duration)
    return timedelta(minutes=maximum_allowed_minutes(estimated=estimate, wanted=duration))


# --- Allocation -----------------------------------------------------------------------


def prolific_assignment_accept(
    *, stage: Stage, worker: Worker, study_id: str, session_id: str
) -> Assignment:
    """Give the participant of Prolific session ``session_id`` a place on the study's HITs.

    Returns the assignment already made for this session (a reload, a second tab).
    A session id held by another worker is refused: URL parameters are claims, and
    one Prolific submission belongs to one participant. Honours blocks, exclusive keys
    and the campaign state as ``assignment_accept`` does; allocation is restricted
    to the HITs of this study.

    Locking: the worker row, then one HIT row (``hit_take_allowed``), as
    ``assignment_accept``.
    """
    if worker.provider != Provider.PROLIFIC:
        raise WorkerNotAllowedError("Not a Prolific participant.")
    now = timezone.now()
    with transaction.atomic():
        Worker.objects.select_for_update().get(pk=worker.pk)
        existing = (
            Assignment.objects.filter(provider=Provider.PROLIFIC, provider_assignment_id=session_id)
            .select_related("hit")
            .first()
        )
        if existing is not None:
            if existing.worker_id != worker.pk or existing.hit.provider_group_id != study_id:
                raise WorkerNotAllowedError("This Prolific session belongs to someone else.")
            return existing
        campaign = stage.campaign
        if campaign.state not in WORKABLE_STATES:
            raise NoWorkAvailableError("This campaign is not taking work at the moment.")
        if worker.blocks.filter(requester_id=campaign.owner_id, lifted_at__isnull=True).exists():
            raise WorkerNotAllowedError("You can no longer take tasks from this requester.")
        task_type = task_type_get(stage.task_type)
        taken = hit_take_allowed(stage=stage, worker=worker, task_type=task_type, now=now)
        if taken is None:
            raise NoWorkAvailableError("There is no task left in this study. Thank you!")
        hit_id, provider = taken
        try:
            with transaction.atomic():
                assignment = Assignment.objects.create(
                    hit_id=hit_id,
                    worker_id=worker.pk,
                    provider=provider,
                    provider_assignment_id=session_id,
                    status=AssignmentStatus.ACCEPTED,
                    accepted_at=now,
                    deadline=now + prolific_time_allowed(stage=stage),
                )
        except IntegrityError:
            raise WorkerNotAllowedError("This Prolific session is already in use.") from None
    logger.info(
        "prolific: participant %s took assignment %s (study %s)",
        short_id(worker.external_id),
        assignment.pk,
        study_id,
    )
    return assignment


# --- Sync -------------------------------------------------------------------------------


def _identity(assignment: Assignment, record: SubmissionRecord | None) -> dict[str, Any]:
    return submission_identity(
        assignment=assignment,
        platform_worker_id=record.participant_id if record is not None else None,
        missing="Prolific has no submission for this session.",
        other="The Prolific submission belongs to another participant.",
    )


def submissions_apply(*, study_id: str, records: list[SubmissionRecord]) -> int:
    """Record Prolific's view of study ``study_id`` on its assignments; the rows changed.

    Idempotent. An accepted assignment whose submission Prolific reports returned or
    timed out is closed (``returned`` / ``expired``) and its place goes back to the HIT.
    Then ``study_auto_approve`` asks for the approval of what sync confirmed, on
    stages with an auto_approve rule.
    Locking: the study's assignment rows, in id order (one transaction).
    """
    by_session = {r.provider_assignment_id: r for r in records}
    now = timezone.now()
    changed = 0
    with transaction.atomic():
        assignments = list(
            Assignment.objects.select_for_update(of=("self",))
            .filter(provider=Provider.PROLIFIC, hit__provider_group_id=study_id)
            .select_related("worker")
            .order_by("pk")
        )
        freed: dict[int, int] = {}
        for a in assignments:
            record = by_session.get(a.provider_assignment_id or "")
            details = dict(a.review_details or {})
            identity = _identity(a, record)
            before = (details.get("identity"), (details.get("prolific") or {}).get("status"))
            details["identity"] = identity
            if record is not None:
                details["prolific"] = {
                    "status": record.status,
                    "started_at": record.started_at,
                    "completed_at": record.completed_at,
                    "entered_code": record.entered_code,
                    "synced_at": now.isoformat(),
                }
            status = a.status
            if a.status == AssignmentStatus.ACCEPTED and record is not None:
                if record.status == "RETURNED":
                    status = AssignmentStatus.RETURNED
                elif record.status == "TIMED-OUT":
                    status = AssignmentStatus.EXPIRED
            after = (identity, (details.get("prolific") or {}).get("status"))
            if before == after and status == a.status:
                continue
            if status != a.status:
                freed[a.hit_id] = freed.get(a.hit_id, 0) + 1
            if identity["status"] != "confirmed" and a.status in STORED_STATES:
                logger.warning("prolific: assignment %s flagged (%s)", a.pk, identity["status"])
            Assignment.objects.filter(pk=a.pk).update(review_details=details, status=status)
            changed += 1
        for hit_id, count in freed.items():
            HIT.objects.filter(pk=hit_id).update(places_left=F("places_left") + count)
    study_auto_approve(study_id=study_id)
    return changed


def study_auto_approve(*, study_id: str) -> ProviderOperation | None:
    """Approve (one bulk approval operation) the submissions of study ``study_id`` that
    stages with an auto_approve rule may pay: submitted here, ``confirmed`` by the
    last sync, and waiting for review on Prolific. A mismatch or an unconfirmed
    identity is never approved. Idempotent: assignments whose approval was already
    requested are left out (``paid_assignments_approve``). None when there is nothing
    to approve.
    """
    candidates = [
        a
        for a in Assignment.objects.filter(
            provider=Provider.PROLIFIC,
            hit__provider_group_id=study_id,
            status=AssignmentStatus.SUBMITTED,
            review_details__identity__status="confirmed",
            review_details__prolific__status="AWAITING REVIEW",
        )
        .select_related("hit__stage")
        .order_by("pk")
        if stage_auto_approves(a.hit.stage)
    ]
    candidates = assignments_not_rejecting(provider=Provider.PROLIFIC, assignments=candidates)
    if not candidates:
        return None
    try:
        return paid_assignments_approve(
            assignments=candidates, source="rule:auto_approve", reason="auto_approve rule"
        )
    except DomainError as exc:  # a decision raced the sync: the next sync tries again
        logger.warning("prolific: auto-approval in study %s refused: %s", study_id, exc)
        return None


def prolific_studies_sync(*, study_id: str | None = None) -> int:
    """Sync one study's submissions, or every published Prolific study's; rows changed.

    A transient error on one study is logged and the others still sync.
    """
    # Each study is read with its campaign's credentials (its own, or the environment's).
    published = HIT.objects.filter(provider=Provider.PROLIFIC).exclude(provider_group_id="")
    if study_id is not None:
        published = published.filter(provider_group_id=study_id)
    else:
        published = published.filter(status=HITStatus.PUBLISHED)
    studies: list[tuple[str, int | None]] = sorted(
        set(published.values_list("provider_group_id", "stage__campaign_id"))
    )
    if study_id is not None and not studies:
        studies = [(study_id, None)]
    changed = 0
    providers: dict[int | None, Any] = {}
    for sid, campaign_id in studies:
        try:
            if campaign_id not in providers:
                providers[campaign_id] = provider_for(Provider.PROLIFIC, campaign_id=campaign_id)
            records = providers[campaign_id].sync_submissions(study_id=sid)
        except ProviderError as exc:
            logger.warning("prolific sync of study %s failed: %s", sid, exc)
            continue
        changed += submissions_apply(study_id=sid, records=records)
    return changed


def prolific_submission_study_sync(*, submission_id: str) -> int:
    """Sync the study of Prolific submission ``submission_id`` (``get-submission`` names it),
    when it is one of qaportal's studies; rows changed (0 when it is not, or the read
    failed: logged, the next hook or beat tick syncs again). Read with the environment's
    credentials: a study made with a campaign's own is synced by the beat tick."""
    try:
        provider = cast(ProlificProvider, provider_for(Provider.PROLIFIC))
        study_id = str(provider.client.submission_get(submission_id).get("study_id") or "")
    except ProviderError as exc:
        logger.warning("prolific: the study of a hooked submission is unknown: %s", exc)
        return 0
    if not study_id or prolific_study_stage(study_id=study_id) is None:
        return 0
    return prolific_studies_sync(study_id=study_id)


# --- Pause, resume, stop ---------------------------------------------------------------

# Campaign-level action → Prolific study transition and the operation kind that asks for it.
_STUDY_ACTIONS: dict[str, tuple[str, str]] = {
    "pause": ("PAUSE", OperationKind.PAUSE_STUDY),
    "resume": ("START", OperationKind.PUBLISH_STUDY),
    "stop": ("STOP", OperationKind.STOP_STUDY),
}
_STUDY_KINDS = [kind for _, kind in _STUDY_ACTIONS.values()]


def campaign_studies(*, campaign: Campaign) -> list[str]:
    """The ids of the Prolific studies that hold the campaign's published HITs."""
    return sorted(
        set(
            HIT.objects.filter(provider=Provider.PROLIFIC, stage__campaign=campaign)
            .exclude(provider_group_id="")
            .values_list("provider_group_id", flat=True)
        )
    )


def _campaign_studies_transition(*, campaign: Campaign, action: str) -> list[ProviderOperation]:
    """One study transition operation per study of ``campaign`` (see the public services).

    Pauses and resumes of a study alternate, so each change gets its own key:
    ``<action>:study:<study id>:<n>``, ``n`` the number of earlier transition
    operations of the study. Asking again for what the study's latest transition
    asked for returns that operation (no second platform call); a stop is final.
    Locking: the campaign row (already held when called from ``campaign_start``).
    """
    if campaign.provider != Provider.PROLIFIC:
        return []
    transition, kind = _STUDY_ACTIONS[action]
    ops = []
    with transaction.atomic():
        Campaign.objects.select_for_update().filter(pk=campaign.pk).first()
        for study_id in campaign_studies(campaign=campaign):
            earlier = ProviderOperation.objects.filter(
                provider=Provider.PROLIFIC, kind__in=_STUDY_KINDS, payload__study_id=study_id
            )
            latest = earlier.exclude(state=OperationState.FAILED).order_by("-pk").first()
            if latest is not None and (
                latest.kind == kind or latest.kind == OperationKind.STOP_STUDY
            ):
                ops.append(latest)
                continue
            op, _ = operation_request(
                provider=Provider.PROLIFIC,
                kind=kind,
                key=f"{action}:study:{study_id}:{earlier.count()}",
                payload={"study_id": study_id, "action": transition},
                campaign=campaign,
            )
            ops.append(op)
    return ops


def campaign_provider_pause(*, campaign: Campaign) -> list[ProviderOperation]:
    """Pause every Prolific study of ``campaign`` (study transition ``PAUSE``).

    Changes the platform's state: one operation per study, key
    ``pause:study:<study id>:<n>`` (``_campaign_studies_transition``). Studies that
    already finished are left as they are. Call it when the campaign leaves
    pilot / live for paused; [] for campaigns not on Prolific.
    Locking: the campaign row.
    """
    return _campaign_studies_transition(campaign=campaign, action="pause")


def campaign_studies_follow(*, campaign_id: int) -> list[ProviderOperation]:
    """Bring the campaign's studies to its state after one was created: a study whose
    create operation was still running when the campaign was paused (or completed)
    missed that transition, so it is paused (or stopped) now. Idempotent (the
    transition keys); [] while the campaign is in pilot or live."""
    campaign = Campaign.objects.get(pk=campaign_id)
    if campaign.state == CampaignState.PAUSED:
        return campaign_provider_pause(campaign=campaign)
    if campaign.state == CampaignState.COMPLETED:
        return campaign_provider_stop(campaign=campaign)
    return []


def campaign_provider_resume(*, campaign: Campaign) -> list[ProviderOperation]:
    """Re-start every paused Prolific study of ``campaign`` (study transition ``START``).

    Changes the platform's state: one operation per study, key
    ``resume:study:<study id>:<n>``. Call it when a paused campaign goes live again;
    [] for campaigns not on Prolific. Locking: the campaign row.
    """
    return _campaign_studies_transition(campaign=campaign, action="resume")


def campaign_provider_stop(*, campaign: Campaign) -> list[ProviderOperation]:
    """Stop every Prolific study of ``campaign`` for good (study transition ``STOP``).

    Changes the platform's state: one operation per study, key
    ``stop:study:<study id>:<n>``; once asked for, a stop is what every later
    transition request of the study returns. Submissions already made can still be
    reviewed and paid. Call it when the campaign is completed; [] for campaigns not
    on Prolific. Locking: the campaign row.
    """
    return _campaign_studies_transition(campaign=campaign, action="stop")
