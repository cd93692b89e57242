"""Writes for linking: preparing a published linking stage (span proposals, seen-entity
pre-fills, prefetched suggestions), entity agreement with escalation after each
answer, the requester's decision on unresolved items, and planned bonuses."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, cast

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.utils import timezone

from campaigns.design.platform import BonusWanted, platform_for
from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    HITItem,
    HITStatus,
    Item,
    ItemStatus,
    Stage,
)
from campaigns.tasktypes import task_type_get, task_type_names
from campaigns.tasktypes.base import answer_for_item
from campaigns.tasktypes.entity_linking import EntityLinkingTaskType
from campaigns.work.lifecycle import PlacesWanted, hits_add_assignments
from campaigns.work.selectors.loading import hits_items
from linking.agreement import (
    BONUS_RULE,
    BonusRule,
    EscalationRule,
    ItemDecision,
    LinkSet,
    Verdict,
    entity_links,
    item_decide,
    link_set,
    links_from_set,
)
from linking.client import candidate_source
from linking.models import AgreedLink, EntityLinkResolution, ResolutionStatus
from linking.selectors import (
    ANSWERED,
    SUGGESTION_LIMIT,
    seen_links,
    suggestions_search,
    value_spans,
)
from linking.spans import VALUE_KINDS, propose_spans_batch
from qaportal.errors import DomainError

logger = logging.getLogger(__name__)


def escalation_rule_get(stage: Stage) -> EscalationRule | None:
    """The stage's entity-agreement rule, or None (not a linking stage, or no such rule)."""
    if not task_type_get(stage.task_type).links_entities:
        return None
    return EscalationRule.from_json(stage.escalation_rule)


def escalation_key(*, hit_id: int, annotators: int) -> str:
    """Idempotency key of the escalation that brings ``hit_id`` to ``annotators`` places."""
    return f"entity_agreement:{hit_id}:{annotators}"


# --- Preparing a published stage -------------------------------------------------------


@dataclass
class PrefetchResult:
    items_prepared: int = 0
    seen_items: int = 0
    queries: int = 0
    fetched: int = 0
    hits_topped_up: int = 0


def _proposals(texts: list[str], *, whole_text_fallback: bool) -> list[list[dict[str, Any]]]:
    out = []
    for text, spans in zip(texts, propose_spans_batch(texts), strict=True):
        proposed = [span.as_dict() for span in spans]
        if whole_text_fallback and not any(s["kind"] not in VALUE_KINDS for s in proposed):
            # A short answer spaCy finds nothing in ("Up", "Dune") is one entity.
            proposed = [{"start": 0, "end": len(text), "text": text, "kind": "answer"}]
        out.append(proposed)
    return out


# Items per UPDATE of ``_items_data_write`` (two parameters each).
ITEMS_PER_UPDATE = 500


def _items_data_write(items: Sequence[Item]) -> None:
    """Each item's ``data`` written, ``ITEMS_PER_UPDATE`` to an ``UPDATE ... FROM (VALUES
    ...)`` joined on the id: Django's ``bulk_update`` builds a CASE with a branch per
    item, whose building (the ORM's CPU) and evaluation (the database's, a row
    compared with every branch) grow with the square of the batch: a second and more
    of a Mintaka pilot's dry run preparing its linking stages (bench/README.md)."""
    table, data = Item._meta.db_table, Item._meta.get_field("data")
    # PostgreSQL reads the JSON text as jsonb; SQLite keeps JSON as text.
    row = "(%s, %s::jsonb)" if connection.vendor == "postgresql" else "(%s, %s)"
    # SQLite names a VALUES list's columns column1, column2 (and takes no column list).
    columns = "v(id, data)" if connection.vendor == "postgresql" else "v"
    item_id, item_data = (
        ("v.id", "v.data") if connection.vendor == "postgresql" else ("v.column1", "v.column2")
    )
    with connection.cursor() as cursor:
        for start in range(0, len(items), ITEMS_PER_UPDATE):
            batch = items[start : start + ITEMS_PER_UPDATE]
            params: list[Any] = []
            for item in batch:
                params += [item.pk, data.get_db_prep_save(item.data, connection)]
            cursor.execute(
                f"UPDATE {table} SET data = {item_data} "  # noqa: S608 - names from the model
                f"FROM (VALUES {', '.join([row] * len(batch))}) AS {columns} "
                f"WHERE {table}.id = {item_id}",
                params,
            )


