"""An item's whole history across stages: where it came from (the assignments that
produced it and their items, up to the uploaded one) and what became of it (the
assignments on its HITs, who decided them, the items they handed on, down the
pipeline).

Queries grow with the pipeline's depth (one round per stage), never with the number
of assignments or items on the way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Prefetch

from campaigns.models import Assignment, Campaign, HITItem, Item

# A cycle cannot happen (an item is produced once, by an earlier stage), but a guard
# keeps a damaged database from looping the page.
MAX_DEPTH = 12


@dataclass
class AssignmentStep:
    """One worker's work on one of the item's HITs, and what it handed on."""

    assignment: Assignment
    produced: list[int] = field(default_factory=list)


@dataclass
class ItemStep:
    """One item of the lineage with the work done on it."""

    item: Item
    depth: int  # 0 for the item asked about; negative above it, positive below
    assignments: list[AssignmentStep] = field(default_factory=list)


def _assignments_on(item_ids: list[int]) -> dict[int, list[Assignment]]:
    """Assignments of every HIT holding one of ``item_ids``, by item id (one query)."""
    found: dict[int, list[Assignment]] = {}
    links = (
        HITItem.objects.filter(item_id__in=item_ids)
        .select_related("hit")
        .prefetch_related(
            Prefetch(
                "hit__assignments",
                queryset=Assignment.objects.select_related("worker", "decided_by")
                .prefetch_related(Prefetch("produced_items", queryset=Item.objects.only("id")))
                .order_by("id"),
            )
        )
        .order_by("item_id", "hit_id")
    )
    for link in links:
        found.setdefault(link.item_id, []).extend(link.hit.assignments.all())
    return found


def item_history(*, campaign: Campaign, item_id: int) -> list[ItemStep]:
    """The lineage of item ``item_id`` of ``campaign``, in pipeline order.

    Raises ``Item.DoesNotExist`` when the item is not the campaign's. Above the item:
    the item each producing assignment worked on (the first item of its HIT when it
    held several), up to an uploaded or generated item. Below: every item handed on by
    the assignments on the item's HITs, and theirs, down to the last stage.
    """
    item = Item.objects.select_related("stage", "source_assignment__hit").get(
        pk=item_id, stage__campaign=campaign
    )
    ancestors: list[Item] = []
    current = item
    while current.source_assignment_id is not None and len(ancestors) < MAX_DEPTH:
        parent = (
            Item.objects.select_related("stage", "source_assignment__hit")
            .filter(hits=current.source_assignment.hit_id)  # type: ignore[union-attr]
            .order_by("hititem__position", "id")
            .first()
        )
        if parent is None:
            break
        ancestors.append(parent)
        current = parent
    steps = [ItemStep(item=a, depth=-(n + 1)) for n, a in enumerate(ancestors)][::-1]
    level = [ItemStep(item=item, depth=0)]
    depth = 0
    while level and depth <= MAX_DEPTH:
        by_item = _assignments_on([s.item.pk for s in level])
        next_ids: list[int] = []
        for step in level:
            for assignment in by_item.get(step.item.pk, []):
                produced = [p.pk for p in assignment.produced_items.all()]
                step.assignments.append(AssignmentStep(assignment=assignment, produced=produced))
                next_ids.extend(produced)
        steps.extend(level)
        depth += 1
        level = [
            ItemStep(item=i, depth=depth)
            for i in Item.objects.select_related("stage").filter(pk__in=next_ids).order_by("id")
        ]
    # Ancestors are listed with their own assignments too, so a reader sees who wrote.
    above = [s for s in steps if s.depth < 0]
    if above:
        by_item = _assignments_on([s.item.pk for s in above])
        for step in above:
            step.assignments = [
                AssignmentStep(assignment=a, produced=[p.pk for p in a.produced_items.all()])
                for a in by_item.get(step.item.pk, [])
            ]
    return steps
