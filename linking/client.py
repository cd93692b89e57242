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