def stage_prefetch(*, stage_id: int) -> PrefetchResult:
    """Make a linking stage's items ready to work on; idempotent and cheap to re-run.

    1. Items without ``proposed_spans`` get them (spaCy, batched; an answer in which
       spaCy finds no entity is proposed whole).
    2. Items not yet checked for seen entities get ``prefilled_links`` (spans whose
       exact text was linked with agreement elsewhere in the campaign) and ``seen``
       (every span pre-filled: one annotator is enough).
    3. Suggestions for every entity span's text are fetched into the caches (the
       background client: ``maxlag``, one request per host), so pages open with
       candidates ready. ``WikidataUnavailable`` propagates after the items are
       saved (the task retries; what was fetched stays cached).
    4. With an ``entity_agreement`` rule, published HITs holding a new item get
       places up to ``annotators`` (``hit_add_assignments``, key
       ``entity_agreement:<hit>:<n>``); seen-only HITs keep ``assignments_per_hit``.

    Locking: none beyond ``hits_add_assignments``'s HIT rows; item data is written
    with one UPDATE per 500 items changed (``_items_data_write``).
    """
    result = PrefetchResult()
    stage = Stage.objects.select_related("campaign").get(pk=stage_id)
    if not task_type_get(stage.task_type).links_entities:
        return result
    task_type = cast(EntityLinkingTaskType, task_type_get(stage.task_type))
    items = list(Item.objects.filter(stage=stage).exclude(status=ItemStatus.DROPPED))
    answer_linking = task_type.text_key == "answer"

    need_spans = [i for i in items if "proposed_spans" not in i.data]
    texts = [str(i.data.get("answer" if answer_linking else "question", "")) for i in need_spans]
    for item, spans in zip(
        need_spans, _proposals(texts, whole_text_fallback=answer_linking), strict=True
    ):
        item.data = {**item.data, "proposed_spans": spans}
    changed = {i.pk: i for i in need_spans}

    unchecked = [i for i in items if "seen" not in i.data]
    known = seen_links(
        campaign=stage.campaign,
        texts={s["text"] for i in unchecked for s in task_type.proposed_spans(i.data)},
    )
    for item in unchecked:
        seen, prefilled = seen_prefill(task_type.proposed_spans(item.data), known=known)
        item.data = {**item.data, "seen": seen, "prefilled_links": prefilled}
        result.seen_items += seen
        changed[item.pk] = item
    if changed:
        _items_data_write(list(changed.values()))
    result.items_prepared = len(changed)

    _top_up(stage=stage, items=items, result=result)

    queries = sorted(
        {
            s["text"]
            for i in items
            for s in task_type.proposed_spans(i.data)
            if s.get("kind") not in VALUE_KINDS
        }
    )
    source = candidate_source(background=True)
    for text in queries:
        _, from_cache = suggestions_search(query=text, limit=SUGGESTION_LIMIT, source=source)
        result.queries += 1
        result.fetched += not from_cache
    logger.info("linking stage %s prepared: %s", stage.pk, result)
    return result


def seen_prefill(
    spans: Sequence[Mapping[str, Any]], *, known: Mapping[str, str | None]
) -> tuple[bool, list[dict[str, Any]]]:
    """Whether an item is *seen* and its pre-filled links (Mintaka §4.3: a question
    entity that exactly matches one already linked needs one annotator).

    Seen: every entity span's text was linked with agreement before, or the span
    overlaps one that was (overlapping proposals are alternatives: "Uncharted" and
    "Uncharted series"; the worker links one). Value spans (dates, ordinals,
    numbers, money, ...) are not entities to link and never make an item new; an
    item with no entity span is seen (nothing new in it). The pre-filled links are
    the known spans, longest first, none overlapping another (a worker's answer
    may not overlap).
    """
    entity_spans = [s for s in spans if s.get("kind") not in VALUE_KINDS]
    hits = [s for s in entity_spans if s["text"] in known]
    prefilled: list[dict[str, Any]] = []
    for s in sorted(hits, key=lambda s: (s["start"] - s["end"], s["start"])):
        if all(s["end"] <= p["start"] or s["start"] >= p["end"] for p in prefilled):
            qid = known[s["text"]]
            prefilled.append(
                {
                    "start": s["start"],
                    "end": s["end"],
                    "text": s["text"],
                    "qid": qid,
                    "none": qid is None,
                }
            )
    prefilled.sort(key=lambda p: p["start"])
    seen = all(
        s["text"] in known
        or any(s["start"] < p["end"] and p["start"] < s["end"] for p in prefilled)
        for s in entity_spans
    )
    return seen, prefilled


