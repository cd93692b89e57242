"""A client for Wikidata's Action API (wbsearchentities, wbgetentities), cache first.

Etiquette (https://www.mediawiki.org/wiki/API:Etiquette and the Wikimedia
User-Agent policy):

- every request carries ``WIKIDATA_USER_AGENT`` (required: a tool name and
  version with contact information, e.g. ``qaportal/1.0 (https://example.org;
  ops@example.org)``), followed by the requests library's own token;
- background clients (``background=True``: Celery prefetching) send
  ``maxlag=5``; a maxlag error (HTTP 200 with ``{"error": {"code": "maxlag"}}``,
  or 503) waits for ``Retry-After`` (5 s when absent) and retries;
- HTTP 429 and 5xx wait for ``Retry-After`` when given, else back off
  exponentially (``WIKIDATA_BACKOFF_BASE`` * 2**attempt, at most
  ``WIKIDATA_BACKOFF_MAX``), at most ``WIKIDATA_MAX_RETRIES`` retries; a
  Retry-After above ``WIKIDATA_MAX_WAIT`` is not waited for: the call fails
  with ``WikidataUnavailable`` instead of blocking a worker;
- at most ``WIKIDATA_MAX_CONCURRENT_PER_HOST`` (1) requests per host at a time
  in this process, and a wait asked for by the server pauses every thread's
  requests to that host, not only the one that was told (no request storm).

Responses are cached in ``WikidataCacheEntry`` for ``WIKIDATA_CACHE_TTL``
seconds: search pages by normalised query, items one by one (so a batch reuses
what an earlier batch fetched).
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from linking.models import WikidataCacheEntry
from linking.types import (
    MAX_IDS_PER_REQUEST,
    Candidate,
    Entity,
    SearchPage,
    check_qids,
    check_search_args,
    normalise_query,
)

DEFAULT_API_URL = "https://www.wikidata.org/w/api.php"
DEFAULT_MAXLAG = 5
DEFAULT_TIMEOUT = 10.0
DEFAULT_CACHE_TTL = 7 * 24 * 3600
DEFAULT_MAX_RETRIES = 5
DEFAULT_BACKOFF_BASE = 1.0
DEFAULT_BACKOFF_MAX = 30.0
DEFAULT_MAX_WAIT = 120.0
MAXLAG_DEFAULT_WAIT = 5.0
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class WikidataError(Exception):
    """Wikidata answered with an error that retrying will not fix."""


class WikidataUnavailable(WikidataError):
    """Wikidata could not be reached or kept asking to wait, after the allowed retries."""


class _HostGate:
    """At most ``limit`` requests in flight to one host, and a shared "not before"
    time that a Retry-After sets for every thread."""

    def __init__(self, limit: int) -> None:
        self.semaphore = threading.BoundedSemaphore(limit)
        self.lock = threading.Lock()
        self.not_before = 0.0
        self.in_flight = 0
        self.max_in_flight = 0

    def defer(self, seconds: float) -> None:
        with self.lock:
            self.not_before = max(self.not_before, time.monotonic() + seconds)

    def pause_left(self) -> float:
        with self.lock:
            return max(0.0, self.not_before - time.monotonic())


_gates: dict[tuple[str, int], _HostGate] = {}
_gates_lock = threading.Lock()


def host_gate(url: str, *, limit: int) -> _HostGate:
    """The process-wide gate of ``url``'s host (created with ``limit`` on first use)."""
    parts = urlsplit(url)
    key = (parts.hostname or "", parts.port or 0)
    with _gates_lock:
        gate = _gates.get(key)
        if gate is None:
            gate = _gates[key] = _HostGate(limit)
        return gate


def reset_host_gates() -> None:
    """Forget all gates (tests)."""
    with _gates_lock:
        _gates.clear()


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None if absent
    or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - timezone.now()).total_seconds())


