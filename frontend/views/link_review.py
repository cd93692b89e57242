"""The entity-link review queue: items three annotators could not settle, and the
requester's decision (one annotator's links, or links entered by hand)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from campaigns.models import Assignment, Campaign, HITItem, Item, Stage
from campaigns.tasktypes import task_type_get, task_type_names
from campaigns.tasktypes.base import answer_for_item
from frontend.views.common import campaign_or_404, request_user
from linking.models import WikidataCacheEntry
from linking.selectors import link_review_queue
from linking.services import entity_link_decide
from qaportal.errors import DomainError

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
    if stage is not None and not task_type_get(stage.task_type).links_entities:
        return []
    queue = link_review_queue(campaign=campaign, stage=stage)
    qids = {
        str(link["qid"])
        for entry in queue
        for annotation in entry["annotations"]
        for link in annotation["links"]
        if isinstance(link, Mapping) and link.get("qid")
    }
    labels = cached_labels(qids)
    rows = []
    for entry in queue:
        item: Item = entry["item"]
        data = item.data if isinstance(item.data, Mapping) else {}
        annotations = [
            {
                **annotation,
                "shown": [
                    {**link, "label": labels.get(str(link.get("qid") or ""), "")}
                    for link in annotation["links"]
                    if isinstance(link, Mapping)
                ],
                "json": json.dumps(annotation["links"], ensure_ascii=False),
            }
            for annotation in entry["annotations"]
        ]
        rows.append(
            {
                "item": item,
                "stage": entry["stage"],
                "question": str(data.get("question", "")),
                "answer": str(data.get("answer", "")),
                "annotations": annotations,
                "start_json": annotations[0]["json"] if annotations else "[]",
            }
        )
    return rows


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
            pk=item_id,
            stage__campaign=campaign,
            stage__task_type__in=task_type_names(links_entities=True),
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


@login_required
@require_POST
def link_review_decide_view(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    """Settle an item: ``choice`` is an annotator's assignment id (take their links) or
    "custom" (the ``links`` JSON); through ``linking.services.entity_link_decide``."""
    campaign = campaign_or_404(request, slug)
    item = linking_item_or_404(campaign=campaign, item_id=item_id)
    back = reverse("frontend:campaign-review", kwargs={"slug": campaign.slug}) + "#link-review"
    choice = request.POST.get("choice", "")
    links: list[Mapping[str, Any]] | None
    if choice == "custom":
        try:
            links = _parse_links(request.POST.get("links", ""))
        except ValueError as exc:
            messages.error(request, f"Item {item.external_id}: {exc}")
            return redirect(back)
    elif choice.isdigit():
        links = annotator_links(item=item, assignment_id=int(choice))
        if links is None:
            messages.error(request, f"Item {item.external_id}: no such annotation.")
            return redirect(back)
    else:
        messages.error(
            request, f"Item {item.external_id}: pick an annotator's links or enter links."
        )
        return redirect(back)
    try:
        entity_link_decide(item=item, links=links, decided_by=request_user(request))
    except DomainError as exc:
        details = exc.errors if isinstance(exc.errors, dict) else {}
        problems = "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in details.items())
        messages.error(request, f"Item {item.external_id}: {exc} {problems}".strip())
        return redirect(back)
    n = len(links)
    messages.success(
        request, f"Item {item.external_id} decided with {n} link{'s' if n != 1 else ''}."
    )
    return redirect(back)
