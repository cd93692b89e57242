"""Prolific's filters catalogue: the filters a study can use and their choices.

A stage's requirements stay platform-neutral (ISO 3166 country codes, an approval rate,
an approved count, qualifications); on Prolific the country codes become the choice ids
of the ``current-country-of-residence`` filter, read from ``GET /api/v1/filters/``
(``get-filters``: every filter, select ones with ``choices``, choice id -> label) and
matched by country name. The catalogue is cached (``PROLIFIC_FILTERS_CACHE_SECONDS``,
a day by default) per API address and workspace; ``refresh=True`` reads it again.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings
from django.core.cache import cache

FILTER_COUNTRY = "current-country-of-residence"
# Prolific's API address (here, not in client.py, so the page's rules never load requests).
DEFAULT_API_URL = "https://api.prolific.com"

# ISO 3166-1 alpha-2 -> the English names a catalogue may label the country with.
COUNTRY_NAMES: dict[str, tuple[str, ...]] = {
    "AR": ("Argentina",),
    "AT": ("Austria",),
    "AU": ("Australia",),
    "BE": ("Belgium",),
    "BG": ("Bulgaria",),
    "BR": ("Brazil",),
    "CA": ("Canada",),
    "CH": ("Switzerland",),
    "CL": ("Chile",),
    "CN": ("China",),
    "CO": ("Colombia",),
    "CY": ("Cyprus",),
    "CZ": ("Czech Republic", "Czechia"),
    "DE": ("Germany",),
    "DK": ("Denmark",),
    "EE": ("Estonia",),
    "EG": ("Egypt",),
    "ES": ("Spain",),
    "FI": ("Finland",),
    "FR": ("France",),
    "GB": ("United Kingdom", "UK", "Great Britain"),
    "GR": ("Greece",),
    "HK": ("Hong Kong",),
    "HR": ("Croatia",),
    "HU": ("Hungary",),
    "ID": ("Indonesia",),
    "IE": ("Ireland",),
    "IL": ("Israel",),
    "IN": ("India",),
    "IS": ("Iceland",),
    "IT": ("Italy",),
    "JP": ("Japan",),
    "KE": ("Kenya",),
    "KR": ("South Korea", "Korea, Republic of"),
    "LT": ("Lithuania",),
    "LU": ("Luxembourg",),
    "LV": ("Latvia",),
    "MT": ("Malta",),
    "MX": ("Mexico",),
    "MY": ("Malaysia",),
    "NG": ("Nigeria",),
    "NL": ("Netherlands", "The Netherlands"),
    "NO": ("Norway",),
    "NZ": ("New Zealand",),
    "PH": ("Philippines",),
    "PK": ("Pakistan",),
    "PL": ("Poland",),
    "PT": ("Portugal",),
    "RO": ("Romania",),
    "RS": ("Serbia",),
    "SE": ("Sweden",),
    "SG": ("Singapore",),
    "SI": ("Slovenia",),
    "SK": ("Slovakia",),
    "TH": ("Thailand",),
    "TR": ("Turkey", "Türkiye"),
    "TW": ("Taiwan",),
    "UA": ("Ukraine",),
    "US": ("United States", "USA", "United States of America"),
    "VN": ("Vietnam", "Viet Nam"),
    "ZA": ("South Africa",),
}


def _key(name: str) -> str:
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z]", "", text.lower())


def country_name(code: str) -> str:
    """The English name of ISO code ``code`` (the code itself when unknown)."""
    return COUNTRY_NAMES.get(code.upper(), (code,))[0]


def catalogue_cache_key(base_url: str, workspace_id: str) -> str:
    digest = hashlib.sha256(f"{base_url.rstrip('/')}|{workspace_id}".encode()).hexdigest()[:16]
    return f"prolific:filters:v1:{digest}"


def filter_catalogue_cached() -> dict[str, Any] | None:
    """The catalogue last read with the environment's API address and workspace, if still
    cached (no call)."""
    base_url = str(getattr(settings, "PROLIFIC_API_URL", DEFAULT_API_URL))
    workspace_id = str(getattr(settings, "PROLIFIC_WORKSPACE_ID", ""))
    cached = cache.get(catalogue_cache_key(base_url, workspace_id))
    return cached if isinstance(cached, dict) else None


def filter_catalogue(*, client: Any, workspace_id: str, refresh: bool = False) -> dict[str, Any]:
    """``{filter_id: {"type", "question", "choices"}}`` from ``get-filters``, cached.

    ``client``: a ``ProlificClient``. ``refresh``: read Prolific again (and re-cache).
    """
    key = catalogue_cache_key(str(getattr(client, "base_url", "")), workspace_id)
    if not refresh:
        cached = cache.get(key)
        if isinstance(cached, dict):
            return cached
    catalogue = {
        str(row["filter_id"]): {
            "type": row.get("type"),
            "question": row.get("question", ""),
            "choices": {str(k): str(v) for k, v in (row.get("choices") or {}).items()},
        }
        for row in client.filters_list(workspace_id=workspace_id)
        if isinstance(row, Mapping) and row.get("filter_id")
    }
    timeout = int(getattr(settings, "PROLIFIC_FILTERS_CACHE_SECONDS", 24 * 3600))
    cache.set(key, catalogue, timeout)
    return catalogue


def country_choices(catalogue: Mapping[str, Any]) -> dict[str, str]:
    """The country filter's choices: choice id -> label ({} without a catalogue)."""
    return dict((catalogue.get(FILTER_COUNTRY) or {}).get("choices") or {})


def countries_resolve(
    codes: Iterable[str], catalogue: Mapping[str, Any]
) -> tuple[list[str], list[str]]:
    """Prolific choice ids for ISO country ``codes`` (a choice id given as digits is kept
    when the catalogue has it), and the codes it offers no choice for."""
    choices = country_choices(catalogue)
    by_name = {_key(label): cid for cid, label in choices.items()}
    ids: list[str] = []
    missing: list[str] = []
    for code in codes:
        code = str(code).strip()
        if code.isdigit() and code in choices:
            ids.append(code)
            continue
        names = COUNTRY_NAMES.get(code.upper(), ())
        found = next((by_name[_key(n)] for n in names if _key(n) in by_name), None)
        if found is None:
            missing.append(code)
        elif found not in ids:
            ids.append(found)
    return ids, missing
