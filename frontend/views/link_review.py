"""The entity-link review queue: items three annotators could not settle, and the
requester's decision (one annotator's links, or links entered by hand)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from campaigns.models import Assignment, Campaign, HITItem, Item, Stage
from campaigns.services import DomainError
from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.base import answer_for_item
from frontend.views.common import campaign_or_404, request_user
from linking.client import offline_index
from linking.hooks import LINKING_TASK_TYPES
from linking.models import WikidataCacheEntry
from linking.selectors import link_review_queue
from linking.services import entity_link_decide
from linking.types import is_qid

# Labels come from the Wikidata cache only: the page never waits on Wikidata.
LABEL_LANGUAGE = "en"


def cached_labels(qids: set[str]) -> dict[str, str]:
    """Labels of the ids the Wikidata cache holds (one query, no request to Wikidata)."""
    if not qids:
        return {}
    keys = {f"{LABEL_LANGUAGE}:{q}": q for q in qids}
    labels: dict[str, str] = {}
    rows = WikidataCacheEntry.objects.filter(
        kind=WikidataCacheEntry.Kind.ENTITY, key__in=list(keys)
    ).values_list("key", "response")
    for key, response in rows:
        entity = response.get("entity") if isinstance(response, Mapping) else None
        if isinstance(entity, Mapping) and entity.get("label"):
            labels[keys[key]] = str(entity["label"])
    return labels


def link_review_rows(*, campaign: Campaign, stage: Stage | None) -> list[dict[str, Any]]:
    """The review queue of ``linking.selectors.link_review_queue`` with each link's
    cached label, and the annotators' link sets as JSON (to start a hand edit from)."""
    if stage is not None and stage.task_type not in LINKING_TASK_TYPES:
        return []
    queue = link_review_queue(campaign=campaign, stage=stage)
    qids = {
        str(link["qid"])
        for entry in queue
        for annotation in entry["annotations"]
        for link in annotation["links"]
        if isinstance(link, Mapping) and link.get("qid")
    }
    labels = entity_labels(qids)
    rows = []
    for entry in queue:
        item: Item = entry["item"]
        data = item.data if isinstance(item.data, Mapping) else {}
        task_type = task_type_get(entry["stage"].task_type)
        text = task_type.linked_text(data) if hasattr(task_type, "linked_text") else ""
        given = [
            [link for link in annotation["links"] if isinstance(link, Mapping)]
            for annotation in entry["annotations"]
        ]
        # How many annotators gave each (span, id): what they agree on, what they do not.
        counts = Counter(_link_key(link) for links in given for link in set_of(links))
        annotations = []
        for n, (annotation, links) in enumerate(zip(entry["annotations"], given, strict=True), 1):
            shown = [
                {
                    **link,
                    "label": labels.get(str(link.get("qid") or ""), ""),
                    "agreed": counts[_link_key(link)] == len(given),
                }
                for link in sorted(
                    links, key=lambda lk: (_int(lk.get("start")), _int(lk.get("end")))
                )
            ]
            annotations.append(
                {
                    **annotation,
                    "number": n,
                    "shown": shown,
                    "segments": highlighted_segments(text, shown),
                    "json": json.dumps(annotation["links"], ensure_ascii=False),
                }
            )
        rows.append(
            {
                "item": item,
                "stage": entry["stage"],
                "question": str(data.get("question", "")),
                "answer": str(data.get("answer", "")),
                "text_label": "answer" if text and text == data.get("answer") else "question",
                "annotations": annotations,
                "start_json": annotations[0]["json"] if annotations else "[]",
            }
        )
    return rows


def entity_labels(qids: set[str]) -> dict[str, str]:
    """Labels from the Wikidata cache, then from the bundled offline index (both local:
    the page never waits on Wikidata); an id neither knows has no label."""
    labels = cached_labels(qids)
    missing = [q for q in qids if q not in labels and is_qid(q)]
    if missing:
        for qid, entity in offline_index().get_entities(missing).items():
            if entity and entity.get("label"):
                labels[qid] = str(entity["label"])
    return labels


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


def _link_key(link: Mapping[str, Any]) -> tuple[int, int, str]:
    return (
        _int(link.get("start")),
        _int(link.get("end")),
        "" if link.get("none") else str(link.get("qid")),
    )


