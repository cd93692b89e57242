"""A local stand-in for Wikidata's Action API (``/w/api.php``), speaking its JSON.

A real HTTP server (``ThreadingHTTPServer`` on 127.0.0.1, a free port) answers
``wbsearchentities`` and ``wbgetentities`` in the shapes wikidata.org returns
(``formatversion=1``): search hits with ``id``, ``title``, ``pageid``,
``concepturi``, ``repository``, ``url``, ``display``, ``label``,
``description``, ``match`` (and ``aliases`` on an alias match), plus
``searchinfo`` and ``search-continue``; entities keyed by the id asked for,
with ``type``, ``id``, ``pageid``, ``ns``, ``title``, ``lastrevid``,
``modified``, ``labels``, ``descriptions``, ``aliases``, ``claims`` (P31
statements with ``mainsnak``/``datavalue``), ``redirects: {from, to}`` for a
merged item, ``missing: ""`` for an unknown one; API errors as
``{"error": {"code", "info", ...}, "servedby"}`` (``toomanyvalues`` above 50
ids, ``no-such-entity`` for a malformed id).

Injected trouble: ``fail_next(kind, retry_after=...)`` queues a response, and
``failure_rate`` with ``failure_kinds`` fails that share of requests at random
(seeded). Kinds: ``maxlag`` (HTTP 200 with ``{"error": {"code": "maxlag",
"info": "Waiting for ...: N seconds lagged.", "host", "lag", "type": "db", "*"}}``
and headers ``Retry-After``, ``X-Database-Lag``, ``MediaWiki-API-Error:
maxlag``; only when the request carries ``maxlag``, as the real API), ``429``
(Wikimedia's HTML "Too many requests" page with ``Retry-After``) and ``503``.

Every request is recorded (params, headers, start and end times) with the
highest number of requests in flight at once.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

QID_SYNTAX = r"^[QPL][1-9][0-9]*$"
SAMPLE_ITEMS: dict[str, dict[str, Any]] = {
    "Q42": {
        "label": "Douglas Adams",
        "description": "English science fiction writer and humourist (1952-2001)",
        "aliases": ["Douglas Noël Adams", "Douglas Noel Adams", "DNA"],
        "instance_of": ["Q5"],
    },
    "Q5": {"label": "human", "description": "any member of Homo sapiens", "aliases": ["person"]},
    "Q110138": {
        "label": "Top Gun",
        "description": "1986 film directed by Tony Scott",
        "aliases": [],
        "instance_of": ["Q11424"],
    },
    "Q31188649": {
        "label": "Top Gun: Maverick",
        "description": "2022 film directed by Joseph Kosinski",
        "aliases": ["Top Gun 2"],
        "instance_of": ["Q11424"],
    },
    "Q1325589": {
        "label": "Risky Business",
        "description": "1983 film by Paul Brickman",
        "aliases": [],
        "instance_of": ["Q11424"],
    },
    "Q37079": {
        "label": "Tom Cruise",
        "description": "American actor (born 1962)",
        "aliases": ["Thomas Cruise Mapother IV"],
        "instance_of": ["Q5"],
    },
    "Q11424": {"label": "film", "description": "sequence of images", "aliases": ["movie"]},
}
SAMPLE_REDIRECTS = {"Q4115189": "Q42"}  # a merged duplicate of Douglas Adams


@dataclass
class Recorded:
    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    started: float
    ended: float = 0.0
    status: int = 0
    failure: str = ""  # "maxlag", "429", "503" when trouble was injected


@dataclass
class FakeWikidata:
    items: dict[str, dict[str, Any]] = field(default_factory=lambda: dict(SAMPLE_ITEMS))
    redirects: dict[str, str] = field(default_factory=lambda: dict(SAMPLE_REDIRECTS))
    latency: float = 0.0
    failure_rate: float = 0.0
    failure_kinds: tuple[str, ...] = ("429", "maxlag")
    retry_after: int = 1
    seed: int = 0
    requests: list[Recorded] = field(default_factory=list)
    max_in_flight: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._queued: deque[tuple[str, int | None]] = deque()
        self._in_flight = 0
        self._rng = random.Random(self.seed)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------

    def start(self) -> FakeWikidata:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                fake._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeWikidata:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/w/api.php"

    # --- test controls --------------------------------------------------------------

    def fail_next(self, kind: str, *, times: int = 1, retry_after: int | None = None) -> None:
        """Answer the next ``times`` requests with ``kind`` (maxlag, 429, 503)."""
        for _ in range(times):
            self._queued.append((kind, retry_after))

    def calls(self, action: str | None = None) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if action is None or r.params.get("action") == action]

    # --- serving --------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        params = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        record = Recorded(
            "GET", parts.path, params, dict(handler.headers.items()), time.monotonic()
        )
        with self._lock:
            self.requests.append(record)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            if self.latency:
                time.sleep(self.latency)
            status, headers, body = self._respond(parts.path, params)
        finally:
            # Processing ends here: the client may read the answer before this
            # thread runs again, so counting until after the write would see overlaps
            # that the client never caused.
            with self._lock:
                self._in_flight -= 1
            record.ended = time.monotonic()
        try:
            record.status = status
            if headers.get("MediaWiki-API-Error") == "maxlag":
                record.failure = "maxlag"
            elif status != 200:
                record.failure = str(status)
            handler.send_response(status)
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        except OSError:
            pass  # the client went away

    def _failure(self, params: dict[str, str]) -> tuple[str, int | None] | None:
        with self._lock:
            if self._queued:
                return self._queued.popleft()
            if self.failure_rate and self._rng.random() < self.failure_rate:
                kinds = [k for k in self.failure_kinds if k != "maxlag" or "maxlag" in params]
                return (self._rng.choice(kinds or ["429"]), None)
        return None

    def _respond(self, path: str, params: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        json_headers = {"Content-Type": "application/json; charset=utf-8"}
        failure = self._failure(params)
        if failure is not None:
            kind, retry_after = failure
            wait = str(self.retry_after if retry_after is None else retry_after)
            if kind == "maxlag" and "maxlag" in params:
                lag = int(params["maxlag"]) + 2
                return (
                    200,
                    {
                        **json_headers,
                        "Retry-After": wait,
                        "X-Database-Lag": str(lag),
                        "MediaWiki-API-Error": "maxlag",
                    },
                    _dump(
                        {
                            "error": {
                                "code": "maxlag",
                                "info": f"Waiting for 10.64.48.35: {lag} seconds lagged.",
                                "host": "10.64.48.35",
                                "lag": lag,
                                "type": "db",
                                "*": "See https://www.wikidata.org/w/api.php for API usage. "
                                "Subscribe to the mediawiki-api-announce mailing list at "
                                "&lt;https://lists.wikimedia.org/postorius/lists/"
                                "mediawiki-api-announce.lists.wikimedia.org/&gt; for notice "
                                "of API deprecations and breaking changes.",
                            },
                            "servedby": "mw1400",
                        }
                    ),
                )
            if kind in {"429", "maxlag"}:
                return (
                    429,
                    {"Content-Type": "text/html; charset=utf-8", "Retry-After": wait},
                    b"<!DOCTYPE html><html><head><title>Wikimedia Error</title></head><body>"
                    b"<p>Too many requests. Please respect our robot policy "
                    b"https://w.wiki/4wJS and User-Agent policy.</p></body></html>",
                )
            return (
                503,
                {"Content-Type": "text/html; charset=utf-8", "Retry-After": wait},
                b"<html><body>Service Temporarily Unavailable</body></html>",
            )
        if path != "/w/api.php":
            return 404, {"Content-Type": "text/plain"}, b"Not Found"
        action = params.get("action")
        if action == "wbsearchentities":
            return 200, json_headers, _dump(self._search(params))
        if action == "wbgetentities":
            return 200, json_headers, _dump(self._get_entities(params))
        return 200, json_headers, _dump(_error("badvalue", f'Unrecognized value for "{action}".'))

    def _search(self, params: dict[str, str]) -> dict[str, Any]:
        text = params.get("search", "")
        language = params.get("language", "en")
        limit = min(int(params.get("limit", "7")), 50)
        offset = int(params.get("continue", "0"))
        query = text.casefold()
        hits = []
        for qid, item in sorted(self.items.items(), key=lambda kv: int(kv[0][1:])):
            label = item.get("label", "")
            if label.casefold().startswith(query):
                hits.append(self._hit(qid, item, language, {"type": "label", "text": label}))
                continue
            alias = next((a for a in item.get("aliases", []) if a.casefold().startswith(query)), "")
            if alias:
                hit = self._hit(qid, item, language, {"type": "alias", "text": alias})
                hit["aliases"] = [alias]
                hits.append(hit)
        page = hits[offset : offset + limit]
        body: dict[str, Any] = {"searchinfo": {"search": text}, "search": page}
        if offset + limit < len(hits):
            body["search-continue"] = offset + limit
        body["success"] = 1
        return body

    @staticmethod
    def _hit(qid: str, item: dict[str, Any], language: str, match: dict[str, str]) -> dict:
        display: dict[str, Any] = {"label": {"value": item["label"], "language": language}}
        hit: dict[str, Any] = {
            "id": qid,
            "title": qid,
            "pageid": 100000 + int(qid[1:]),
            "concepturi": f"http://www.wikidata.org/entity/{qid}",
            "repository": "wikidata",
            "url": f"//www.wikidata.org/wiki/{qid}",
            "display": display,
            "label": item["label"],
        }
        if item.get("description"):
            display["description"] = {"value": item["description"], "language": language}
            hit["description"] = item["description"]
        hit["match"] = {"type": match["type"], "language": language, "text": match["text"]}
        return hit

    def _get_entities(self, params: dict[str, str]) -> dict[str, Any]:
        ids = [i for i in params.get("ids", "").split("|") if i]
        if len(ids) > 50:
            return _error(
                "toomanyvalues",
                'Too many values supplied for parameter "ids". The limit is 50.',
                limit=50,
                lowlimit=50,
                highlimit=500,
                parameter="ids",
            )
        languages = params.get("languages", "en").split("|")
        entities: dict[str, Any] = {}
        for requested in ids:
            if not (requested[:1] == "Q" and requested[1:].isdigit() and requested[1] != "0"):
                return _error(
                    "no-such-entity",
                    f'Could not find an entity with the ID "{requested}".',
                    id=requested,
                )
            target = self.redirects.get(requested, requested)
            item = self.items.get(target)
            if item is None:
                entities[requested] = {"id": requested, "missing": ""}
                continue
            record = self._entity(target, item, languages)
            if target != requested:
                record = {
                    **{k: record[k] for k in ("type", "id")},
                    "redirects": {"from": requested, "to": target},
                    **{k: v for k, v in record.items() if k not in ("type", "id")},
                }
            entities[requested] = record
        return {"entities": entities, "success": 1}

    @staticmethod
    def _entity(qid: str, item: dict[str, Any], languages: list[str]) -> dict[str, Any]:
        number = int(qid[1:])
        lang = languages[0]
        claims = {
            "P31": [
                {
                    "mainsnak": {
                        "snaktype": "value",
                        "property": "P31",
                        "hash": f"{number:040x}"[-40:],
                        "datavalue": {
                            "value": {
                                "entity-type": "item",
                                "numeric-id": int(value[1:]),
                                "id": value,
                            },
                            "type": "wikibase-entityid",
                        },
                        "datatype": "wikibase-item",
                    },
                    "type": "statement",
                    "id": f"{qid}$5E6E2E4B-{k:04d}-4F5B-9E55-D2A6C3D1E3F7",
                    "rank": "normal",
                }
                for k, value in enumerate(item.get("instance_of", []))
            ]
        }
        return {
            "type": "item",
            "id": qid,
            "pageid": 100000 + number,
            "ns": 0,
            "title": qid,
            "lastrevid": 2000000000 + number,
            "modified": "2024-05-01T12:00:00Z",
            "labels": {lang: {"language": lang, "value": item["label"]}},
            "descriptions": (
                {lang: {"language": lang, "value": item["description"]}}
                if item.get("description")
                else {}
            ),
            "aliases": (
                {lang: [{"language": lang, "value": a} for a in item["aliases"]]}
                if item.get("aliases")
                else {}
            ),
            "claims": claims if claims["P31"] else {},
        }


def _error(code: str, info: str, **extra: Any) -> dict[str, Any]:
    return {
        "error": {
            "code": code,
            "info": info,
            **extra,
            "*": "See https://www.wikidata.org/w/api.php for API usage.",
        },
        "servedby": "mw1400",
    }


def _dump(data: dict[str, Any]) -> bytes:
    return json.dumps(data, ensure_ascii=False).encode("utf-8")
