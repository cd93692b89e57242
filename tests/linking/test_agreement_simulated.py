"""Entity agreement with the crowd simulator over the real pages: careful and sloppy
workers link answers; agreeing pairs finish a HIT, disagreements bring a third
annotator, and what three cannot settle waits for the requester."""

from __future__ import annotations

import pytest

from campaigns.models import HIT, Assignment, AssignmentStatus, OperationKind, ProviderOperation
from campaigns.platforms.publishing import campaign_start
from campaigns.simulate import simulate_crowd
from linking.models import EntityLinkResolution, ResolutionStatus
from linking.selectors import stage_entity_agreement

pytestmark = pytest.mark.django_db(transaction=True)

ANSWERS = [
    "Steven Spielberg",
    "Tom Hanks and Meg Ryan",
    "Paris",
    "The Beatles",
    "Frida Kahlo and Diego Rivera",
    "Lake Victoria",
    "Toni Morrison",
    "Mount Everest",
]


def test_agreement_and_escalation_with_simulated_workers(linking_stage):
    items = [
        {"external_id": f"qa-{n}", "question": f"Question {n}?", "answer": answer}
        for n, answer in enumerate(ANSWERS)
    ]
    stage = linking_stage(items=items, slug="link-sim")
    campaign = campaign_start(campaign=stage.campaign, to_state="live")

    result = simulate_crowd(
        campaign=campaign, workers=6, seed=4, shares={"good": 0.5, "sloppy": 0.5}
    )

    assert result.ok, "\n".join(result.lines())
    # Every HIT was judged once all its answers were in: none is left waiting.
    resolutions = EntityLinkResolution.objects.filter(stage=stage)
    assert resolutions.count() == len(ANSWERS)
    statuses = {r.status for r in resolutions}
    assert ResolutionStatus.PENDING not in statuses
    assert ResolutionStatus.RESOLVED in statuses
    escalated = ProviderOperation.objects.filter(
        kind=OperationKind.ADD_ASSIGNMENTS, idempotency_key__startswith="entity_agreement:"
    )
    assert escalated.exists(), "\n".join(result.lines())
    for hit in HIT.objects.filter(stage=stage):
        answered = Assignment.objects.filter(
            hit=hit, status__in=[AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED]
        ).count()
        resolution = resolutions.get(hit=hit)
        assert 2 <= hit.max_assignments <= 3
        assert answered == hit.max_assignments == resolution.annotators
        if resolution.annotators == 2:
            assert resolution.status == ResolutionStatus.RESOLVED
        else:
            assert escalated.filter(idempotency_key=f"entity_agreement:{hit.pk}:3").exists()
    summary = stage_entity_agreement(stage=stage)
    assert summary.with_two == len(ANSWERS)
    assert summary.after_2 is not None
    assert summary.after_3 is not None
    assert 0 < summary.after_2 < summary.after_3 <= 1