class WikidataClient:
    """The live candidate source. Thread-safe; one per process is enough.

    Settings (constructor arguments win): ``WIKIDATA_API_URL``,
    ``WIKIDATA_USER_AGENT`` (required), ``WIKIDATA_MAXLAG``, ``WIKIDATA_TIMEOUT``,
    ``WIKIDATA_CACHE_TTL``, ``WIKIDATA_MAX_RETRIES``, ``WIKIDATA_BACKOFF_BASE``,
    ``WIKIDATA_BACKOFF_MAX``, ``WIKIDATA_MAX_WAIT``,
    ``WIKIDATA_MAX_CONCURRENT_PER_HOST``.
    """

    def __init__(
        self,
        *,
        api_url: str | None = None,
        user_agent: str | None = None,
        background: bool = False,
        maxlag: int | None = None,
        timeout: float | None = None,
        cache_ttl: float | None = None,
        max_retries: int | None = None,
        backoff_base: float | None = None,
        backoff_max: float | None = None,
        max_wait: float | None = None,
        max_concurrent: int | None = None,
        gate_wait: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        session: requests.Session | None = None,
    ) -> None:
        def setting(name: str, given: Any, default: Any) -> Any:
            return given if given is not None else getattr(settings, name, default)

        self.api_url: str = setting("WIKIDATA_API_URL", api_url, DEFAULT_API_URL)
        agent = str(setting("WIKIDATA_USER_AGENT", user_agent, "") or "").strip()
        if not agent:
            raise ImproperlyConfigured(
                "WIKIDATA_USER_AGENT is required for live Wikidata requests: a tool name, "
                "version and contact, e.g. 'qaportal/1.0 (https://example.org; ops@example.org)'"
                " (Wikimedia User-Agent policy). Set WIKIDATA_OFFLINE to use the offline index."
            )
        if "@" not in agent and "://" not in agent:
            raise ImproperlyConfigured(
                "WIKIDATA_USER_AGENT must include contact information (an e-mail address or "
                "a URL), as Wikimedia's User-Agent policy requires."
            )
        self.user_agent = f"{agent} {requests.utils.default_user_agent()}"
        self.maxlag: int | None = (
            int(setting("WIKIDATA_MAXLAG", maxlag, DEFAULT_MAXLAG)) if background else None
        )
        self.timeout = float(setting("WIKIDATA_TIMEOUT", timeout, DEFAULT_TIMEOUT))
        self.cache_ttl = float(setting("WIKIDATA_CACHE_TTL", cache_ttl, DEFAULT_CACHE_TTL))
        self.max_retries = int(setting("WIKIDATA_MAX_RETRIES", max_retries, DEFAULT_MAX_RETRIES))
        self.backoff_base = float(
            setting("WIKIDATA_BACKOFF_BASE", backoff_base, DEFAULT_BACKOFF_BASE)
        )
        self.backoff_max = float(setting("WIKIDATA_BACKOFF_MAX", backoff_max, DEFAULT_BACKOFF_MAX))
        self.max_wait = float(setting("WIKIDATA_MAX_WAIT", max_wait, DEFAULT_MAX_WAIT))
        limit = int(setting("WIKIDATA_MAX_CONCURRENT_PER_HOST", max_concurrent, 1))
        self.gate = host_gate(self.api_url, limit=limit)
        # None: wait for the host as long as it takes (background work); a number: an
        # interactive client gives up (WikidataUnavailable) rather than queue behind
        # other requests or a server-asked pause for longer than that.
        self.gate_wait = gate_wait
        self.sleep = sleep
        self._local = threading.local()
        self._session = session

    # --- public interface ---------------------------------------------------------

    def search(
        self, text: str, *, language: str = "en", limit: int = 10, continue_: int = 0
    ) -> SearchPage:
        """Items whose label or alias matches ``text`` (wbsearchentities, type=item),
        ``limit`` (1-50) hits from offset ``continue_``; cached."""
        check_search_args(text, limit, continue_)
        query = normalise_query(text)
        if not query:
            return SearchPage()
        key_params = {"q": query, "language": language, "limit": limit, "continue": continue_}
        key = hashlib.sha256(json.dumps(key_params, sort_keys=True).encode()).hexdigest()
        cached = self._cache_get(WikidataCacheEntry.Kind.SEARCH, [key])
        if key in cached:
            return _page_from_json(cached[key])
        params: dict[str, Any] = {
            "action": "wbsearchentities",
            "search": " ".join(text.split()),
            "language": language,
            "uselang": language,
            "type": "item",
            "limit": limit,
        }
        if continue_:
            params["continue"] = continue_
        data = self._request(params)
        page = SearchPage(
            hits=[_candidate(hit) for hit in data.get("search", [])],
            next_offset=data.get("search-continue"),
        )
        self._cache_put(
            WikidataCacheEntry.Kind.SEARCH,
            {key: {"hits": list(page.hits), "next_offset": page.next_offset}},
            params=key_params,
        )
        return page

    def get_entities(self, ids: list[str], *, language: str = "en") -> dict[str, Entity | None]:
        """Items by requested id (labels, descriptions, aliases in ``language``; P31
        values), None for a missing id; redirects resolved to their target. Raises
        ``InvalidQid`` before any request if an id is malformed. Cached per item;
        what is not cached is fetched in batches of 50."""
        wanted = list(dict.fromkeys(ids))
        check_qids(wanted)
        keys = {qid: f"{language}:{qid}" for qid in wanted}
        cached = self._cache_get(WikidataCacheEntry.Kind.ENTITY, list(keys.values()))
        result: dict[str, Entity | None] = {
            qid: cached[key]["entity"] for qid, key in keys.items() if key in cached
        }
        missing = [qid for qid in wanted if qid not in result]
        for start in range(0, len(missing), MAX_IDS_PER_REQUEST):
            batch = missing[start : start + MAX_IDS_PER_REQUEST]
            fetched = self._fetch_entities(batch, language=language)
            result.update(fetched)
            self._cache_put(
                WikidataCacheEntry.Kind.ENTITY,
                {keys[qid]: {"entity": fetched[qid]} for qid in batch},
                params={"language": language},
            )
        return {qid: result[qid] for qid in wanted}

    # --- requests -----------------------------------------------------------------

    def _fetch_entities(self, batch: list[str], *, language: str) -> dict[str, Entity | None]:
        data = self._request(
            {
                "action": "wbgetentities",
                "ids": "|".join(batch),
                "props": "labels|descriptions|aliases|claims",
                "languages": language,
                "redirects": "yes",
            }
        )
        out: dict[str, Entity | None] = dict.fromkeys(batch)
        for key, record in (data.get("entities") or {}).items():
            redirect = record.get("redirects") or {}
            requested = redirect.get("from") or key
            if "missing" in record or requested not in out:
                continue
            out[requested] = _entity(record, language=language, requested=requested)
        return out

    def _session_get(self) -> requests.Session:
        if self._session is not None:
            return self._session
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        return session

    def _request(self, params: dict[str, Any]) -> dict[str, Any]:
        """One API call with retries; the JSON body on success."""
        params = {**params, "format": "json"}
        if self.maxlag is not None:
            params["maxlag"] = self.maxlag
        headers = {"User-Agent": self.user_agent, "Accept": "application/json"}
        problem = ""
        for attempt in range(self.max_retries + 1):
            wait: float | None = None
            if self.gate_wait is None:
                self.gate.semaphore.acquire()
            elif not self.gate.semaphore.acquire(timeout=self.gate_wait):
                raise WikidataUnavailable(f"{self.api_url} busy for {self.gate_wait:g} s")
            try:
                pause = self.gate.pause_left()
                if self.gate_wait is not None and pause > self.gate_wait:
                    raise WikidataUnavailable(f"{self.api_url} paused for {pause:.0f} s")
                if pause > 0:
                    self.sleep(pause)
                with self.gate.lock:
                    self.gate.in_flight += 1
                    self.gate.max_in_flight = max(self.gate.max_in_flight, self.gate.in_flight)
                try:
                    response = self._session_get().get(
                        self.api_url, params=params, headers=headers, timeout=self.timeout
                    )
                finally:
                    with self.gate.lock:
                        self.gate.in_flight -= 1
            except (requests.Timeout, requests.ConnectionError) as exc:
                problem = f"{type(exc).__name__}: {exc}"
                response = None
            finally:
                self.gate.semaphore.release()

            if response is not None:
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
                body = _json_or_none(response)
                error = (body or {}).get("error") if isinstance(body, dict) else None
                is_maxlag = (isinstance(error, dict) and error.get("code") == "maxlag") or (
                    response.headers.get("MediaWiki-API-Error") == "maxlag"
                )
                if is_maxlag:
                    problem = f"maxlag: {(error or {}).get('info', 'database lagged')}"
                    wait = retry_after if retry_after is not None else MAXLAG_DEFAULT_WAIT
                elif response.status_code in RETRY_STATUSES:
                    problem = f"HTTP {response.status_code}"
                    wait = retry_after
                elif response.status_code != 200:
                    raise WikidataError(f"HTTP {response.status_code} from {self.api_url}")
                elif not isinstance(body, dict):
                    raise WikidataError("Wikidata answered with something other than JSON")
                elif isinstance(error, dict):
                    raise WikidataError(f"{error.get('code')}: {error.get('info')}")
                else:
                    return body
            if attempt == self.max_retries:
                break
            backoff = min(self.backoff_max, self.backoff_base * 2**attempt)
            delay = max(backoff, wait or 0.0)
            if wait is not None and wait > self.max_wait:
                raise WikidataUnavailable(f"{problem}; asked to wait {wait:.0f} s")
            # Every thread's next request to this host waits too.
            self.gate.defer(delay)
        raise WikidataUnavailable(f"{problem} after {self.max_retries + 1} attempts")

    # --- cache --------------------------------------------------------------------

    def _cache_get(self, kind: str, keys: list[str]) -> dict[str, Any]:
        if not keys or self.cache_ttl <= 0:
            return {}
        rows = WikidataCacheEntry.objects.filter(
            kind=kind, key__in=keys, expires_at__gt=timezone.now()
        ).values_list("key", "response")
        return dict(rows)

    def _cache_put(self, kind: str, responses: dict[str, Any], *, params: dict[str, Any]) -> None:
        if self.cache_ttl <= 0:
            return
        now = timezone.now()
        entries = [
            WikidataCacheEntry(
                kind=kind,
                key=key,
                params=params,
                response=response,
                fetched_at=now,
                expires_at=now + timedelta(seconds=self.cache_ttl),
            )
            for key, response in responses.items()
        ]
        WikidataCacheEntry.objects.bulk_create(
            entries,
            update_conflicts=True,
            unique_fields=["kind", "key"],
            update_fields=["params", "response", "fetched_at", "expires_at"],
        )


