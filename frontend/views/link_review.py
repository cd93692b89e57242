"""The entity-link review queue: items three annotators could not settle, and the
requester's decision (one annotator's links, or links entered by hand: spans picked in
the text, ids from the same suggestions the worker page searches); and linking
submissions as the worker saw them, the text with their spans highlighted."""

from __future__ import annotations

import json
import logging
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from campaigns.models import Campaign, Item, Stage
from campaigns.tasktypes import task_type_get, task_type_names
from campaigns.tasktypes.base import FormView, TaskType, answer_for_item
from frontend.views.common import campaign_or_404, request_user
from linking.selectors import (
    SUGGESTION_LIMIT,
    annotation_links,
    entity_labels,
    link_review_queue,
    suggestions_search,
)
from linking.services import entity_link_decide
from linking.wikidata import WikidataError
from qaportal.cache import counter_within
from qaportal.errors import DomainError

logger = logging.getLogger(__name__)


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
    labels = entity_labels(qids=qids)
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
                "text_label": _text_label(text, data),
                "annotations": annotations,
                "start_json": annotations[0]["json"] if annotations else "[]",
                "editor_items": [link_editor(item=item, text=text, given=given)],
                "allow_none": task_type.effective_config(entry["stage"].config)[
                    "allow_not_in_wikidata"
                ],
            }
        )
    return rows


def _text_label(text: str, data: Mapping[str, Any]) -> str:
    return "answer" if text and text == data.get("answer") else "question"


def link_editor(
    *, item: Item, text: str, given: Sequence[Sequence[Mapping[str, Any]]]
) -> dict[str, Any]:
    """The block of "Enter links yourself": the worker page's linking block (the same
    rows, the same script), every span an annotator linked a row, filled in with the
    first annotator's id; the requester adds spans by selecting words in the text."""
    form = FormView(errors={})
    first = {(_int(lk.get("start")), _int(lk.get("end"))): lk for lk in (given[0] if given else [])}
    spans: dict[tuple[int, int], str] = {}
    for links in given:
        for link in links:
            start, end = _int(link.get("start")), _int(link.get("end"))
            if 0 <= start < end <= len(text):
                spans.setdefault((start, end), text[start:end])
    rows = []
    for j, ((start, end), words) in enumerate(sorted(spans.items())):
        prefix = f"items/review-{item.pk}/spans/{j}"
        link = first.get((start, end), {})
        rows.append(
            {
                "number": j + 1,
                "start": start,
                "end": end,
                "text": words,
                "kind": "",
                "seen": False,
                "qid": form.field(f"{prefix}/qid", link.get("qid") if not link.get("none") else ""),
                "none": form.field(f"{prefix}/none", bool(link.get("none"))),
                "prefix": prefix,
                "error": "",
            }
        )
    # The worker page's block (``index`` names its fields and ids: one per item here).
    return {"index": f"review-{item.pk}", "text": text, "rows": rows, "next_row": len(rows)}


def answer_qids(answers: Any) -> set[str]:
    """Every Wikidata id a linking answer gives (to look their labels up at once)."""
    entries = answers.get("items") if isinstance(answers, Mapping) else None
    if not isinstance(entries, list):
        entries = [answers] if isinstance(answers, Mapping) else []
    return {
        str(link["qid"])
        for entry in entries
        if isinstance(entry, Mapping) and isinstance(entry.get("links"), list)
        for link in entry["links"]
        if isinstance(link, Mapping) and link.get("qid")
    }


def linked_answer(
    *,
    task_type: TaskType,
    items: Sequence[Mapping[str, Any]],
    answers: Any,
    labels: Mapping[str, str],
) -> list[dict[str, Any]]:
    """A linking submission as the worker saw it: per item its question and answer, the
    linked text with the worker's spans highlighted, and each link with its id's label
    (``labels``: from ``entity_labels``)."""
    blocks = []
    for item in items:
        raw = item.get("data")
        data: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        text = task_type.linked_text(data) if hasattr(task_type, "linked_text") else ""
        entry = answer_for_item(answers, item)
        links = entry.get("links") if isinstance(entry, Mapping) else None
        shown = [
            {**link, "label": labels.get(str(link.get("qid") or ""), ""), "agreed": True}
            for link in sorted(
                (lk for lk in links or [] if isinstance(lk, Mapping)),
                key=lambda lk: (_int(lk.get("start")), _int(lk.get("end"))),
            )
        ]
        blocks.append(
            {
                "id": item.get("id"),
                "external_id": item.get("external_id", ""),
                "question": str(data.get("question", "")),
                "answer": str(data.get("answer", "")),
                "text_label": _text_label(text, data),
                "segments": highlighted_segments(text, shown),
                "shown": shown,
                "answered": entry is not None,
            }
        )
    return blocks


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


