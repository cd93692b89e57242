"""Plain helpers shared by test modules (not fixtures): objects built through the services.

``local_pipeline`` and ``submitted_assignment`` build a two-stage local campaign
(question writing → answer entity linking) and real submissions through the work
services; the requester pages and the API tests both use them.
"""

from __future__ import annotations

import io
from datetime import timedelta

from django.contrib.auth.models import User

from campaigns.design.services import campaign_create, stage_add, stage_link
from campaigns.models import Assignment, Campaign, CampaignState, Item, ItemSource, Stage
from campaigns.platforms.publishing import campaign_start
from campaigns.work.allocation import assignment_accept
from campaigns.work.invites import invite_create, invite_redeem, invite_token
from campaigns.work.submission import assignment_submit

TELEMETRY = {
    "keystrokes": 57,
    "pastes": [{"field": "questions/0/answer", "length": 9}, {"field": "x", "length": 3}],
    "focus_losses": 2,
    "visibility_changes": 1,
}


def local_pipeline(
    owner: User, *, slug: str = "qa-pipeline", topics: tuple[str, ...] = ("rivers", "films")
) -> tuple[Campaign, Stage, Stage]:
    """A local campaign in pilot: question writing (one question per HIT, one HIT per
    topic) handing its QA pairs on to answer entity linking."""
    campaign = campaign_create(owner=owner, name=f"Pipeline {slug}", slug=slug)
    writing = stage_add(
        campaign=campaign,
        name="Write questions",
        task_type="question_writing",
        config={"questions_per_hit": 1},
    )
    linking = stage_add(campaign=campaign, name="Link answers", task_type="answer_entity_linking")
    stage_link(stage=writing, next_stage=linking, handoff={"target": "answer_entity_linking"})
    for n, topic in enumerate(topics):
        Item.objects.create(
            stage=writing,
            external_id=f"cell-{n}",
            data={"topic": topic, "complexity_type": "comparative"},
            source=ItemSource.UPLOADED,
        )
    campaign = campaign_start(campaign=campaign, to_state=CampaignState.PILOT)
    writing.refresh_from_db()
    return campaign, writing, linking


def submitted_assignment(stage: Stage, *, question: str = "Which river is longer?") -> Assignment:
    """A new invited worker accepts the next HIT of ``stage`` and submits a valid answer."""
    invite = invite_create(
        campaign=stage.campaign, created_by=stage.campaign.owner, expires_in=timedelta(days=1)
    )
    _, worker = invite_redeem(token=invite_token(invite=invite))
    assignment = assignment_accept(stage=stage, worker=worker)
    result = assignment_submit(
        assignment_id=assignment.pk,
        worker=worker,
        form={"questions/0/question": question, "questions/0/answer": "The Nile"},
        telemetry=TELEMETRY,
    )
    assert result.stored, result.errors
    return result.assignment


class FakeTerminal(io.StringIO):
    """A stream that says it is a terminal: where commands draw their progress bars."""

    def isatty(self) -> bool:
        return True


def progress_lines(stream: io.StringIO) -> list[str]:
    """The states a progress bar drew on ``stream`` (each redraw starts with ``\r``)."""
    return [part.strip() for part in stream.getvalue().split("\r") if part.strip()]
