"""Campaigns, their stages and the items stages work on."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from campaigns.models.choices import (
    CampaignState,
    ItemSource,
    ItemStatus,
    Provider,
    provider_choices,
)


class Campaign(models.Model):
    """A requester's data-collection project: a pipeline of stages on one provider.

    The state moves only through ``campaigns.design.services.campaign_transition``.
    """

    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="owned_campaigns"
    )
    collaborators = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="shared_campaigns"
    )
    provider = models.CharField(max_length=16, choices=provider_choices, default=Provider.LOCAL)
    sandbox = models.BooleanField(
        default=True, help_text="Use the provider's sandbox (no real money) where it has one."
    )
    budget_cap = models.DecimalField(
        max_digits=12,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="Hard limit on committed spending, in the provider's currency.",
    )
    bonus_max = models.DecimalField(
        max_digits=8,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="Largest single bonus; empty: the server's BONUS_MAX_DEFAULT.",
    )
    currency = models.CharField(max_length=3, default="USD")
    state = models.CharField(
        max_length=16, choices=CampaignState.choices, default=CampaignState.DRAFT
    )
    state_changed_at = models.DateTimeField(null=True, blank=True)
    recipe = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(budget_cap__isnull=True) | Q(budget_cap__gte=0),
                name="campaign_budget_cap_non_negative",
            ),
            models.CheckConstraint(
                condition=Q(state__in=CampaignState.values), name="campaign_state_known"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Stage(models.Model):
    """One task type with its configuration, linked to the stage its output feeds."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="stages")
    name = models.CharField(max_length=120)
    position = models.PositiveIntegerField(default=0)
    task_type = models.CharField(max_length=64)
    instructions = models.TextField(blank=True)
    config = models.JSONField(
        default=dict, blank=True, help_text="Task-type settings, validated by the task type."
    )
    reward = models.DecimalField(
        max_digits=8, decimal_places=2, default=Decimal("0.00"), help_text="Per assignment."
    )
    assignments_per_hit = models.PositiveIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(1000)]
    )
    items_per_hit = models.PositiveIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(1000)]
    )
    assignment_duration = models.DurationField(default=timedelta(hours=1))
    lifetime = models.DurationField(default=timedelta(days=7))
    gold_ratio = models.DecimalField(
        max_digits=4,
        decimal_places=3,
        default=Decimal("0"),
        validators=[MinValueValidator(Decimal("0")), MaxValueValidator(Decimal("1"))],
    )
    qualification_requirements = models.JSONField(default=list, blank=True)
    escalation_rule = models.JSONField(default=dict, blank=True)
    review_rules = models.JSONField(default=list, blank=True)
    bonus_rules = models.JSONField(default=list, blank=True)
    next_stage = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="previous_stages"
    )
    handoff = models.JSONField(
        default=dict,
        blank=True,
        help_text="Which accepted outputs become items of the next stage, and how.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The local workforce is paid no rewards through qaportal, so its workers see no
    # reward line unless the requester (who pays them some other way) chooses to. Last
    # field, so the raw column lists of campaigns/work/selectors/loading.py end with it.
    show_reward_to_local_workers = models.BooleanField(default=False)
    # Items added while the campaign is in pilot or live are published at once (their
    # HITs open); off: they wait for the stage card's Publish. Last, as above.
    publish_added = models.BooleanField(default=True)

    class Meta:
        ordering = ["campaign_id", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "name"], name="stage_name_unique"),
            models.UniqueConstraint(fields=["campaign", "position"], name="stage_position_unique"),
            models.CheckConstraint(condition=Q(reward__gte=0), name="stage_reward_non_negative"),
            models.CheckConstraint(
                condition=Q(assignments_per_hit__gte=1), name="stage_assignments_per_hit_positive"
            ),
            models.CheckConstraint(
                condition=Q(items_per_hit__gte=1), name="stage_items_per_hit_positive"
            ),
            models.CheckConstraint(
                condition=Q(gold_ratio__gte=0) & Q(gold_ratio__lte=1), name="stage_gold_ratio_0_1"
            ),
            models.CheckConstraint(
                condition=~Q(next_stage=models.F("id")), name="stage_next_not_self"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.campaign} / {self.name}"


class Item(models.Model):
    """One unit of input to a stage, with its provenance and optional gold answer."""

    stage = models.ForeignKey(Stage, on_delete=models.CASCADE, related_name="items")
    external_id = models.CharField(max_length=200)
    data = models.JSONField()
    gold = models.JSONField(null=True, blank=True)
    source = models.CharField(max_length=16, choices=ItemSource.choices)
    source_assignment = models.ForeignKey(
        "campaigns.Assignment",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="produced_items",
    )
    upload_batch = models.UUIDField(null=True, blank=True, db_index=True)
    status = models.CharField(max_length=16, choices=ItemStatus.choices, default=ItemStatus.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["stage_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["stage", "external_id"], name="item_external_id_unique"
            ),
            models.CheckConstraint(
                condition=~Q(source=ItemSource.PRODUCED) | Q(source_assignment__isnull=False),
                name="item_produced_has_source_assignment",
            ),
        ]
        indexes = [models.Index(fields=["stage", "status"])]

    def __str__(self) -> str:
        return f"{self.stage_id}:{self.external_id}"

    @property
    def is_gold(self) -> bool:
        return self.gold is not None
