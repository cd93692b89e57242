"""The payload of a ``create_hit`` operation on MTurk, built from a stage's settings."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from campaigns.providers.mturk.checks import check_money
from campaigns.providers.mturk.xml import external_question, worker_page_url


def publish_payload(
    *,
    stage_id: int,
    hit_ids: list[int],
    title: str,
    description: str,
    keywords: str,
    reward: Decimal,
    duration_seconds: int,
    auto_approval_seconds: int,
    lifetime_seconds: int,
    max_assignments: int,
    qualification_requirements: list[dict[str, Any]],
    site_url: str,
    frame_height: int = 0,
) -> dict[str, Any]:
    """What ``MTurkProvider.publish_hits`` needs: the HIT type's properties (one HIT
    type per stage and settings), the HITs, and the ExternalQuestion of the worker page."""
    return {
        "stage_id": stage_id,
        "hit_ids": hit_ids,
        "hit_type": {
            "Title": title[:128],
            "Description": (description or title)[:2000],
            "Keywords": keywords[:1000],
            "Reward": check_money(reward, "Reward"),
            "AssignmentDurationInSeconds": max(30, duration_seconds),
            "AutoApprovalDelayInSeconds": auto_approval_seconds,
            "QualificationRequirements": qualification_requirements,
        },
        "max_assignments": max_assignments,
        "lifetime_seconds": max(30, lifetime_seconds),
        "question": external_question(worker_page_url(site_url), frame_height=frame_height),
    }
