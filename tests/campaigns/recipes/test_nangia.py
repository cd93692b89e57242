"""Issue 35, points 1-4: Nangia et al. (ACL 2021) as published: only JUSTIFICATION asks
for a justification (§3.2); the paper's sizes (§3.3, §5); the tutorial's writing task
graded by three experts (§3.3); validation shuffles the four arms and needs a majority
(§4, §5)."""

from __future__ import annotations

import pytest

from campaigns.design.services import campaign_create
from campaigns.recipes.nangia import ARMS, JUSTIFICATION_INSTRUCTIONS, RECIPE
from campaigns.recipes.services import recipe_apply, recipe_cost

pytestmark = pytest.mark.django_db


def _stages(requester, slug, scale="paper"):
    campaign = campaign_create(owner=requester, name=slug, slug=slug)
    return {s.name: s for s in recipe_apply(campaign=campaign, name="nangia", scale=scale)}


def test_only_justification_asks_for_a_justification(requester):
    """Point 1 (§3.2): asking for a justification is the one difference between
    BASELINE and JUSTIFICATION; no other writing stage asks for one."""
    stages = _stages(requester, "ng-just")
    writing = [s for s in stages.values() if s.task_type == "mc_question_writing"]
    assert len(writing) == 12  # 2 main rounds + 2 x (tutorial, 3 rounds, main round)
    for stage in writing:
        asks = JUSTIFICATION_INSTRUCTIONS.strip() in stage.instructions
        assert asks == (stage.config["arm"] == "JUSTIFICATION"), stage.name
        assert stage.config["justification"] == (
            "required" if stage.config["arm"] == "JUSTIFICATION" else "off"
        )
    base, just = stages["BASELINE: Main round"], stages["JUSTIFICATION: Main round"]
    assert just.instructions == base.instructions + JUSTIFICATION_INSTRUCTIONS


def test_paper_scale_is_the_papers_final_collection_and_rounds():
    """Point 2 (§5: 1,558 / 1,534 / 1,600 / 1,580 examples; §3.3: 400-500 examples per
    intermediate round): at the paper's scale the main rounds produce each arm's
    final collection and each training round 400-500 questions."""
    cost = {
        c.stage_name: c for c in recipe_cost(name="nangia", provider="local", scale="paper").stages
    }
    final = {"BASELINE": 1558, "JUSTIFICATION": 1534, "CROWD": 1600, "EXPERT": 1580}
    for arm in ARMS:
        passages = cost[f"{arm}: Main round"].items
        assert 2 * passages in (final[arm], final[arm] + 1), arm
    for arm in ("CROWD", "EXPERT"):
        for n in (1, 2, 3):
            questions = 2 * cost[f"{arm}: Round {n}"].items
            assert 400 <= questions <= 500
            # Every round question is graded: 3 experts, or 5 promoted writers.
            grading = cost[f"{arm}: Grading {n}"]
            assert grading.items == questions
            assert grading.assignments == questions * (5 if arm == "CROWD" and n > 1 else 3)


def test_writers_are_ranked_on_at_least_four_graded_questions(requester):
    """Point 2 (§3.3: experts evaluate at least four questions per worker): every graded
    round ranks writers on four graded examples or more (the pilot on one passage)."""
    paper = _stages(requester, "ng-min")
    pilot = _stages(requester, "ng-min-pilot", scale="pilot")
    for arm in ("CROWD", "EXPERT"):
        for name in (f"{arm}: Tutorial writing", *(f"{arm}: Round {n}" for n in (1, 2, 3))):
            assert paper[name].config["round"]["min_examples"] == 4, name
            assert pilot[name].config["round"]["min_examples"] == 2, name


def test_the_tutorial_has_a_writing_task_graded_by_three_experts(requester):
    """Point 3 (§3.3): the tutorial's writing task, two passages with two questions each,
    graded by three experts; its top 60 % qualify for round 1, with the $1.50 bonus for
    qualifying (App. B)."""
    stages = _stages(requester, "ng-tutorial")
    for arm in ("CROWD", "EXPERT"):
        writing = stages[f"{arm}: Tutorial writing"]
        grading = stages[f"{arm}: Tutorial grading"]
        assert writing.next_stage_id == grading.pk
        assert writing.config["questions_per_passage"] == 2
        assert writing.assignments_per_hit == stages[f"{arm}: Tutorial"].assignments_per_hit
        assert grading.task_type == "rubric_evaluation"
        assert grading.assignments_per_hit == 3
        assert any("qualification_type_id" in r for r in grading.qualification_requirements)
        round_config = writing.config["round"]
        assert round_config["grading_stage"] == grading.pk
        assert (round_config["qualify_share"], round_config["bonus"]) == (0.6, "1.50")
        assert {"round_stage": writing.pk, "round": 1} in stages[
            f"{arm}: Round 1"
        ].qualification_requirements
        # The bonus is for qualifying onto the writing tasks, not for passing the quiz.
        assert "pass_bonus" not in stages[f"{arm}: Tutorial"].config
    assert len(RECIPE.sample_items["CROWD: Tutorial writing"]) == 2


def test_validation_shuffles_the_arms_and_needs_a_majority(requester):
    """Point 4 (§4: all four protocols shuffled into one validation task; §5: gold by
    majority over writer + validators, no majority discarded)."""
    validation = _stages(requester, "ng-validation")["Validation"]
    assert validation.config["hold_handoff"] is True
    assert validation.config["shuffle"] is True
    (final,) = [r for r in validation.review_rules if r["rule"] == "final_labels"]
    assert final["require"] == "absolute"
    assert final["count_writer"] is True
