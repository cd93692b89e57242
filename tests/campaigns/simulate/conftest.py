"""A Mintaka-like three-stage campaign for the simulator: write → link answers → check links."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from campaigns.design.items import items_upload
from campaigns.design.services import campaign_create, stage_add, stage_link
from campaigns.models import Campaign
from tests.factories import UserFactory

AUTO_APPROVE = [{"rule": "auto_approve"}]


@pytest.fixture
def mintaka_campaign() -> Callable[..., Campaign]:
    """A local draft campaign: question_writing cells (topic x type, with yes/no and count
    cells) → answer_entity_linking (yes/no and numbers excluded) → entity_link_validation."""

    def make(
        *,
        slug: str = "sim-mintaka",
        topics: tuple[str, ...] = ("movies", "music"),
        types: tuple[str, ...] = ("count", "yesno", "comparative", "superlative"),
        questions_per_hit: int = 2,
        review_rules: list[dict] | None = AUTO_APPROVE,
        stages: int = 3,
    ) -> Campaign:
        owner = UserFactory.create(username=f"owner-{slug}")
        campaign = campaign_create(owner=owner, name=f"Simulated {slug}", slug=slug)
        write = stage_add(
            campaign=campaign,
            name="Write questions",
            task_type="question_writing",
            config={"questions_per_hit": questions_per_hit},
            review_rules=review_rules,
        )
        cells = [
            {"external_id": f"{topic}-{ctype}", "topic": topic, "complexity_type": ctype}
            for topic in topics
            for ctype in types
        ]
        items_upload(
            stage=write,
            content="\n".join(json.dumps(c) for c in cells).encode(),
            filename="cells.jsonl",
        )
        if stages >= 2:
            link = stage_add(
                campaign=campaign,
                name="Link answers",
                task_type="answer_entity_linking",
                assignments_per_hit=2,
                review_rules=review_rules,
            )
            stage_link(
                stage=write,
                next_stage=link,
                handoff={"exclude_answer_types": ["boolean", "numeric"]},
            )
        if stages >= 3:
            check = stage_add(
                campaign=campaign,
                name="Check links",
                task_type="entity_link_validation",
                review_rules=review_rules,
            )
            stage_link(stage=link, next_stage=check)
        return campaign

    return make