def set_of(links: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``links`` with one link per (span, id): a doubled link counts once."""
    seen: dict[tuple[int, int, str], Mapping[str, Any]] = {}
    for link in links:
        seen.setdefault(_link_key(link), link)
    return list(seen.values())


def highlighted_segments(text: str, links: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``text`` cut into pieces, each linked piece with its link (the first that covers
    it: an annotator's spans do not overlap once validated). Links whose offsets do not
    fit the text are left out of the highlighting (they still show in the list)."""
    fitting = sorted(
        (lk for lk in links if 0 <= _int(lk.get("start")) < _int(lk.get("end")) <= len(text)),
        key=lambda lk: (_int(lk.get("start")), _int(lk.get("end"))),
    )
    pieces: list[dict[str, Any]] = []
    at = 0
    for link in fitting:
        start, end = int(link["start"]), int(link["end"])
        if start < at:
            continue
        if start > at:
            pieces.append({"text": text[at:start], "link": None})
        pieces.append({"text": text[start:end], "link": link})
        at = end
    if at < len(text):
        pieces.append({"text": text[at:], "link": None})
    return pieces


def annotator_links(*, item: Item, assignment_id: int) -> list[Mapping[str, Any]] | None:
    """The links one annotator (an assignment of a HIT holding ``item``) gave ``item``;
    None if that assignment does not hold an answer for it."""
    hit_ids = HITItem.objects.filter(item=item).values("hit_id")
    assignment = Assignment.objects.filter(pk=assignment_id, hit_id__in=hit_ids).first()
    if assignment is None:
        return None
    entry = answer_for_item(assignment.answers, {"external_id": item.external_id})
    if entry is None or not isinstance(entry.get("links"), list):
        return None
    return [dict(link) for link in entry["links"] if isinstance(link, Mapping)]


def linking_item_or_404(*, campaign: Campaign, item_id: int) -> Item:
    """An item of one of the campaign's linking stages; 404 otherwise."""
    item = (
        Item.objects.filter(
            pk=item_id, stage__campaign=campaign, stage__task_type__in=LINKING_TASK_TYPES
        )
        .select_related("stage")
        .first()
    )
    if item is None:
        raise Http404("No such linking item in this campaign.")
    return item


def _parse_links(raw: str) -> list[Mapping[str, Any]]:
    try:
        links = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"The links are not valid JSON ({exc.msg}).") from None
    if not isinstance(links, list) or not all(isinstance(x, dict) for x in links):
        raise ValueError("The links are a JSON list of objects.")
    return links


def _answer(request: HttpRequest, back: str, message: str, *, ok: bool) -> HttpResponse:
    """The page's fetch gets JSON (400 with the reason when refused), a plain form post
    a redirect back to the queue with the message."""
    if "application/json" in request.headers.get("Accept", ""):
        return JsonResponse({"ok": ok, "message": message}, status=200 if ok else 400)
    (messages.success if ok else messages.error)(request, message)
    return redirect(back)


@login_required
@require_POST
def link_review_decide_view(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    """Settle an item: ``choice`` is an annotator's assignment id (take their links) or
    "custom" (the ``links`` JSON); through ``linking.services.entity_link_decide``.
    Answers JSON to the page's script (no reload), a redirect to a plain form post."""
    campaign = campaign_or_404(request, slug)
    item = linking_item_or_404(campaign=campaign, item_id=item_id)
    back = reverse("frontend:campaign-review", kwargs={"slug": campaign.slug}) + "#link-review"
    choice = request.POST.get("choice", "")
    links: list[Mapping[str, Any]] | None
    if choice == "custom":
        try:
            links = _parse_links(request.POST.get("links", ""))
        except ValueError as exc:
            return _answer(request, back, f"Item {item.external_id}: {exc}", ok=False)
    elif choice.isdigit():
        links = annotator_links(item=item, assignment_id=int(choice))
        if links is None:
            return _answer(request, back, f"Item {item.external_id}: no such annotation.", ok=False)
    else:
        message = f"Item {item.external_id}: pick an annotator's links or enter links."
        return _answer(request, back, message, ok=False)
    try:
        entity_link_decide(item=item, links=links, decided_by=request_user(request))
    except DomainError as exc:
        details = exc.errors if isinstance(exc.errors, dict) else {}
        problems = "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in details.items())
        message = f"Item {item.external_id}: {exc} {problems}".strip()
        return _answer(request, back, message, ok=False)
    n = len(links)
    message = f"Item {item.external_id} decided with {n} link{'s' if n != 1 else ''}."
    return _answer(request, back, message, ok=True)
