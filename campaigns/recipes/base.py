"""What a recipe is: the stages, pay, requirements and rules a published protocol used.

A recipe is data, not code: ``campaigns.recipes.services.recipe_apply`` turns it into
stages of a draft campaign through the ordinary services (so every value is checked
as if the requester had typed it), and the requester changes what they like after.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta
from decimal import Decimal
from typing import Any

# A recipe loads at the pilot scale unless the requester asks for the paper's.
PILOT, PAPER = "pilot", "paper"
SCALES = (PILOT, PAPER)
# Fields a stage's ``pilot`` may override (``config`` is merged key by key).
PILOT_FIELDS = frozenset({"assignments_per_hit", "items_per_hit", "config", "lifetime"})


@dataclass(frozen=True)
class StageSpec:
    """One stage as the paper ran it; ``source`` cites where the numbers come from."""

    name: str
    task_type: str
    source: str
    instructions: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    reward: Decimal = Decimal("0.00")
    assignments_per_hit: int = 1
    items_per_hit: int = 1
    assignment_duration: timedelta = timedelta(hours=1)
    lifetime: timedelta = timedelta(days=7)
    gold_ratio: Decimal = Decimal("0")
    qualification_requirements: list[dict[str, Any]] = field(default_factory=list)
    escalation_rule: dict[str, Any] = field(default_factory=dict)
    review_rules: list[dict[str, Any]] = field(default_factory=list)
    bonus_rules: list[dict[str, Any]] = field(default_factory=list)
    # The next stage (by name) its accepted output feeds, and how.
    feeds: str | None = None
    handoff: dict[str, Any] = field(default_factory=dict)
    # Items at the paper's scale, for the cost estimate (None: fed by an earlier stage,
    # estimated from that stage's ``expected_outputs_per_assignment``).
    paper_items: int | None = None
    # The pilot: overrides of ``PILOT_FIELDS`` (a few HITs per cell, fewer places) and
    # the items it is priced for (None: as ``paper_items``, or fed by an earlier stage).
    pilot: dict[str, Any] = field(default_factory=dict)
    pilot_items: int | None = None
    # Minutes one assignment takes (``config["estimated_minutes"]``): the paper's time
    # where it gives one, else qaportal's estimate, to be replaced by the pilot's median
    # (``stage_estimate_from_pilot``). Platforms with a minimum hourly rate price by it.
    estimated_minutes: int | None = None
    # Who approves this stage's work, when no review rule can (``validation.rules.
    # APPROVING``): said in the recipe listing; the default is a person.
    approval_note: str = ""

    def __post_init__(self) -> None:
        unknown = set(self.pilot) - PILOT_FIELDS
        if unknown:
            raise ValueError(f"{self.name}: pilot cannot override {sorted(unknown)}")

    def at(self, scale: str) -> StageSpec:
        """This stage at ``scale``: the paper's as written, or the pilot's overrides."""
        if scale not in SCALES:
            raise ValueError(f"scale is one of {', '.join(SCALES)}")
        if scale == PAPER or not self.pilot:
            return self
        changes = dict(self.pilot)
        if "config" in changes:
            changes["config"] = {**self.config, **changes["config"]}
        return replace(self, **changes)

    def items_at(self, scale: str) -> int | None:
        """Items priced at ``scale`` (None: fed by an earlier stage)."""
        if scale == PILOT and self.pilot_items is not None:
            return self.pilot_items
        return self.paper_items


@dataclass(frozen=True)
class Recipe:
    """A published protocol ready to run: its stages and a small sample to pilot with."""

    name: str
    title: str
    citation: str
    summary: str
    stages: tuple[StageSpec, ...]
    # Stage name -> sample items (item-upload rows: ``external_id`` plus the data).
    sample_items: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # What the paper reports about its own scale and cost, quoted for comparison.
    paper_scale: str = ""
    export_format: str = ""
    # What the pilot is, in a sentence (a recipe loads at this scale by default).
    pilot_scale: str = ""

    def stage(self, name: str) -> StageSpec:
        for spec in self.stages:
            if spec.name == name:
                return spec
        raise KeyError(name)
