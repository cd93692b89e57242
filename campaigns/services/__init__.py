"""Writes. Each service is a plain function with keyword-only arguments."""

from campaigns.services.campaigns import (
    campaign_create,
    campaign_transition,
    stage_add,
    stage_link,
    stage_update,
)
from campaigns.services.errors import DomainError, IllegalTransition, UploadRejected

__all__ = [
    "DomainError",
    "IllegalTransition",
    "UploadRejected",
    "campaign_create",
    "campaign_transition",
    "stage_add",
    "stage_link",
    "stage_update",
]
