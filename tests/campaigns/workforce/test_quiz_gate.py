"""Quizzes gate later stages: a stored quiz answer is scored against the key (WhyQA's
essential / OK / wrong groups); a pass grants the quiz's qualification, here and as a
provider operation; a stage requiring the quiz is closed to those who failed it and
open to those who passed; the score is kept with the assignment; quiz pay is its own
ledger kind on a paid provider."""

from __future__ import annotations

from datetime import timedelta

import pytest

from campaigns.design.services import campaign_create, stage_add
from campaigns.models import (
    Item,
    ItemSource,
    OperationKind,
    ProviderOperation,
    QualificationGrant,
)
from campaigns.platforms.publishing import campaign_start
from campaigns.work.allocation import WorkerNotAllowedError, assignment_accept
from campaigns.work.invites import invite_create, invite_redeem, invite_token
from campaigns.work.selectors.access import worker_has_stage_access
from campaigns.work.submission import assignment_submit
from campaigns.workforce.qualification_types import quiz_qualification_type
from tests.campaigns.tasktypes.test_quiz_survey import WHYQA

pytestmark = pytest.mark.django_db

PERFECT = {
    "questions/0/selected": ["s1", "s2"],
    "questions/1/selected": ["s1", "s2"],
    "questions/2/no_answer": "1",
}
ANSWERS_THE_UNANSWERABLE = {
    "questions/0/selected": ["s1", "s2"],
    "questions/1/selected": ["s1", "s2"],
    "questions/2/selected": ["s1"],
}


@pytest.fixture
def gated(requester):
    campaign = campaign_create(owner=requester, name="Gated", slug="gated")
    quiz = stage_add(
        campaign=campaign, name="Quiz", task_type="quiz", config=WHYQA, assignments_per_hit=50
    )
    Item.objects.create(stage=quiz, external_id="quiz", data={}, source=ItemSource.UPLOADED)
    writing = stage_add(
        campaign=campaign,
        name="Write",
        task_type="question_writing",
        config={"questions_per_hit": 1},
        qualification_requirements=[{"quiz_stage": quiz.pk}],
    )
    for n in range(3):
        Item.objects.create(
            stage=writing,
            external_id=f"cell-{n}",
            data={"topic": "rivers", "complexity_type": "comparative"},
            source=ItemSource.UPLOADED,
        )
    campaign = campaign_start(campaign=campaign, to_state="pilot")
    invite = invite_create(campaign=campaign, created_by=requester, expires_in=timedelta(days=1))
    return campaign, quiz, writing, invite_token(invite=invite)


def _take_quiz(quiz, token, form):
    _, worker = invite_redeem(token=token)
    a = assignment_accept(stage=quiz, worker=worker)
    result = assignment_submit(assignment_id=a.pk, worker=worker, form=form, telemetry={})
    assert result.stored, result.errors
    return worker, result.assignment


def test_a_pass_opens_the_next_stage_and_a_fail_does_not(gated):
    _campaign, quiz, writing, token = gated
    passed, passed_work = _take_quiz(quiz, token, PERFECT)
    failed, failed_work = _take_quiz(quiz, token, ANSWERS_THE_UNANSWERABLE)

    assert passed_work.review_details["quiz"]["passed"] is True
    assert passed_work.review_details["quiz"]["points"] == 9
    assert failed_work.review_details["quiz"]["passed"] is False
    reasons = [q["reason"] for q in failed_work.review_details["quiz"]["questions"]]
    assert "answered an unanswerable question" in reasons

    qt = quiz_qualification_type(stage=quiz)
    assert QualificationGrant.objects.filter(qualification_type=qt, worker=passed).exists()
    assert not QualificationGrant.objects.filter(qualification_type=qt, worker=failed).exists()
    assert ProviderOperation.objects.filter(kind=OperationKind.GRANT).count() == 1

    assert worker_has_stage_access(worker=passed, stage=writing)
    assert not worker_has_stage_access(worker=failed, stage=writing)
    assert assignment_accept(stage=writing, worker=passed).hit.stage == writing
    with pytest.raises(WorkerNotAllowedError, match="pass its quiz first"):
        assignment_accept(stage=writing, worker=failed)


def test_revoking_the_grant_closes_the_stage_again(gated):
    _campaign, quiz, writing, token = gated
    passed, _ = _take_quiz(quiz, token, PERFECT)
    from django.utils import timezone

    QualificationGrant.objects.filter(worker=passed).update(revoked_at=timezone.now())
    assert not worker_has_stage_access(worker=passed, stage=writing)


def test_quiz_pay_is_its_own_ledger_kind_on_a_paid_provider(requester):
    from decimal import Decimal

    from django.utils import timezone

    from campaigns.models import HIT, Assignment, LedgerEntry
    from campaigns.platforms.review import paid_assignment_approve
    from tests.factories import WorkerFactory

    campaign = campaign_create(owner=requester, name="Paid quiz", slug="paid-quiz")
    campaign.provider = "prolific"
    campaign.currency = "GBP"
    campaign.save(update_fields=["provider", "currency"])
    quiz = stage_add(campaign=campaign, name="Quiz", task_type="quiz", config=WHYQA)
    hit = HIT.objects.create(stage=quiz, provider="prolific", reward=Decimal("0.80"))
    now = timezone.now()
    work = Assignment.objects.create(
        hit=hit,
        worker=WorkerFactory.create(provider="prolific", external_id="a" * 24),
        provider="prolific",
        provider_assignment_id="s" * 24,
        status="submitted",
        answers={},
        accepted_at=now,
        submitted_at=now,
        review_details={"identity": {"status": "confirmed"}},
    )
    paid_assignment_approve(assignment=work, source="requester")
    kinds = sorted(LedgerEntry.objects.filter(assignment=work).values_list("kind", flat=True))
    assert kinds == ["platform_fee", "quiz_payment"]


def test_requirements_naming_stages_resolve_to_qualification_types(gated, requester):
    """What the providers translate: the quiz requirement becomes the quiz's
    qualification type (an MTurk custom type, a Prolific participant group); a stage
    of another campaign is refused, never dropped."""
    from campaigns.platforms.prolific.provider import study_filters
    from campaigns.workforce.requirements import stage_requirements
    from qaportal.errors import DomainError

    _campaign, quiz, writing, _token = gated
    qt = quiz_qualification_type(stage=quiz)
    assert stage_requirements(stage=writing) == [{"qualification_type_id": qt.pk}]
    assert study_filters(stage_requirements(stage=writing), allow_groups=["g1"]) == [
        {"filter_id": "participant_group_allowlist", "selected_values": ["g1"]}
    ]
    other = campaign_create(owner=requester, name="Other", slug="other")
    foreign = stage_add(campaign=other, name="Quiz", task_type="quiz", config=WHYQA)
    writing.qualification_requirements = [{"quiz_stage": foreign.pk}]
    with pytest.raises(DomainError, match="not in this campaign"):
        stage_requirements(stage=writing)