def _json_or_none(response: requests.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _candidate(hit: dict[str, Any]) -> Candidate:
    display = hit.get("display") or {}
    label = hit.get("label") or (display.get("label") or {}).get("value") or ""
    description = hit.get("description") or (display.get("description") or {}).get("value") or ""
    return Candidate(
        id=str(hit.get("id", "")),
        label=str(label),
        description=str(description),
        match=dict(hit.get("match") or {}),
        aliases=[str(a) for a in hit.get("aliases") or []],
        url=str(hit.get("concepturi") or ""),
    )


def _page_from_json(data: dict[str, Any]) -> SearchPage:
    return SearchPage(hits=list(data.get("hits", [])), next_offset=data.get("next_offset"))


def _entity(record: dict[str, Any], *, language: str, requested: str) -> Entity:
    def text(field: str) -> str:
        return str(((record.get(field) or {}).get(language) or {}).get("value", ""))

    aliases = [str(a.get("value", "")) for a in (record.get("aliases") or {}).get(language, [])]
    target = str(record.get("id") or requested)
    return Entity(
        id=target,
        label=text("labels"),
        description=text("descriptions"),
        aliases=aliases,
        instance_of=list(_item_values(record.get("claims", {}).get("P31", []))),
        redirected_from=requested if requested != target else None,
    )


def _item_values(statements: Iterable[dict[str, Any]]) -> Iterable[str]:
    for statement in statements:
        if statement.get("rank") == "deprecated":
            continue
        snak = statement.get("mainsnak") or {}
        if snak.get("snaktype") != "value":
            continue
        value = (snak.get("datavalue") or {}).get("value") or {}
        if isinstance(value, dict) and value.get("id"):
            yield str(value["id"])