def _top_up(*, stage: Stage, items: list[Item], result: PrefetchResult) -> None:
    rule = escalation_rule_get(stage)
    if rule is None:
        return
    seen = {i.pk: bool(i.data.get("seen")) for i in items}
    hits: dict[int, bool] = {}
    for hit_id, item_id in HITItem.objects.filter(
        hit__stage=stage, hit__status=HITStatus.PUBLISHED
    ).values_list("hit_id", "item_id"):
        hits[hit_id] = hits.get(hit_id, True) and seen.get(item_id, False)
    maxima = dict(HIT.objects.filter(pk__in=hits).values_list("pk", "max_assignments"))
    places = []
    for hit_id, all_seen in sorted(hits.items()):
        wanted = rule.seen_annotators if all_seen else rule.annotators
        if maxima[hit_id] < wanted:
            places.append(
                PlacesWanted(
                    hit_id=hit_id,
                    count=wanted - maxima[hit_id],
                    reason=f"entity agreement: {wanted} annotators for new entities",
                    key=escalation_key(hit_id=hit_id, annotators=wanted),
                )
            )
    hits_add_assignments(wanted=places)
    result.hits_topped_up += len(places)


# --- Agreement and escalation ------------------------------------------------------------


@dataclass
class AgreementCheck:
    """What ``hit_entity_agreement_check`` did: ``state`` is ``not_applicable``,
    ``waiting`` (answers still to come), ``escalated`` or ``decided``."""

    hit_id: int
    state: str
    added: int = 0
    decisions: dict[int, ItemDecision] = field(default_factory=dict)


def hit_entity_agreement_check(*, hit_id: int) -> AgreementCheck:
    """Judge entity agreement on a HIT whose answers are all in; escalate or decide.

    Runs after each stored answer (``linking.entity_agreement_check``). While a
    place is open or an assignment is at work, it waits. Then, per item and within
    it per entity (``linking.agreement.item_decide``: a pre-filled, seen entity is
    decided by its first annotation, new ones need two; links on value spans do not
    count): agreement resolves the item (its links
    become ``AgreedLink`` rows for the seen-entity shortcut, and agreeing
    annotators get planned ``per_agreed_entity`` bonuses); disagreement below the
    stage's ``max`` adds places through ``hit_add_assignments`` with the key
    ``entity_agreement:<hit>:<places>``, so a re-run adds nothing; at ``max`` the
    item goes to review (``EntityLinkResolution.status = review``; the item stays
    published). Rejected answers do not count. Items the requester decided are
    left alone. Idempotent.

    Locking: the HIT row for the whole check (two answers landing at once are
    judged one after the other), the same row ``hit_add_assignments`` locks.
    """
    return hits_entity_agreement_check(hit_ids=[hit_id])[0]


def hits_entity_agreement_check(*, hit_ids: Sequence[int]) -> list[AgreementCheck]:
    """``hit_entity_agreement_check`` of each of ``hit_ids``, in one go: each HIT judged
    as there, with the reads and writes of all of them shared (a handful of queries in
    all instead of a dozen per HIT). For a queue of checks drained at once (the crowd
    simulator's round of submissions); the checks, in the order of ``hit_ids``.

    Locking: the HIT rows, in id order, then the items' resolution rows, for the one
    transaction (the escalated HITs get their places from ``hits_add_assignments``, given
    the rows locked here).
    """
    ids = list(dict.fromkeys(hit_ids))
    checks = {hit_id: AgreementCheck(hit_id, "not_applicable") for hit_id in ids}
    with transaction.atomic():
        # One read: the HIT rows locked in id order (theirs alone, not their stages'),
        # with their stages and campaigns, one instance per stage.
        hits = list(
            HIT.objects.select_for_update(of=("self",))
            .select_related("stage__campaign")
            .filter(pk__in=ids)
            .order_by("pk")
        )
        stages: dict[int, Stage] = {}
        for hit in hits:
            hit.stage = stages.setdefault(hit.stage_id, hit.stage)
        rules = {pk: escalation_rule_get(stage) for pk, stage in stages.items()}
        wanted = [hit for hit in hits if rules[hit.stage_id] is not None]
        if wanted:
            _checks_run(checks=checks, hits=wanted, rules=rules)
    return [checks[hit_id] for hit_id in hit_ids]


