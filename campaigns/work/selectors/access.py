"""Who may work on a stage: the workers a request speaks for, their access to a stage
(as a filter and as SQL for ``assignment_accept``), where an invite sends them, what
they are shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet

from campaigns.design.platform import platform_for
from campaigns.models import (
    Campaign,
    CampaignState,
    CampaignWorker,
    InviteLink,
    LocalGrant,
    Provider,
    QualificationGrant,
    Stage,
    Worker,
)
from campaigns.workforce.requirements import stage_required_qualifications

WORKABLE_STATES = (CampaignState.PILOT, CampaignState.LIVE)


@dataclass(frozen=True)
class RequestWorkers:
    """The workers one request speaks for: the invited workers whose ids its session
    holds, then the logged-in account's local worker (``user_id``).

    Lets the pages filter on worker ids without loading the ``Worker`` rows.
    """

    worker_ids: tuple[int, ...] = ()
    user_id: int | None = None

    def __bool__(self) -> bool:
        return bool(self.worker_ids) or self.user_id is not None


def worker_stage_access_q(*, stage: Stage, qualifications: bool = True) -> Q:
    """``worker_has_stage_access`` as a filter on ``Worker`` rows (one query, any number of
    workers). Matches nothing when the campaign is not local. ``qualifications=False``:
    invited or granted, whatever quizzes they still have to pass."""
    if not platform_for(stage.campaign).hosts_workforce:
        return Q(pk__in=[])
    grant = LocalGrant.objects.filter(campaign_id=stage.campaign_id, user_id=OuterRef("user_id"))
    invite = InviteLink.objects.filter(
        Q(stage__isnull=True) | Q(stage_id=stage.pk),
        campaign_id=stage.campaign_id,
        revoked_at__isnull=True,
        redemptions__worker_id=OuterRef("pk"),
    )
    access = Q(provider=Provider.LOCAL) & (Q(Exists(grant)) | Q(Exists(invite)))
    arm = (stage.config or {}).get("arm")
    if arm:  # an arm's stage: only its arm's workers (campaigns.workforce.arms)
        placed = CampaignWorker.objects.filter(
            campaign_id=stage.campaign_id, worker_id=OuterRef("pk"), arm=str(arm)
        )
        access &= Q(Exists(placed))
    for requirement in required_qualification_ids(stage=stage) if qualifications else []:
        held = QualificationGrant.objects.filter(
            qualification_type_id=requirement, worker_id=OuterRef("pk"), revoked_at__isnull=True
        )
        access &= Q(Exists(held))
    return access


def required_qualification_ids(*, stage: Stage) -> list[int]:
    """The qualification types ``stage`` requires (``campaigns.workforce.quizzes``)."""
    return stage_required_qualifications(stage=stage)


def worker_has_stage_access(*, worker: Worker, stage: Stage) -> bool:
    """Whether a local ``worker`` may see ``stage``'s work pages.

    A logged-in annotator needs a ``LocalGrant`` for the campaign; an invited
    worker needs the invite they joined through to be unrevoked and to cover the
    stage (an invite to one stage covers that stage only). ``assignment_accept``
    checks the same in SQL, in its locking statement.
    """
    if not (platform_for(stage.campaign).hosts_workforce and platform_for(worker).hosts_workforce):
        return False
    return Worker.objects.filter(worker_stage_access_q(stage=stage), pk=worker.pk).exists()


def stage_other_arm(*, stage: Stage, workers: RequestWorkers) -> str | None:
    """The protocol arm one of ``workers`` has in ``stage``'s campaign when the stage
    belongs to another arm (the worker may not take it: it is another group's task);
    None otherwise."""
    arm = str((stage.config or {}).get("arm") or "")
    found = request_workers_get(workers=workers) if arm else []
    if not found:
        return None
    arms = (
        CampaignWorker.objects.filter(campaign_id=stage.campaign_id, worker__in=found)
        .exclude(arm="")
        .values_list("arm", flat=True)
    )
    return next((a for a in arms if a != arm), None)


def request_workers_get(*, workers: RequestWorkers) -> list[Worker]:
    """The local ``Worker`` rows of ``workers``: session order, then the account's."""
    if not workers:
        return []
    who = Q(pk__in=workers.worker_ids)
    if workers.user_id is not None:
        who |= Q(user_id=workers.user_id)
    found = list(Worker.objects.filter(who, provider=Provider.LOCAL))
    order = {pk: n for n, pk in enumerate(workers.worker_ids)}
    found.sort(key=lambda w: order.get(w.pk, len(order)))
    return found


# Whether the worker row ``w`` is let into a campaign's stage by a grant or an invite;
# ``{campaign}`` and ``{stage}``: a placeholder or an outer query's column.
_ADMITTED_SQL = """w.provider = %s AND (
     EXISTS (SELECT 1 FROM campaigns_localgrant g
             WHERE g.campaign_id = {campaign} AND g.user_id = w.user_id)
     OR EXISTS (SELECT 1 FROM campaigns_invitelink l
                INNER JOIN campaigns_inviteredemption r ON r.invite_id = l.id
                WHERE r.worker_id = w.id AND l.campaign_id = {campaign} AND l.revoked_at IS NULL
                  AND (l.stage_id IS NULL OR l.stage_id = {stage})))"""

# Whether the worker row ``w`` may see a stage's pages, as ``worker_stage_access_q``
# without the qualifications. Parameters: ``worker_access_params(stage)``.
WORKER_ACCESS_SQL = f"""({_ADMITTED_SQL.format(campaign="%s", stage="%s")}
   AND (%s = '' OR EXISTS (SELECT 1 FROM campaigns_campaignworker cw
                           WHERE cw.campaign_id = %s AND cw.worker_id = w.id
                             AND cw.arm = %s)))"""  # noqa: S608 - constant fragments

# ``WORKER_ACCESS_SQL`` on the stage row ``s`` of the outer query, less the arm (whose
# value is in the stage's config: ``worker_arm_admits`` checks it on ``WORKER_ARM_SQL``,
# the worker's arm in the campaign). Parameter: ``Provider.LOCAL``
# (``assignment_accept`` reads it in its locking statement, with the stage).
WORKER_ADMITTED_SQL = f"({_ADMITTED_SQL.format(campaign='s.campaign_id', stage='s.id')})"
WORKER_ARM_SQL = """(SELECT cw.arm FROM campaigns_campaignworker cw
   WHERE cw.campaign_id = s.campaign_id AND cw.worker_id = w.id)"""


def stage_arm(stage: Stage) -> str:
    """The protocol arm ``stage`` belongs to ('' for a stage every arm shares)."""
    return str((stage.config or {}).get("arm") or "")


def worker_arm_admits(*, stage: Stage, worker_arm: str | None) -> bool:
    """Whether a worker whose arm in the campaign is ``worker_arm`` (None: not placed)
    may work on ``stage``, as the arm's condition of ``WORKER_ACCESS_SQL``."""
    arm = stage_arm(stage)
    return not arm or worker_arm == arm


_QUALIFIED_SQL = """ AND EXISTS (SELECT 1 FROM campaigns_qualificationgrant q
  WHERE q.qualification_type_id = %s AND q.worker_id = w.id AND q.revoked_at IS NULL)"""


def worker_access_params(stage: Stage) -> list[Any]:
    """The parameters of ``WORKER_ACCESS_SQL`` for ``stage``."""
    arm = stage_arm(stage)
    campaign_id = stage.campaign_id
    return [Provider.LOCAL, campaign_id, campaign_id, stage.pk, arm, campaign_id, arm]


def stage_entry_for_invite(
    *, invite: InviteLink, worker_ids: list[int] | None = None
) -> Stage | None:
    """Where an invite sends its workers: its stage, or the campaign's first stage that
    the worker's protocol arm includes (a shared stage, or one of their arm)."""
    if invite.stage_id is not None:
        return invite.stage
    arm = (
        CampaignWorker.objects.filter(
            campaign_id=invite.campaign_id, worker_id__in=worker_ids or []
        )
        .exclude(arm="")
        .values_list("arm", flat=True)
        .first()
    )
    for stage in invite.campaign.stages.order_by("position"):
        stage_arm = (stage.config or {}).get("arm")
        if not stage_arm or stage_arm == arm:
            return stage
    return None


def invite_list(*, campaign: Campaign) -> QuerySet[InviteLink]:
    """The campaign's invite links, newest first."""
    return campaign.invite_links.select_related("stage", "created_by").order_by("-created_at")


def stage_reward_shown(*, stage: Stage) -> bool:
    """Whether workers see a reward line for ``stage``: only when it pays something and the
    campaign's platform moves the money. Local workers are not paid through qaportal, so a
    reward there would promise money that never moves, unless the requester (who pays an
    in-house team some other way) chose to show it: ``show_reward_to_local_workers``."""
    if stage.reward <= 0:
        return False
    return platform_for(stage.campaign).moves_money or stage.show_reward_to_local_workers
