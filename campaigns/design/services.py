"""Campaign life cycle: create, add and link stages, move through states."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.text import slugify

from campaigns.design.owners import check_stage_money_rules
from campaigns.design.platform import platform_for, platform_names
from campaigns.design.requirement_checks import (
    requirement_problems,
    requirement_stage_ids,
)
from campaigns.design.stage_rules import stage_rules_problems
from campaigns.models import (
    Campaign,
    CampaignState,
    Item,
    ModelEndpoint,
    ModelEndpointKind,
    Provider,
    QualificationType,
    Stage,
)
from campaigns.tasktypes import UnknownTaskTypeError, task_type_get
from campaigns.tasktypes.base import adversarial_config
from qaportal.errors import DomainError, IllegalTransition, StateConflict
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


def campaign_name_taken(*, owner: User, name: str, exclude_pk: int | None = None) -> bool:
    """Whether ``owner`` has a campaign called ``name`` already (letter case and outer
    blanks ignored): two campaigns with one name are told apart by nobody."""
    same = Campaign.objects.filter(owner=owner, name__iexact=name.strip())
    if exclude_pk is not None:
        same = same.exclude(pk=exclude_pk)
    return same.exists()


def campaign_name_suggest(*, owner: User, name: str) -> str:
    """A free name for ``owner`` close to ``name``: "Name (2)", "Name (3)", ..."""
    base, n = name.strip(), 2
    while campaign_name_taken(owner=owner, name=f"{base} ({n})"):
        n += 1
    return f"{base} ({n})"


def check_campaign_name_free(*, owner: User, name: str, exclude_pk: int | None = None) -> None:
    if campaign_name_taken(owner=owner, name=name, exclude_pk=exclude_pk):
        suggestion = campaign_name_suggest(owner=owner, name=name)
        raise DomainError(
            f"You have a campaign named {name.strip()!r} already; choose another name, "
            f"e.g. {suggestion!r}.",
            errors={"name": ["taken"]},
        )


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
    """Create a campaign in ``draft``. The slug is derived from the name when not given.

    A name the owner already uses is refused (``errors={"name": ["taken"]}``), with a
    free name suggested in the message, rather than made unique behind their back.
    """
    if provider not in platform_names():
        raise DomainError(
            f"Unknown provider {provider!r}; choose one of {', '.join(platform_names())}.",
            errors={"provider": ["unknown provider"]},
        )
    if budget_cap is not None and budget_cap < 0:
        raise DomainError("The budget cap cannot be negative.", errors={"budget_cap": ["negative"]})
    try:
        with transaction.atomic():
            # The owner's row serialises their creations, so two tabs cannot both
            # take a free name.
            User.objects.select_for_update().filter(pk=owner.pk).first()
            check_campaign_name_free(owner=owner, name=name)
            return Campaign.objects.create(
                owner=owner,
                name=name,
                slug=slug or _unique_slug(name),
                description=description,
                provider=provider,
                sandbox=sandbox,
                budget_cap=budget_cap,
                currency=platform_for(provider).currency,
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
    except UnknownTaskTypeError as exc:
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
    adversarial = adversarial_config(config)
    if adversarial is None:
        return config
    kind = (
        ModelEndpoint.objects.filter(pk=adversarial["endpoint"]).values_list("kind", flat=True)
    ).first()
    if kind is None:
        raise DomainError(
            "The configuration names a model endpoint that does not exist.",
            errors={"config": [f"adversarial/endpoint: no endpoint {adversarial['endpoint']}"]},
        )
    if kind == ModelEndpointKind.BASELINE_BM25 and not tt.adversarial_baseline_fits:
        why = (
            "the built-in baseline answers with a sentence of a passage, not this task "
            "type's questions: register an OpenAI-compatible model endpoint for it"
        )
        raise DomainError(
            f"The adversarial option needs a model endpoint: {why}.",
            errors={"config": [f"adversarial/endpoint: {why}"]},
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
    show_reward_to_local_workers: bool = False,
    actor: AbstractBaseUser | AnonymousUser | None = None,
    publish_added: bool = True,
) -> Stage:
    """Append a stage to a draft or pilot campaign, its config validated by the task type.

    A wage floor among its bonus rules is the owner's to set: ``PermissionDenied`` when
    ``actor`` (None: the system) is a collaborator. Locks the campaign row so concurrent
    additions get distinct positions.
    """
    check_stage_money_rules(campaign=campaign, actor=actor, before=[], after=bonus_rules or [])
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
        _check_requirement_shapes(qualification_requirements, campaign=campaign)
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
            show_reward_to_local_workers=show_reward_to_local_workers,
            publish_added=publish_added,
            **extra,
        )


def _check_requirement_shapes(requirements: Any, *, campaign: Campaign | None = None) -> None:
    """Refuse requirements with problems (``requirement_problems``: naming nothing known,
    an unknown kind, a system requirement's wrong parameter), and, given ``campaign``, a
    requirement naming a stage that is not one of its stages (stored, it would refuse
    every worker at publishing)."""
    problems = requirement_problems(requirements)
    if campaign is not None and not problems:
        named = requirement_stage_ids(requirements)
        ids = set(
            campaign.stages.filter(pk__in=[i for _, _, i in named]).values_list("pk", flat=True)
        )
        problems = [
            f"requirement {n}: {key} {i} is not a stage of this campaign"
            for n, key, i in named
            if i not in ids
        ]
    if problems:
        raise DomainError(
            f"Qualification requirements: {'; '.join(problems)}.",
            errors={"qualification_requirements": problems},
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


# A stage's settings: what a requester edits and what a clone copies (with its task type).
STAGE_SETTINGS_FIELDS = (
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
    "show_reward_to_local_workers",
    "publish_added",
)
STAGE_EDITABLE_FIELDS = frozenset({"name", *STAGE_SETTINGS_FIELDS})


# Once work is published (live, paused) a stage keeps what its HITs and their cost were
# made from: reward, places, items per HIT, durations, configuration, gold ratio and
# qualification requirements are on the published HITs (on MTurk they cannot change).
# What only shapes the page text and the decisions still to come may change.
STAGE_FIELDS_WHILE_PUBLISHED = frozenset(
    {
        "name",
        "instructions",
        "review_rules",
        "bonus_rules",
        "escalation_rule",
        "show_reward_to_local_workers",
        "publish_added",
    }
)


def stage_fields_editable(*, campaign: Campaign) -> frozenset[str]:
    """The stage fields ``stage_update`` accepts for a stage of ``campaign`` now."""
    if campaign.state in EDITABLE_STATES:
        return STAGE_EDITABLE_FIELDS
    if campaign.state == CampaignState.COMPLETED:
        return frozenset()
    return STAGE_FIELDS_WHILE_PUBLISHED


def stage_update(
    *, stage: Stage, actor: AbstractBaseUser | AnonymousUser | None = None, **changes: Any
) -> Stage:
    """Change a stage; the task type never changes.

    A wage floor among the bonus rules is the owner's: ``PermissionDenied`` when
    ``actor`` (None: the system) is a collaborator and changes it.

    Draft and pilot: every field of ``STAGE_EDITABLE_FIELDS``. Live and paused: only
    ``STAGE_FIELDS_WHILE_PUBLISHED`` (texts and the rules of decisions still to come);
    the rest raises ``StateConflict``. Completed: nothing. Locks the campaign row, so
    the state checked is the state the write sees.
    """
    unknown = set(changes) - STAGE_EDITABLE_FIELDS
    if unknown:
        raise DomainError(
            f"These stage fields cannot be changed: {', '.join(sorted(unknown))}.",
            errors={f: ["read-only"] for f in sorted(unknown)},
        )
    if "bonus_rules" in changes:
        check_stage_money_rules(
            campaign=stage.campaign,
            actor=actor,
            before=stage.bonus_rules,
            after=changes["bonus_rules"],
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
        frozen = set(changes) - stage_fields_editable(campaign=campaign)
        if frozen:
            raise StateConflict(
                f"Stages of a campaign in state {campaign.state!r} cannot change "
                f"{', '.join(sorted(frozen))}: only draft and pilot campaigns are fully "
                "editable; once HITs are out, only the name, instructions and the rules "
                "of decisions still to come may change.",
                errors={"state": [campaign.state], **{f: ["frozen"] for f in sorted(frozen)}},
            )
        if "qualification_requirements" in changes:
            _check_requirement_shapes(changes["qualification_requirements"], campaign=campaign)
            _check_qualification_types(
                campaign=campaign, requirements=changes["qualification_requirements"]
            )
            _requirements_check(
                provider=campaign.provider, requirements=changes["qualification_requirements"]
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
        if "config" in changes and stage.next_stage is not None:
            # The adversarial option stays while a fool-validation stage takes the fools.
            _fool_routes_check(
                stage=stage, next_stage=stage.next_stage, handoff=stage.handoff or {}
            )
        try:
            stage.full_clean(exclude=["campaign", "next_stage"])
        except Exception as exc:
            raise DomainError(
                "The stage is not valid.", errors=getattr(exc, "message_dict", None)
            ) from exc
        stage.save()
    return stage


def _requirements_check(*, provider: str, requirements: Any) -> None:
    """Refuse (``DomainError``) requirements the platform cannot express, as the requester
    sets them: refused with the platform's reason, never silently dropped."""
    if not isinstance(requirements, list):
        return
    notes = (
        platform_for(provider)
        .rules()
        .requirement_notes(r for r in requirements if isinstance(r, dict))
    )
    refused = [n.refused for n in notes if n.refused]
    if refused:
        raise DomainError(" ".join(refused), errors={"qualification_requirements": refused})


STAGE_CLONED_FIELDS = ("task_type", *STAGE_SETTINGS_FIELDS)


def stage_clone(*, stage: Stage, name: str | None = None) -> Stage:
    """Append a copy of ``stage``'s settings (not its items, HITs or links) to its
    campaign, named ``name`` or "<name> (copy)"; draft and pilot only, as ``stage_add``."""
    if not name:
        base, n = f"{stage.name} (copy)", 2
        name = base
        while stage.campaign.stages.filter(name=name).exists():
            name, n = f"{stage.name} (copy {n})", n + 1
    fields = {f: getattr(stage, f) for f in STAGE_CLONED_FIELDS}
    return stage_add(campaign=stage.campaign, name=name[:120], **fields)


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
            for key in task_type_get(stage.task_type).handoff_stage_keys:
                side = (handoff or {}).get(key)
                if (
                    side is not None
                    and not Stage.objects.filter(pk=side, campaign_id=stage.campaign_id)
                    .exclude(pk=stage.pk)
                    .exists()
                ):
                    raise DomainError(
                        f"The hand-off's {key} names no other stage of this campaign.",
                        errors={"handoff": [f"{key}: unknown stage {side}"]},
                    )
            _fool_routes_check(stage=stage, next_stage=next_stage, handoff=handoff or {})
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


def _fool_routes_check(*, stage: Stage, next_stage: Stage, handoff: dict[str, Any]) -> None:
    """A stage that confirms fools (``verifies_fools``) takes the claimed fools of an
    adversarial writing stage, on a route its hand-off sends them on (``fool_routes``),
    and a route that sends fools leads to such a stage: anything else would hand it
    items it cannot show, or claims nobody confirms."""
    source = task_type_get(stage.task_type)
    fool_routes = source.fool_routes(handoff=handoff)
    routes: dict[str | None, Stage | None] = {None: next_stage}
    for key in source.handoff_stage_keys:
        if handoff.get(key) is not None:
            routes[key] = Stage.objects.filter(pk=handoff[key]).first()
    for route, target in routes.items():
        if target is None:
            continue
        verifies = task_type_get(target.task_type).verifies_fools
        where = "the next stage" if route is None else f"the hand-off's {route}"
        field = "next_stage" if route is None else "handoff"
        if verifies and (route not in fool_routes or adversarial_config(stage.config) is None):
            raise DomainError(
                f"{where.capitalize()} confirms fools: it takes the claimed fools of a "
                "writing stage with the adversarial option, handed on as fools.",
                errors={field: [f"{route or 'next_stage'}: no claimed fools to confirm"]},
            )
        if not verifies and route in fool_routes:
            raise DomainError(
                f"The hand-off sends claimed fools to {where}, which does not confirm them.",
                errors={field: [f"{route or 'next_stage'}: not a fool validation stage"]},
            )


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