def _checks_run(
    *,
    checks: dict[int, AgreementCheck],
    hits: list[HIT],
    rules: Mapping[int, EscalationRule | None],
) -> None:
    now = timezone.now()
    # Every assignment of the HITs in one read: those at work, the answers and the
    # rejected ones (which hold their place).
    by_hit: dict[int, list[Assignment]] = {hit.pk: [] for hit in hits}
    # Only the columns a check reads (not the telemetry and review details).
    for assignment in (
        Assignment.objects.filter(
            hit_id__in=by_hit,
            status__in=(AssignmentStatus.ACCEPTED, *ANSWERED, AssignmentStatus.REJECTED),
        )
        .only("id", "hit_id", "worker_id", "status", "answers", "submitted_at")
        .order_by("submitted_at", "id")
    ):
        by_hit[assignment.hit_id].append(assignment)
    ready = []
    for hit in hits:
        open_places = (
            hit.status == HITStatus.PUBLISHED
            and hit.places_left > 0
            and (hit.expires_at is None or hit.expires_at > now)
        )
        if open_places or any(a.status == AssignmentStatus.ACCEPTED for a in by_hit[hit.pk]):
            checks[hit.pk].state = "waiting"
        else:
            ready.append(hit)
    if not ready:
        return
    items_of = hits_items(hit_ids=[hit.pk for hit in ready])
    decided = set(
        EntityLinkResolution.objects.select_for_update()
        .filter(
            item_id__in=[i["id"] for items in items_of.values() for i in items],
            status=ResolutionStatus.DECIDED,
        )
        .values_list("item_id", flat=True)
    )
    store = _Outcomes()
    for hit in ready:
        rule = rules[hit.stage_id]
        assert rule is not None
        answers = [a for a in by_hit[hit.pk] if a.status in ANSWERED]
        rejected = sum(a.status == AssignmentStatus.REJECTED for a in by_hit[hit.pk])
        checks[hit.pk] = _hit_judge(
            hit=hit, rule=rule, answers=answers, rejected=rejected, items=items_of[hit.pk],
            decided=decided, now=now, store=store,
        )  # fmt: skip
    store.write(locked={hit.pk: hit for hit in ready})


def _hit_judge(
    *,
    hit: HIT,
    rule: EscalationRule,
    answers: list[Assignment],
    rejected: int,
    items: list[dict[str, Any]],
    decided: set[int],
    now: Any,
    store: _Outcomes,
) -> AgreementCheck:
    """One HIT's check, its answers all in (and ``rejected`` answers): each item's verdict,
    and the outcomes and the places wanted when more annotators are needed, given to
    ``store``."""
    stage = hit.stage
    task_type = cast(EntityLinkingTaskType, task_type_get(stage.task_type))
    check = AgreementCheck(hit.pk, "decided")
    per_item: dict[int, tuple[dict[str, Any], list[tuple[Assignment, LinkSet]]]] = {}
    for item in items:
        if item["id"] in decided:
            continue
        given = []
        for assignment in answers:
            entry = answer_for_item(assignment.answers, item)
            if entry is not None:
                given.append((assignment, link_set(entry.get("links", []))))
        data = item["data"]
        values = value_spans(task_type.proposed_spans(data))
        given = [(assignment, entity_links(s, values=values)) for assignment, s in given]
        # Per entity (§4.3): the pre-filled links of a question with new entities too
        # are its seen ones, decided by their first annotation.
        check.decisions[item["id"]] = item_decide(
            sets=[s for _, s in given],
            rule=rule,
            prefilled=link_set(data.get("prefilled_links") or []),
            seen=bool(data.get("seen")),
            values=values,
        )
        per_item[item["id"]] = (item, given)
    more = [d.needed for d in check.decisions.values() if d.verdict == Verdict.MORE]
    if more:
        # Places for the answers still missing (rejected ones do not count, and
        # hold their place: the cap on places grows by them).
        count = max(1, max(more) - len(answers))
        target = hit.max_assignments + count
        expired = hit.expires_at is not None and hit.expires_at <= now
        if (
            expired
            or hit.status not in (HITStatus.PUBLISHED, HITStatus.COMPLETED)
            or (target > rule.max + rejected)
        ):
            # No one can answer any more: the requester decides.
            check.decisions = {
                k: ItemDecision(Verdict.REVIEW) if d.verdict == Verdict.MORE else d
                for k, d in check.decisions.items()
            }
            more = []
    if more:
        store.places.append(
            PlacesWanted(
                hit_id=hit.pk,
                count=count,
                reason=f"entity agreement: {max(more)} annotators needed",
                key=escalation_key(hit_id=hit.pk, annotators=target),
            )
        )
        check.state, check.added = "escalated", count
    for item_id, decision in check.decisions.items():
        item, given = per_item[item_id]
        store.add(stage=stage, hit=hit, item=item, given=given, decision=decision)
    return check


