"""Reads for linking: suggestions (cache first), redirect targets, agreement per stage,
the unresolved items awaiting the requester (with one annotation's links and the ids'
labels), and links agreed elsewhere."""

from __future__ import annotations

import hashlib
import logging
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypedDict

from django.conf import settings
from django.core.cache import cache
from django.db.models import Q

from campaigns.models import Assignment, AssignmentStatus, Campaign, HITItem, Item, Stage
from campaigns.tasktypes.base import answer_for_item
from linking.agreement import (
    AgreementSummary,
    LinkSet,
    agreement_summary,
    entity_links,
    link_set,
)
from linking.client import (
    candidate_source,
    live_search_allowed,
    live_search_source,
    offline_index,
)
from linking.models import AgreedLink, EntityLinkResolution, ResolutionStatus, WikidataCacheEntry
from linking.spans import VALUE_KINDS
from linking.types import CandidateSource, is_qid, normalise_query
from linking.wikidata import WikidataError

logger = logging.getLogger(__name__)

# Hits per suggestion list; the prefetch asks for the same number, so its cached
# pages are the ones the endpoint reads.
SUGGESTION_LIMIT = 10
SUGGESTION_CACHE_PREFIX = "linking:sg:v1:"
DEFAULT_SUGGESTION_CACHE_TTL = 24 * 3600
# After a live search fails, the search box uses the offline index alone this long
# (seconds): a down or slow Wikidata costs one timeout, not one per keystroke.
LIVE_DOWN_KEY = "linking:sg:live-down"
LIVE_DOWN_SECONDS = 60
ANSWERED = (AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED)


class Suggestion(TypedDict):
    id: str
    label: str
    description: str


def suggestion_cache_key(
    *, query: str, language: str = "en", limit: int = SUGGESTION_LIMIT, live: bool = False
) -> str:
    """The shared-cache key of one suggestion list (the normalised query, hashed);
    ``live``: the offline index's hits merged with Wikidata's own (``worker_search``)."""
    raw = f"{language}|{limit}|{normalise_query(query)}" + ("|live" if live else "")
    return SUGGESTION_CACHE_PREFIX + hashlib.sha1(raw.encode(), usedforsecurity=False).hexdigest()


def suggestions_search(
    *,
    query: str,
    language: str = "en",
    limit: int = SUGGESTION_LIMIT,
    source: CandidateSource | None = None,
) -> tuple[list[Suggestion], bool]:
    """Ranked candidates ``[{id, label, description}]`` for ``query`` and whether they
    came from the shared cache (Redis).

    Cache first: the shared cache, then the candidate source (the offline index, or
    the live client, which reads its database cache before asking Wikidata); what the
    source answers is put in the shared cache for ``LINKING_SUGGESTION_CACHE_TTL``
    seconds. ``WikidataError`` propagates (the caller decides how to degrade).
    """
    if not normalise_query(query):
        return [], True
    key = suggestion_cache_key(query=query, language=language, limit=limit)
    cached = cache.get(key)
    if cached is not None:
        return cached, True
    page = (source or candidate_source()).search(query, language=language, limit=limit)
    hits = [
        Suggestion(id=h["id"], label=h["label"], description=h["description"]) for h in page.hits
    ]
    ttl = int(getattr(settings, "LINKING_SUGGESTION_CACHE_TTL", DEFAULT_SUGGESTION_CACHE_TTL))
    cache.set(key, hits, ttl)
    return hits, False


def worker_search_is_live() -> bool:
    """Whether the worker's search box asks Wikidata itself: the candidate source is
    live, or the offline index is backed by live search (``LINKING_LIVE_SEARCH``)."""
    return not getattr(settings, "WIKIDATA_OFFLINE", False) or live_search_allowed()


def worker_search_cache_key(*, query: str, limit: int = SUGGESTION_LIMIT) -> str:
    """The shared-cache key under which ``worker_search`` keeps ``query``'s list."""
    offline = bool(getattr(settings, "WIKIDATA_OFFLINE", False))
    return suggestion_cache_key(query=query, limit=limit, live=offline and live_search_allowed())


