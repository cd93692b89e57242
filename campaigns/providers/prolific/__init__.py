"""The Prolific provider: ``ProlificClient`` (HTTP) and ``ProlificProvider`` (mapping)."""

from campaigns.providers.prolific.client import ProlificClient
from campaigns.providers.prolific.provider import (
    COMPLETION_URL,
    ProlificProvider,
    short_id,
    study_body,
    study_filters,
)

__all__ = [
    "COMPLETION_URL",
    "ProlificClient",
    "ProlificProvider",
    "short_id",
    "study_body",
    "study_filters",
]