@dataclass
class _Outcomes:
    """What the checks decided, written at once (``write``): the places added where more
    annotators are needed (``hits_add_assignments``), then in three statements each
    item's resolution (inserted or updated), the agreed links (seen-entity shortcut); then
    the bonuses of the annotators who agreed, asked of the platform per stage
    (``Platform.bonuses_pay``)."""

    places: list[PlacesWanted] = field(default_factory=list)
    resolutions: list[EntityLinkResolution] = field(default_factory=list)
    agreed: list[AgreedLink] = field(default_factory=list)
    bonuses: dict[int, tuple[Stage, list[BonusWanted]]] = field(default_factory=dict)

    def add(
        self,
        *,
        stage: Stage,
        hit: HIT,
        item: dict[str, Any],
        given: list[tuple[Assignment, LinkSet]],
        decision: ItemDecision,
    ) -> None:
        status = {
            Verdict.RESOLVED: ResolutionStatus.RESOLVED,
            Verdict.REVIEW: ResolutionStatus.REVIEW,
            Verdict.MORE: ResolutionStatus.PENDING,
        }[decision.verdict]
        texts = _span_texts(item, given)
        links = links_from_set(decision.links, texts=texts) if decision.links is not None else None
        self.resolutions.append(
            EntityLinkResolution(
                item_id=item["id"],
                stage=stage,
                hit=hit,
                status=status,
                seen=bool(item["data"].get("seen")),
                annotators=len(given),
                links=links,
                source=decision.source,
            )
        )
        if decision.verdict != Verdict.RESOLVED or links is None or decision.links is None:
            return
        self.agreed.extend(
            _agreed_links(campaign_id=stage.campaign_id, item_id=item["id"], links=links)
        )
        agreeing = [a for a, s in given if s == decision.links]
        self.bonuses.setdefault(stage.pk, (stage, []))[1].extend(
            _bonuses(stage=stage, item_id=item["id"], agreed=decision.links, assignments=agreeing)
        )

    def write(self, *, locked: Mapping[int, HIT]) -> None:
        """``locked``: the checked HITs as ``_checks_run`` locked them, with their stages."""
        hits_add_assignments(wanted=self.places, locked=locked)
        if self.resolutions:
            # An item on two HITs judged here: the later check's outcome, as one after
            # the other would leave it (one statement may not update a row twice).
            last = {r.item_id: r for r in self.resolutions}
            EntityLinkResolution.objects.bulk_create(
                list(last.values()),
                update_conflicts=True,
                unique_fields=["item"],
                update_fields=[
                    "stage", "hit", "status", "seen", "annotators", "links", "source", "updated_at"
                ],
            )  # fmt: skip
        if self.agreed:
            AgreedLink.objects.bulk_create(self.agreed, ignore_conflicts=True)
        for stage, bonuses in self.bonuses.values():
            if bonuses:
                platform_for(stage).bonuses_pay(stage=stage, bonuses=bonuses)


def _span_texts(
    item: dict[str, Any], given: Sequence[tuple[Assignment, LinkSet]]
) -> dict[tuple[int, int], str]:
    texts: dict[tuple[int, int], str] = {}
    for link in item["data"].get("prefilled_links", []):
        texts[(link["start"], link["end"])] = link["text"]
    for assignment, _ in given:
        entry = answer_for_item(assignment.answers, item) or {}
        for link in entry.get("links", []):
            texts.setdefault((int(link["start"]), int(link["end"])), str(link.get("text", "")))
    return texts


def _agreed_links(
    *, campaign_id: int, item_id: int, links: list[dict[str, Any]]
) -> list[AgreedLink]:
    return [
        AgreedLink(
            campaign_id=campaign_id,
            item_id=item_id,
            start=link["start"],
            end=link["end"],
            text=link["text"][:500],
            qid=link["qid"],
        )
        for link in links
    ]


