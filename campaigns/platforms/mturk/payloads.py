"""The payload of a ``create_hit`` operation on MTurk, built from a stage's settings."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from campaigns.platforms.mturk.checks import check_money, check_text
from campaigns.platforms.mturk.xml import external_question, worker_page_url


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
    type per stage and settings), the HITs, and the ExternalQuestion of the worker page.
    Texts are cut to MTurk's lengths; control characters or an ``http://`` site are a
    ``PermanentProviderError`` now, before anything is asked of MTurk."""
    return {
        "stage_id": stage_id,
        "hit_ids": hit_ids,
        "hit_type": {
            "Title": check_text(title[:128], "Title", maximum=128, newlines=False),
            "Description": check_text((description or title)[:2000], "Description", maximum=2000),
            "Keywords": check_text(
                keywords[:1000], "Keywords", maximum=1000, required=False, newlines=False
            ),
            "Reward": check_money(reward, "Reward"),
            "AssignmentDurationInSeconds": max(30, duration_seconds),
            "AutoApprovalDelayInSeconds": auto_approval_seconds,
            "QualificationRequirements": qualification_requirements,
        },
        "max_assignments": max_assignments,
        "lifetime_seconds": max(30, lifetime_seconds),
        "question": external_question(worker_page_url(site_url), frame_height=frame_height),
    }
