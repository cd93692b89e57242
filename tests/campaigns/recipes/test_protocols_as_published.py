"""Issue 19: WhyQA (Mrozinski, Whittaker and Furui, ACL-08: HLT) and Nangia et al. (ACL
2021) load as their papers ran them: gating, pay and units, tutorials, grading."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from campaigns.design.services import campaign_create
from campaigns.models import CampaignState, QualificationGrant
from campaigns.platforms.publishing import campaign_start
from campaigns.recipes.services import recipe_apply
from campaigns.work.invites import invite_create, invite_redeem, invite_token
from campaigns.work.selectors.access import worker_has_stage_access
from campaigns.workforce.qualification_types import quiz_qualification_type
from campaigns.workforce.requirements import worker_qualified

pytestmark = pytest.mark.django_db


def _stages(requester, name, slug):
    campaign = campaign_create(owner=requester, name=name, slug=slug)
    return {s.name: s for s in recipe_apply(campaign=campaign, name=name, scale="paper")}


def _worker(campaign):
    invite = invite_create(campaign=campaign, created_by=campaign.owner, expires_in=timedelta(1))
    _, worker = invite_redeem(token=invite_token(invite=invite))
    return worker


def test_whyqa_rephrasing_is_gated_like_answering(requester):
    """Point 8 (§2.3): the quiz and 80 % approval for QRepHITs as for QAHITs."""
    stages = _stages(requester, "whyqa", "why")
    quiz = stages["Qualification quiz"]
    answer, rephrase = stages["Answer why-questions"], stages["Rephrase why-questions"]
    for stage in (answer, rephrase):
        assert {"kind": "approval_rate", "min": 80} in stage.qualification_requirements
        assert {"quiz_stage": quiz.pk} in stage.qualification_requirements
    campaign_start(campaign=quiz.campaign, to_state=CampaignState.PILOT)
    worker = _worker(quiz.campaign)
    rephrase.refresh_from_db()
    assert not worker_qualified(stage=rephrase, worker=worker)
    assert not worker_has_stage_access(worker=worker, stage=rephrase)
    QualificationGrant.objects.create(
        qualification_type=quiz_qualification_type(stage=quiz), worker=worker, value=1
    )
    assert worker_qualified(stage=rephrase, worker=worker)
    assert worker_has_stage_access(worker=worker, stage=rephrase)


def test_whyqa_pay_and_units_as_published(requester):
    """Point 9 (§2.2.1-2.2.3): one question per QGenHIT at $0.04, ten per article; one
    question per QAHIT at $0.06; five questions per QRepHIT at $0.05, five assignments."""
    stages = _stages(requester, "whyqa", "why-pay")
    write = stages["Write why-questions"]
    assert (write.reward, write.config["questions_per_article"]) == (Decimal("0.04"), 1)
    assert write.assignments_per_hit == 10
    answer = stages["Answer why-questions"]
    assert (answer.reward, answer.items_per_hit) == (Decimal("0.06"), 1)
    rephrase = stages["Rephrase why-questions"]
    assert (rephrase.reward, rephrase.items_per_hit, rephrase.assignments_per_hit) == (
        Decimal("0.05"),
        5,
        5,
    )


def test_nangia_baseline_and_justification_get_no_tutorial(requester):
    """Point 15 (§3.1-3.3): only CROWD and EXPERT take the tutorial; the control arms'
    writing requires no tutorial qualification."""
    stages = _stages(requester, "nangia", "ng")
    tutorials = [s for s in stages.values() if s.task_type == "quiz" and "Tutorial" in s.name]
    assert sorted(s.config["arm"] for s in tutorials) == ["CROWD", "EXPERT"]
    for arm in ("BASELINE", "JUSTIFICATION"):
        main = stages[f"{arm}: Main round"]
        assert not any("quiz_stage" in r for r in main.qualification_requirements)
    # The tutorial's quiz opens its writing task, whose graded round opens round 1.
    assert {"quiz_stage": stages["CROWD: Tutorial"].pk} in stages[
        "CROWD: Tutorial writing"
    ].qualification_requirements
    assert {"round_stage": stages["CROWD: Tutorial writing"].pk, "round": 1} in stages[
        "CROWD: Round 1"
    ].qualification_requirements


def test_nangia_grading_as_published(requester):
    """Point 16 (§3.3): EXPERT 3 experts per example; CROWD round 1 graded by experts,
    the top 20 % promoted after round 1 grade rounds 2 and 3, 5 grades per example."""
    stages = _stages(requester, "nangia", "ng-grading")
    for n in (1, 2, 3):
        assert stages[f"EXPERT: Grading {n}"].assignments_per_hit == 3
    assert stages["CROWD: Grading 1"].assignments_per_hit == 3
    assert "arm" not in stages["CROWD: Grading 1"].config  # experts join no arm
    assert any(
        "qualification_type_id" in r for r in stages["CROWD: Grading 1"].qualification_requirements
    )
    round1 = stages["CROWD: Round 1"]
    assert round1.config["round"]["graders_share"] == 0.2
    for n in (2, 3):
        grading = stages[f"CROWD: Grading {n}"]
        assert grading.assignments_per_hit == 5
        assert {"graders_stage": round1.pk, "round": 1} in grading.qualification_requirements
        assert stages[f"CROWD: Round {n}"].config["round"]["graders_share"] == 0.0