def bonus_key(*, assignment_id: int, item_id: int) -> str:
    """Idempotency key of the ``per_agreed_entity`` bonus of one answer on one item."""
    return f"bonus:{BONUS_RULE}:assignment:{assignment_id}:item:{item_id}"


def _bonuses(
    *, stage: Stage, item_id: int, agreed: LinkSet, assignments: list[Assignment]
) -> list[BonusWanted]:
    """The bonuses of the annotators who agreed, for the platform to pay
    (``Platform.bonuses_pay``: the local workforce plans them in the ledger).

    Idempotent per ``bonus_key`` (the platform pays a key once); one bonus per
    answer and item, the stage's ``per_agreed_entity`` rules summed.
    """
    rules = BonusRule.all_from_json(stage.bonus_rules)
    amount = sum((rule.amount_for(agreed) for rule in rules), Decimal("0"))
    if amount <= 0:
        return []
    return [
        BonusWanted(
            key=bonus_key(assignment_id=a.pk, item_id=item_id),
            assignment_id=a.pk,
            worker_id=a.worker_id,
            amount=amount,
            reason=f"{BONUS_RULE}: agreed entities on item {item_id}",
        )
        for a in assignments
    ]


def entity_agreement_sweep(*, stage_id: int | None = None) -> int:
    """Check every HIT of entity-agreement stages that has answers and an item not yet
    resolved or decided (a safety net for beat: a check lost with its worker); the
    number of HITs checked. Idempotent (see ``hit_entity_agreement_check``)."""
    stages = Stage.objects.filter(task_type__in=task_type_names(links_entities=True))
    if stage_id is not None:
        stages = stages.filter(pk=stage_id)
    checked = 0
    for stage in stages:
        if escalation_rule_get(stage) is None:
            continue
        final = EntityLinkResolution.objects.filter(
            stage=stage,
            status__in=[
                ResolutionStatus.RESOLVED,
                ResolutionStatus.REVIEW,
                ResolutionStatus.DECIDED,
            ],
        ).values("item_id")
        hit_ids = (
            HITItem.objects.filter(hit__stage=stage, hit__assignments__status__in=ANSWERED)
            .exclude(item_id__in=final)
            .values_list("hit_id", flat=True)
            .distinct()
        )
        for hit_id in sorted(set(hit_ids)):
            hit_entity_agreement_check(hit_id=hit_id)
            checked += 1
    return checked


# --- The requester's decision ------------------------------------------------------------


def entity_link_decide(
    *, item: Item, links: list[Mapping[str, Any]], decided_by: AbstractBaseUser | None
) -> EntityLinkResolution:
    """The requester settles an item of the review queue with ``links`` (``start``,
    ``end``, ``text``, ``qid`` or ``none``), validated as a worker's answer would be.

    The links become agreed links (seen-entity shortcut); no bonus is planned.
    Idempotent: deciding again replaces the decision's links (earlier agreed links
    of the item are replaced too). Locking: the resolution row.
    """
    stage = item.stage
    task_type = task_type_get(stage.task_type)
    answer = {"items": [{"external_id": item.external_id, "links": [dict(x) for x in links]}]}
    problems = task_type.validate_answer(
        answer=answer,
        items=[{"id": item.pk, "external_id": item.external_id, "data": item.data}],
        config=stage.config,
    )
    if problems:
        raise DomainError(
            "These links are not valid.", errors={p.path: [p.message] for p in problems}
        )
    agreed = link_set(links)
    texts = {(int(x["start"]), int(x["end"])): str(x["text"]) for x in links}
    stored = links_from_set(agreed, texts=texts)
    with transaction.atomic():
        hit_id = (
            HITItem.objects.filter(item=item)
            .order_by("-hit_id")
            .values_list("hit_id", flat=True)
            .first()
        )
        if hit_id is None:
            raise DomainError("This item was never published.", errors={"item": ["unpublished"]})
        resolution, _ = EntityLinkResolution.objects.select_for_update().update_or_create(
            item=item,
            defaults={
                "stage": stage,
                "hit_id": hit_id,
                "status": ResolutionStatus.DECIDED,
                "links": stored,
                "source": "requester",
                "decided_by_id": getattr(decided_by, "pk", None),
            },
        )
        AgreedLink.objects.filter(item=item).delete()
        AgreedLink.objects.bulk_create(
            _agreed_links(campaign_id=stage.campaign_id, item_id=item.pk, links=stored),
            ignore_conflicts=True,
        )
    return resolution
