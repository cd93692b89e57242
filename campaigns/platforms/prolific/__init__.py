"""The Prolific provider: ``ProlificClient`` (HTTP) and ``ProlificProvider`` (mapping)."""

from campaigns.platforms.prolific.client import ProlificClient
from campaigns.platforms.prolific.provider import (
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
