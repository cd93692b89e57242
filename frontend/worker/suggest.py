"""The as-you-type suggestion endpoint of the linking pages (``/work/suggest/``)."""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from campaigns.models import Assignment, AssignmentStatus
from campaigns.tasktypes import task_type_get
from campaigns.work.selectors.access import RequestWorkers
from campaigns.work.selectors.loading import assignment_load
from linking.selectors import worker_search, worker_search_cache_key, worker_search_is_live
from linking.wikidata import WikidataError
from qaportal.cache import counter_within

logger = logging.getLogger(__name__)

# The session key the worker pages keep invited workers' ids under
# (frontend/worker/views.py, SESSION_WORKERS).
SESSION_WORKERS = "worker_ids"
MAX_QUERY_LENGTH = 200
DEFAULT_RATE_PER_MINUTE = 240
RATE_PREFIX = "linking:sg:rate:"
AUTH_PREFIX = "linking:sg:auth:"
# How long a browser's hold on an assignment is remembered: suggestions are public
# Wikidata data, so a just-submitted assignment searching a little longer is harmless.
AUTH_TTL = 30


def _request_workers(request: HttpRequest) -> RequestWorkers:
    ids = request.session.get(SESSION_WORKERS, [])
    worker_ids = tuple(i for i in ids if isinstance(i, int)) if isinstance(ids, list) else ()
    user_id = request.user.pk if request.user.is_authenticated else None
    return RequestWorkers(worker_ids=worker_ids, user_id=user_id)


def _rate_allowed(worker_id: int) -> bool:
    """At most ``LINKING_SUGGEST_RATE_PER_MINUTE`` calls per worker per clock minute
    (a counter in the shared cache)."""
    limit = int(getattr(settings, "LINKING_SUGGEST_RATE_PER_MINUTE", DEFAULT_RATE_PER_MINUTE))
    key = f"{RATE_PREFIX}{worker_id}:{int(time.time() // 60)}"
    return counter_within(key=key, limit=limit)


def _error(message: str, status: int) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


@require_GET
def suggest(request: HttpRequest) -> JsonResponse:
    """``GET /work/suggest/?a=<assignment id>&q=<text>``: ranked Wikidata candidates
    ``{"query", "candidates": [{"id", "label", "description"}], "wikidata"}``, cache
    first; ``wikidata`` says whether Wikidata itself was searched (false: the offline
    index alone, which holds only some items, so the page words an empty list so
    that a worker does not take a real entity for one missing from Wikidata).

    Only for the worker holding assignment ``a`` (accepted, not yet submitted) on a
    linking stage, as the worker pages know them (session workers, or the logged-in
    annotator): 403 otherwise (the hold is remembered ``AUTH_TTL`` seconds per
    browser), 429 past the per-worker rate. When Wikidata cannot be
    reached the list is empty with ``"unavailable": true``: the worker can still type
    an id or choose "not in Wikidata".
    """
    raw_id = request.GET.get("a", "")
    query = " ".join(request.GET.get("q", "").split())[:MAX_QUERY_LENGTH]
    workers = _request_workers(request)
    if not raw_id.isdigit() or not workers:
        return _error("Open the task first.", 403)
    # One round trip for who holds the assignment (remembered for this browser) and
    # the suggestions; the database is asked only when the holder is not known.
    auth_key = f"{AUTH_PREFIX}{request.session.session_key}:{raw_id}"
    sg_key = worker_search_cache_key(query=query) if query else ""
    found = cache.get_many([auth_key, sg_key] if sg_key else [auth_key])
    worker_id = found.get(auth_key)
    if worker_id is None:
        try:
            assignment = assignment_load(assignment_id=int(raw_id), workers=workers)
        except Assignment.DoesNotExist:
            return _error("Open the task first.", 403)
        if (
            assignment.status != AssignmentStatus.ACCEPTED
            or not task_type_get(assignment.hit.stage.task_type).links_entities
        ):
            return _error("Suggestions are for an open linking task.", 403)
        worker_id = assignment.worker_id
        if request.session.session_key:
            cache.set(auth_key, worker_id, AUTH_TTL)
    if not _rate_allowed(worker_id):
        response = _error("Too many searches; wait a moment.", 429)
        response["Retry-After"] = "30"
        return response
    if sg_key in found:
        live = worker_search_is_live()
        return _answer({"query": query, "candidates": found[sg_key], "wikidata": live})
    payload: dict[str, object] = {"query": query}
    try:
        payload["candidates"], payload["wikidata"] = worker_search(query=query)
    except WikidataError as exc:
        logger.warning("suggestions for %r unavailable: %s", query, exc)
        payload.update(candidates=[], unavailable=True, wikidata=False)
    return _answer(payload)


def _answer(payload: dict[str, object]) -> JsonResponse:
    """The list as JSON; one given without Wikidata while Wikidata should have been
    asked (slow or down) is marked ``partial``: the page does not keep it, so the next
    search tries Wikidata again."""
    if not payload.get("wikidata") and worker_search_is_live():
        payload["partial"] = True
    response = JsonResponse(payload)
    response["Cache-Control"] = "private, max-age=300"
    return response