def worker_search(
    *, query: str, language: str = "en", limit: int = SUGGESTION_LIMIT
) -> tuple[list[Suggestion], bool]:
    """The worker's search box: ranked candidates for ``query`` and whether Wikidata
    itself was searched (False: the offline index alone, which holds only some items).

    With a live source, ``suggestions_search`` through the interactive client (one
    try within ``LINKING_LIVE_SEARCH_TIMEOUT``); ``WikidataError`` propagates. With
    the offline index and ``LINKING_LIVE_SEARCH`` on, the index's hits merged with
    Wikidata's (``wbsearchentities``, cached in the database and, merged, in the
    shared cache); when Wikidata fails or is slow, the index's hits alone, and live
    search rests for ``LIVE_DOWN_SECONDS``.
    """
    live = live_search_source()
    if not getattr(settings, "WIKIDATA_OFFLINE", False):
        hits, _ = suggestions_search(query=query, language=language, limit=limit, source=live)
        return hits, True
    offline_hits, _ = suggestions_search(query=query, language=language, limit=limit)
    if live is None or not normalise_query(query):
        return offline_hits, False
    key = suggestion_cache_key(query=query, language=language, limit=limit, live=True)
    cached = cache.get(key)
    if cached is not None:
        return cached, True
    if cache.get(LIVE_DOWN_KEY):
        return offline_hits, False
    try:
        page = live.search(query, language=language, limit=limit)
    except WikidataError as exc:
        logger.warning("live search for %r failed, offline list only: %s", query, exc)
        cache.set(LIVE_DOWN_KEY, 1, LIVE_DOWN_SECONDS)
        return offline_hits, False
    live_hits = [
        Suggestion(id=h["id"], label=h["label"], description=h["description"]) for h in page.hits
    ]
    merged = _merge_hits(offline_hits, live_hits, limit=limit)
    ttl = int(getattr(settings, "LINKING_SUGGESTION_CACHE_TTL", DEFAULT_SUGGESTION_CACHE_TTL))
    cache.set(key, merged, ttl)
    return merged, True


def _merge_hits(
    offline: list[Suggestion], live: list[Suggestion], *, limit: int
) -> list[Suggestion]:
    """The index's best half first (its descriptions name the campaign's questions),
    then Wikidata's ranking, then the rest of the index; each id once."""
    half = (limit + 1) // 2
    out: dict[str, Suggestion] = {}
    for hit in offline[:half] + live + offline[half:]:
        out.setdefault(hit["id"], hit)
    return list(out.values())[:limit]


def qid_targets(*, qids: Iterable[str], source: CandidateSource | None = None) -> dict[str, str]:
    """For each well-formed id that is a redirect (a merged item), its target; ids that
    are no redirect, unknown or malformed are left out. When Wikidata cannot be
    asked, nothing is resolved (logged): a submission never waits on Wikidata failing."""
    wanted = sorted({q for q in qids if is_qid(q)})
    if not wanted:
        return {}
    try:
        entities = (source or candidate_source()).get_entities(wanted)
    except WikidataError as exc:
        logger.warning("redirects of %s not resolved: %s", wanted, exc)
        return {}
    return {
        qid: entity["id"]
        for qid, entity in entities.items()
        if entity is not None and entity["id"] != qid
    }


def seen_links(*, campaign: Campaign, texts: Iterable[str]) -> dict[str, str | None]:
    """For each span text already linked with agreement in ``campaign``, its id (None:
    NIL); when one text was linked to several ids, the most frequent (then the first)."""
    wanted = set(texts)
    if not wanted:
        return {}
    counts: dict[str, Counter[str | None]] = defaultdict(Counter)
    rows = AgreedLink.objects.filter(campaign=campaign, text__in=wanted).order_by("id")
    for text, qid in rows.values_list("text", "qid"):
        counts[text][qid] += 1
    # most_common keeps first-seen order among equal counts.
    return {text: c.most_common(1)[0][0] for text, c in counts.items()}


def value_spans(spans: Sequence[Mapping[str, Any]]) -> frozenset[tuple[int, int]]:
    """The ``(start, end)`` of an item's value spans (dates, numbers, ordinals, ...),
    whose links do not count in agreement: no one links a value (Mintaka's release
    takes them from the spans). A span also proposed as an entity is not one."""
    entities = {(s["start"], s["end"]) for s in spans if s.get("kind") not in VALUE_KINDS}
    return frozenset(
        (s["start"], s["end"])
        for s in spans
        if s.get("kind") in VALUE_KINDS and (s["start"], s["end"]) not in entities
    )


# HIT items read at once by ``_stage_link_sets``, with their HITs' answers.
LINK_SETS_CHUNK = 5000


def _stage_link_sets(
    *, stage: Stage, chunk: int | None = None
) -> Iterator[tuple[list[LinkSet], LinkSet | None]]:
    """Each item's annotators' link sets (submission order) and its pre-filled set, in
    item order; ``chunk`` HIT items at a time with the answers of their HITs, so a
    large stage's answers are never held at once (``chunk``: ``LINK_SETS_CHUNK`` unless
    given)."""
    chunk = chunk or LINK_SETS_CHUNK
    rows = HITItem.objects.filter(hit__stage=stage).order_by("item_id", "pk")
    last: tuple[int, int] | None = None
    while True:
        page = (
            rows
            if last is None
            else rows.filter(Q(item_id__gt=last[0]) | Q(item_id=last[0], pk__gt=last[1]))
        )
        batch = list(
            page.values_list("item_id", "pk", "hit_id", "item__external_id", "item__data")[:chunk]
        )
        if not batch:
            return
        last = (batch[-1][0], batch[-1][1])
        answers: dict[int, list[Any]] = defaultdict(list)
        for hit_id, answer in (
            Assignment.objects.filter(hit_id__in={r[2] for r in batch}, status__in=ANSWERED)
            .order_by("submitted_at", "id")
            .values_list("hit_id", "answers")
        ):
            answers[hit_id].append(answer)
        for _item_id, _pk, hit_id, external_id, data in batch:
            item = {"external_id": external_id}
            sets = []
            for answer in answers.get(hit_id, []):
                entry = answer_for_item(answer, item)
                if entry is not None:
                    sets.append(link_set(entry.get("links", [])))
            values = value_spans(data.get("proposed_spans") or [])
            prefilled = link_set(data.get("prefilled_links", [])) if data.get("seen") else None
            yield [entity_links(s, values=values) for s in sets], prefilled
        if len(batch) < chunk:
            return