def _answer(request: HttpRequest, back: str, message: str, *, ok: bool) -> HttpResponse:
    """The page's fetch gets JSON (400 with the reason when refused), a plain form post
    a redirect back to the queue with the message."""
    if "application/json" in request.headers.get("Accept", ""):
        return JsonResponse({"ok": ok, "message": message}, status=200 if ok else 400)
    (messages.success if ok else messages.error)(request, message)
    return redirect(back)


# What a form may name as the place to come back to: an id of the review page.
_ANCHOR = re.compile(r"[a-z][a-z0-9-]{0,63}")


def review_anchor(raw: Any, default: str) -> str:
    """``raw`` if it can be an element id of the review page, else ``default``."""
    return raw if isinstance(raw, str) and _ANCHOR.fullmatch(raw) else default


def _review_back(request: HttpRequest, campaign: Campaign) -> str:
    """The review page the form came from (its stage filter), at the next item to decide
    (the form's ``next``: the decided one leaves the queue)."""
    url = reverse("frontend:campaign-review", kwargs={"slug": campaign.slug})
    stage = str(request.POST.get("stage", ""))
    query = f"?stage={stage}" if stage.isdigit() else ""
    return f"{url}{query}#{review_anchor(request.POST.get('next'), 'link-review')}"


@login_required
@require_POST
def link_review_decide_view(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    """Settle an item: ``choice`` is an annotator's assignment id (take their links) or
    "custom" (the ``links`` JSON); through ``linking.services.entity_link_decide``.
    Answers JSON to the page's script (no reload), a redirect to a plain form post
    (back to the review page at the next item)."""
    campaign = campaign_or_404(request, slug)
    item = linking_item_or_404(campaign=campaign, item_id=item_id)
    back = _review_back(request, campaign)
    choice = request.POST.get("choice", "")
    links: list[Mapping[str, Any]] | None
    if choice == "custom":
        try:
            links = _parse_links(request.POST.get("links", ""))
        except ValueError as exc:
            return _answer(request, back, f"Item {item.external_id}: {exc}", ok=False)
    elif choice.isdigit():
        links = annotation_links(item=item, assignment_id=int(choice))
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


SUGGEST_RATE_PREFIX = "linking:sg:rate:requester:"
MAX_QUERY_LENGTH = 200
DEFAULT_RATE_PER_MINUTE = 240


def _suggest_rate_allowed(user_id: int) -> bool:
    """At most ``LINKING_SUGGEST_RATE_PER_MINUTE`` searches per requester per clock
    minute, as for a worker (a counter in the shared cache)."""
    limit = int(getattr(settings, "LINKING_SUGGEST_RATE_PER_MINUTE", DEFAULT_RATE_PER_MINUTE))
    key = f"{SUGGEST_RATE_PREFIX}{user_id}:{int(time.time() // 60)}"
    return counter_within(key=key, limit=limit)


@login_required
@require_GET
def link_review_suggest_view(request: HttpRequest, slug: str) -> JsonResponse:
    """``GET …/link-review/suggest/?q=<text>``: the ranked Wikidata candidates the worker
    page's search gets (``linking.selectors.suggestions_search``, cache first, the
    offline index or Wikidata), for "Enter links yourself" on the review page of a
    campaign the user may see (404 otherwise). ``{"query", "candidates"}``; empty with
    ``"unavailable": true`` when Wikidata cannot be reached; 429 past the rate."""
    campaign_or_404(request, slug)
    query = " ".join(request.GET.get("q", "").split())[:MAX_QUERY_LENGTH]
    if not _suggest_rate_allowed(request_user(request).pk):
        response = JsonResponse({"error": "Too many searches; wait a moment."}, status=429)
        response["Retry-After"] = "30"
        return response
    payload: dict[str, object] = {"query": query}
    try:
        payload["candidates"], _ = suggestions_search(query=query, limit=SUGGESTION_LIMIT)
    except WikidataError as exc:
        logger.warning("suggestions for %r unavailable: %s", query, exc)
        payload.update(candidates=[], unavailable=True)
    response = JsonResponse(payload)
    response["Cache-Control"] = "private, max-age=300"
    return response
