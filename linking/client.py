"""Which candidate source serves linking: the offline index or live Wikidata."""

from __future__ import annotations

import threading
from pathlib import Path

from django.conf import settings

from linking.offline import BUNDLED_INDEX, OfflineIndex
from linking.types import CandidateSource
from linking.wikidata import WikidataClient

_offline: dict[str, OfflineIndex] = {}
_offline_lock = threading.Lock()


def candidate_source(*, background: bool = False) -> CandidateSource:
    """The offline index when ``WIKIDATA_OFFLINE`` is set (loaded once per process from
    ``WIKIDATA_OFFLINE_INDEX``), else a live ``WikidataClient``; ``background`` makes
    live calls send ``maxlag`` (Celery tasks, not as-you-type search)."""
    if getattr(settings, "WIKIDATA_OFFLINE", False):
        return offline_index(getattr(settings, "WIKIDATA_OFFLINE_INDEX", "") or BUNDLED_INDEX)
    return WikidataClient(background=background)


def offline_index(path: str | Path = BUNDLED_INDEX) -> OfflineIndex:
    """The process-wide offline index of ``path``."""
    key = str(path)
    index = _offline.get(key)
    if index is None:
        with _offline_lock:
            index = _offline.get(key)
            if index is None:
                index = _offline[key] = OfflineIndex.from_file(path)
    return index


def live_search_allowed() -> bool:
    """Whether ``LINKING_LIVE_SEARCH`` is on and ``WIKIDATA_USER_AGENT`` is set (live
    requests need one)."""
    agent = str(getattr(settings, "WIKIDATA_USER_AGENT", "") or "").strip()
    return bool(getattr(settings, "LINKING_LIVE_SEARCH", False)) and bool(agent)


def live_search_source() -> WikidataClient | None:
    """The client the worker's search box asks Wikidata through when
    ``LINKING_LIVE_SEARCH`` allows it (and ``WIKIDATA_USER_AGENT`` names who asks),
    else None. It is off the critical path: one try within
    ``LINKING_LIVE_SEARCH_TIMEOUT`` seconds, never queued behind other requests to
    the host for longer, so the page falls back to the offline list instead of
    waiting. Answers are cached like every live search (``WikidataCacheEntry``)."""
    if not live_search_allowed():
        return None
    timeout = float(getattr(settings, "LINKING_LIVE_SEARCH_TIMEOUT", 3.0))
    return WikidataClient(timeout=timeout, max_retries=0, max_wait=0, gate_wait=timeout)
