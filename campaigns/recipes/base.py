"""What a recipe is: the stages, pay, requirements and rules a published protocol used.

A recipe is data, not code: ``campaigns.recipes.services.recipe_apply`` turns it into
stages of a draft campaign through the ordinary services (so every value is checked
as if the requester had typed it), and the requester changes what they like after.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any


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

    def stage(self, name: str) -> StageSpec:
        for spec in self.stages:
            if spec.name == name:
                return spec
        raise KeyError(name)
