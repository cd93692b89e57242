"""Campaign life cycle: create, add and link stages, move through states."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.text import slugify

from campaigns.models import Campaign, CampaignState, Item, Provider, QualificationType, Stage
from campaigns.providers import currency_for
from campaigns.services.errors import DomainError, IllegalTransition, StateConflict
from campaigns.services.stage_rules import stage_rules_problems
from campaigns.tasktypes import UnknownTaskType, task_type_get
from qaportal.jsonsafe import unstorable_path

# The state machine: from each state, the states it may move to.
TRANSITIONS: dict[str, frozenset[str]] = {
    CampaignState.DRAFT: frozenset({CampaignState.PILOT, CampaignState.LIVE}),
    CampaignState.PILOT: frozenset(
        {CampaignState.DRAFT, CampaignState.LIVE, CampaignState.PAUSED, CampaignState.COMPLETED}
    ),
    CampaignState.LIVE: frozenset({CampaignState.PAUSED, CampaignState.COMPLETED}),
    CampaignState.PAUSED: frozenset({CampaignState.LIVE, CampaignState.COMPLETED}),
    CampaignState.COMPLETED: frozenset(),
}
# Stages can be added, changed and removed only before work is published.
EDITABLE_STATES = frozenset({CampaignState.DRAFT, CampaignState.PILOT})


def _unique_slug(name: str) -> str:
    base = slugify(name)[:60] or "campaign"
    slug, n = base, 1
    while Campaign.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def campaign_create(
    *,
    owner: User,
    name: str,
    slug: str | None = None,
    description: str = "",
    provider: str = Provider.LOCAL,
    sandbox: bool = True,
    budget_cap: Decimal | None = None,
    recipe: str = "",
) -> Campaign:
    """Create a campaign in ``draft``. The slug is derived from the name when not given."""
    if provider not in Provider.values:
        raise DomainError(
            f"Unknown provider {provider!r}; choose one of {', '.join(Provider.values)}.",
            errors={"provider": ["unknown provider"]},
        )
    if budget_cap is not None and budget_cap < 0:
        raise DomainError("The budget cap cannot be negative.", errors={"budget_cap": ["negative"]})
    try:
        with transaction.atomic():
            return Campaign.objects.create(
                owner=owner,
                name=name,
                slug=slug or _unique_slug(name),
                description=description,
                provider=provider,
                sandbox=sandbox,
                budget_cap=budget_cap,
                currency=currency_for(provider),
                recipe=recipe,
            )
    except IntegrityError as exc:
        raise DomainError(
            f"A campaign with the slug {slug!r} exists already.", errors={"slug": ["taken"]}
        ) from exc


def _check_editable(campaign: Campaign) -> None:
    if campaign.state not in EDITABLE_STATES:
        raise StateConflict(
            f"Stages of a campaign in state {campaign.state!r} cannot be changed; "
            "pause is not enough: only draft and pilot campaigns are editable.",
            errors={"state": [campaign.state]},
        )


def _validated_config(task_type: str, config: dict[str, Any]) -> dict[str, Any]:
    try:
        tt = task_type_get(task_type)
    except UnknownTaskType as exc:
        raise DomainError(str(exc), errors={"task_type": [str(exc)]}) from exc
    unstorable = unstorable_path(config)
    if unstorable is not None:
        where, reason = unstorable
        raise DomainError(
            f"The configuration's value at {where or 'the top'!r} {reason}.",
            errors={"config": [f"{where}: {reason}"]},
        )
    problems = tt.validate_config(config)
    if problems:
        raise DomainError(
            f"The configuration does not fit task type {task_type!r}.",
            errors={"config": [str(p) for p in problems]},
        )
    return config


def _check_rules(*, review_rules: Any, bonus_rules: Any, escalation_rule: Any) -> None:
    problems = stage_rules_problems(
        review_rules=review_rules, bonus_rules=bonus_rules, escalation_rule=escalation_rule
    )
    if problems:
        raise DomainError("The stage's rules are not valid.", errors=problems)


def stage_add(
    *,
    campaign: Campaign,
    name: str,
    task_type: str,
    config: dict[str, Any] | None = None,
    instructions: str = "",
    reward: Decimal = Decimal("0.00"),
    assignments_per_hit: int = 1,
    items_per_hit: int = 1,
    assignment_duration: timedelta | None = None,
    lifetime: timedelta | None = None,
    gold_ratio: Decimal = Decimal("0"),
    qualification_requirements: list[dict[str, Any]] | None = None,
    escalation_rule: dict[str, Any] | None = None,
    review_rules: list[dict[str, Any]] | None = None,
    bonus_rules: list[dict[str, Any]] | None = None,
) -> Stage:
    """Append a stage to a draft or pilot campaign, its config validated by the task type.

    Locks the campaign row so concurrent additions get distinct positions.
    """
    config = _validated_config(task_type, config or {})
    _check_rules(
        review_rules=review_rules or [],
        bonus_rules=bonus_rules or [],
        escalation_rule=escalation_rule or {},
    )
    if reward < 0:
        raise DomainError("The reward cannot be negative.", errors={"reward": ["negative"]})
    if assignments_per_hit < 1 or items_per_hit < 1:
        raise DomainError(
            "A HIT needs at least one assignment and one item.",
            errors={"assignments_per_hit": ["must be >= 1"], "items_per_hit": ["must be >= 1"]},
        )
    if not Decimal("0") <= gold_ratio <= Decimal("1"):
        raise DomainError(
            "The gold ratio is a fraction from 0 to 1.", errors={"gold_ratio": ["0..1"]}
        )
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
        _check_editable(campaign)
        _check_qualification_types(campaign=campaign, requirements=qualification_requirements)
        if campaign.stages.filter(name=name).exists():
            raise DomainError(
                f"The campaign has a stage named {name!r} already.", errors={"name": ["taken"]}
            )
        last = campaign.stages.aggregate(m=Max("position"))["m"]
        extra: dict[str, Any] = {}
        if assignment_duration is not None:
            extra["assignment_duration"] = assignment_duration
        if lifetime is not None:
            extra["lifetime"] = lifetime
        return Stage.objects.create(
            campaign=campaign,
            name=name,
            position=0 if last is None else last + 1,
            task_type=task_type,
            config=config,
            instructions=instructions,
            reward=reward,
            assignments_per_hit=assignments_per_hit,
            items_per_hit=items_per_hit,
            gold_ratio=gold_ratio,
            qualification_requirements=qualification_requirements or [],
            escalation_rule=escalation_rule or {},
            review_rules=review_rules or [],
            bonus_rules=bonus_rules or [],
            **extra,
        )


def _check_qualification_types(*, campaign: Campaign, requirements: Any) -> None:
    """Refuse a requirement naming a qualification type that does not exist or that
    belongs to someone other than the campaign's owner (it would leak their grants and
    let their quiz decide who works here)."""
    wanted: list[Any] = [
        req.get("qualification_type_id")
        for req in (requirements or [])
        if isinstance(req, dict) and req.get("qualification_type_id") is not None
    ]
    if not wanted:
        return
    bad = [w for w in wanted if not isinstance(w, int) or isinstance(w, bool)]
    if bad:
        raise DomainError(
            "qualification_type_id is the id (an integer) of one of your qualification types.",
            errors={"qualification_requirements": [str(b)[:40] for b in bad]},
        )
    own = set(
        QualificationType.objects.filter(pk__in=wanted, owner_id=campaign.owner_id).values_list(
            "pk", flat=True
        )
    )
    missing = [w for w in wanted if w not in own]
    if missing:
        raise DomainError(
            "No qualification type of the campaign's owner has the id "
            f"{', '.join(str(m) for m in missing)}.",
            errors={
                "qualification_requirements": [f"unknown qualification type {m}" for m in missing]
            },
        )


STAGE_EDITABLE_FIELDS = frozenset(
    {
        "name",
        "config",
        "instructions",
        "reward",
        "assignments_per_hit",
        "items_per_hit",
        "assignment_duration",
        "lifetime",
        "gold_ratio",
        "qualification_requirements",
        "escalation_rule",
        "review_rules",
        "bonus_rules",
    }
)


def stage_update(*, stage: Stage, **changes: Any) -> Stage:
    """Change a stage of a draft or pilot campaign; the task type cannot change."""
    unknown = set(changes) - STAGE_EDITABLE_FIELDS
    if unknown:
        raise DomainError(
            f"These stage fields cannot be changed: {', '.join(sorted(unknown))}.",
            errors={f: ["read-only"] for f in sorted(unknown)},
        )
    if "config" in changes:
        _validated_config(stage.task_type, changes["config"])
    if {"review_rules", "bonus_rules", "escalation_rule"} & set(changes):
        _check_rules(
            review_rules=changes.get("review_rules", stage.review_rules),
            bonus_rules=changes.get("bonus_rules", stage.bonus_rules),
            escalation_rule=changes.get("escalation_rule", stage.escalation_rule),
        )
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().get(pk=stage.campaign_id)
        _check_editable(campaign)
        if "qualification_requirements" in changes:
            _check_qualification_types(
                campaign=campaign, requirements=changes["qualification_requirements"]
            )
        new_name = changes.get("name")
        if (
            new_name is not None
            and campaign.stages.filter(name=new_name).exclude(pk=stage.pk).exists()
        ):
            raise DomainError(
                f"The campaign has a stage named {new_name!r} already.", errors={"name": ["taken"]}
            )
        for field, value in changes.items():
            setattr(stage, field, value)
        try:
            stage.full_clean(exclude=["campaign", "next_stage"])
        except Exception as exc:
            raise DomainError(
                "The stage is not valid.", errors=getattr(exc, "message_dict", None)
            ) from exc
        stage.save()
    return stage


def stage_link(
    *, stage: Stage, next_stage: Stage | None, handoff: dict[str, Any] | None = None
) -> Stage:
    """Make accepted output of ``stage`` become items of ``next_stage`` (None unlinks).

    Both stages must belong to the same campaign, and the links must not form a cycle.
    """
    problems = task_type_get(stage.task_type).validate_handoff(handoff or {})
    if problems:
        raise DomainError(
            f"The hand-off does not fit task type {stage.task_type!r}.",
            errors={"handoff": [str(p) for p in problems]},
        )
    with transaction.atomic():
        campaign = Campaign.objects.select_for_update().get(pk=stage.campaign_id)
        _check_editable(campaign)
        if next_stage is not None:
            if next_stage.campaign_id != stage.campaign_id:
                raise DomainError(
                    "A stage can only feed a stage of the same campaign.",
                    errors={"next_stage": ["other campaign"]},
                )
            seen = {stage.pk}
            cursor: Stage | None = next_stage
            while cursor is not None:
                if cursor.pk in seen:
                    raise DomainError(
                        "Linking these stages would make a cycle.", errors={"next_stage": ["cycle"]}
                    )
                seen.add(cursor.pk)
                cursor = cursor.next_stage
        stage.next_stage = next_stage
        stage.handoff = handoff or {}
        stage.save(update_fields=["next_stage", "handoff"])
    return stage


def campaign_transition(*, campaign: Campaign, to_state: str) -> Campaign:
    """Move a campaign to ``to_state``; raises ``IllegalTransition`` with the reason.

    Locks the campaign row, so two concurrent transitions are serialised and the
    second one is checked against the state the first left.
    """
    if to_state not in CampaignState.values:
        raise IllegalTransition(
            f"Unknown state {to_state!r}; states are {', '.join(CampaignState.values)}."
        )
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        allowed = TRANSITIONS[locked.state]
        if to_state not in allowed:
            options = ", ".join(sorted(allowed)) or "none: it is final"
            raise IllegalTransition(
                f"A campaign in state {locked.state!r} cannot move to {to_state!r} "
                f"(allowed: {options})."
            )
        if (
            to_state in (CampaignState.PILOT, CampaignState.LIVE)
            and locked.state == CampaignState.DRAFT
        ):
            first = locked.stages.order_by("position").first()
            if first is None:
                raise IllegalTransition("A campaign needs at least one stage before it starts.")
            if not Item.objects.filter(stage=first).exists():
                raise IllegalTransition(
                    f"The first stage {first.name!r} has no items; upload items before starting."
                )
        locked.state = to_state
        locked.state_changed_at = timezone.now()
        locked.save(update_fields=["state", "state_changed_at", "updated_at"])
    campaign.refresh_from_db()
    return campaign