def stage_entity_agreement(*, stage: Stage) -> AgreementSummary:
    """Agreement on ``stage`` after the first two and after at most three annotators
    of each item (``AgreementSummary``: counts, ``after_2`` and ``after_3`` shares)."""
    return agreement_summary(_stage_link_sets(stage=stage))


def link_review_queue(*, campaign: Campaign, stage: Stage | None = None) -> list[dict[str, Any]]:
    """Items the annotators did not agree on, up to the stage's maximum: the
    requester's to decide (``linking.services.entity_link_decide``).

    Each ``{"resolution", "item", "stage", "annotations": [{"assignment_id",
    "worker", "links"}]}``, oldest first.
    """
    resolutions = list(
        EntityLinkResolution.objects.filter(
            stage__campaign=campaign, status=ResolutionStatus.REVIEW
        )
        .filter(**({"stage": stage} if stage is not None else {}))
        .select_related("item", "stage")
        .order_by("updated_at", "id")
    )
    by_hit: dict[int, list[Assignment]] = defaultdict(list)
    for assignment in (
        Assignment.objects.filter(hit_id__in={r.hit_id for r in resolutions}, status__in=ANSWERED)
        .select_related("worker")
        .order_by("submitted_at", "id")
    ):
        by_hit[assignment.hit_id].append(assignment)
    queue = []
    for resolution in resolutions:
        item = {"external_id": resolution.item.external_id}
        annotations = []
        for assignment in by_hit.get(resolution.hit_id, []):
            entry = answer_for_item(assignment.answers, item)
            if entry is not None:
                annotations.append(
                    {
                        "assignment_id": assignment.pk,
                        "worker": assignment.worker.pseudonym,
                        "links": entry.get("links", []),
                    }
                )
        queue.append(
            {
                "resolution": resolution,
                "item": resolution.item,
                "stage": resolution.stage,
                "annotations": annotations,
            }
        )
    return queue


# Labels come from the Wikidata cache and the bundled index only: a page never waits on
# Wikidata for them.
LABEL_LANGUAGE = "en"


def entity_labels(*, qids: Iterable[str]) -> dict[str, str]:
    """Labels of ``qids`` from the Wikidata cache (one query), then from the bundled
    offline index; an id neither knows has no entry. No request to Wikidata."""
    wanted = {q for q in qids if q}
    if not wanted:
        return {}
    keys = {f"{LABEL_LANGUAGE}:{q}": q for q in wanted}
    labels: dict[str, str] = {}
    rows = WikidataCacheEntry.objects.filter(
        kind=WikidataCacheEntry.Kind.ENTITY, key__in=list(keys)
    ).values_list("key", "response")
    for key, response in rows:
        entity = response.get("entity") if isinstance(response, Mapping) else None
        if isinstance(entity, Mapping) and entity.get("label"):
            labels[keys[key]] = str(entity["label"])
    missing = [q for q in wanted if q not in labels and is_qid(q)]
    if missing:
        for qid, entity in offline_index().get_entities(missing).items():
            if entity and entity.get("label"):
                labels[qid] = str(entity["label"])
    return labels


def annotation_links(*, item: Item, assignment_id: int) -> list[Mapping[str, Any]] | None:
    """The links one annotation (an assignment of a HIT holding ``item``) gave ``item``;
    None if that assignment holds no answer for it."""
    hit_ids = HITItem.objects.filter(item=item).values("hit_id")
    assignment = Assignment.objects.filter(pk=assignment_id, hit_id__in=hit_ids).first()
    entry = (
        None
        if assignment is None
        else answer_for_item(assignment.answers, {"external_id": item.external_id})
    )
    if entry is None or not isinstance(entry.get("links"), list):
        return None
    return [dict(link) for link in entry["links"] if isinstance(link, Mapping)]


def links_resolve_redirects(
    links: list[dict[str, Any]], *, targets: Mapping[str, str]
) -> list[dict[str, Any]]:
    """``links`` with each redirected id replaced by its target (``redirected_from``
    keeps the id the worker gave)."""
    out = []
    for link in links:
        qid = link.get("qid")
        if isinstance(qid, str) and is_qid(qid) and qid in targets:
            link = {**link, "qid": targets[qid], "redirected_from": qid}
        out.append(link)
    return out


def entries_resolve_redirects(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Link entries with redirected ids replaced by their targets (one batched lookup);
    registered with the entity-linking task types at start-up."""
    qids = [str(link["qid"]) for e in entries for link in e["links"] if link.get("qid")]
    if not qids:
        return entries
    targets = qid_targets(qids=qids)
    if not targets:
        return entries
    return [{**e, "links": links_resolve_redirects(e["links"], targets=targets)} for e in entries]
