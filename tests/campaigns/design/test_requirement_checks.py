"""What a qualification requirement may say (``requirement_checks``) and which rules the
rooms register with their parameters (``stage_rule_kinds``): the single source the API
and the stage form both ask."""

from __future__ import annotations

import pytest

from campaigns.design.requirement_checks import requirement_problems
from campaigns.design.stage_rules import ParamCheck, stage_rule_kinds


@pytest.mark.parametrize(
    ("requirement", "problem"),
    [
        ({"kind": "approval_rate"}, "requirement 1 (approval_rate): min is required"),
        (
            {"kind": "approval_rate", "min": 101},
            "requirement 1 (approval_rate): min must be a whole number from 0 to 100",
        ),
        (
            {"kind": "approved_count", "min": "many"},
            "requirement 1 (approved_count): min must be a whole number from 0 or more",
        ),
        (
            {"kind": "country", "countries": []},
            "requirement 1 (country): countries must be a non-empty list of country codes "
            "(US, GB, …)",
        ),
        (
            {"kind": "country", "countries": ["US"], "exclude": "yes"},
            "requirement 1 (country): exclude must be true or false",
        ),
        ({"quiz_stage": "Tutorial"}, "requirement 1: quiz_stage must be a stage's id"),
        ({"system": "approval_rate"}, "requirement 1 (keys: system) names none of"),
    ],
)
def test_requirement_problems_name_the_requirement_and_the_key(requirement, problem):
    found = requirement_problems([requirement])
    assert len(found) == 1, found
    assert found[0].startswith(problem), found


def test_good_requirements_have_no_problems():
    assert not requirement_problems(
        [
            {"kind": "approval_rate", "min": 95},
            {"kind": "approved_count", "min": 0},
            {"kind": "locale", "values": ["US"]},
            {"kind": "masters"},
            {"quiz_stage": 3},
            {"round_stage": 4, "round": 2},
            {"qualification_type_id": 7, "min": 1},
            {"mturk_qualification_id": "3XYZ"},
        ]
    )


def test_the_rooms_register_their_rules_with_described_parameters(db):
    review = stage_rule_kinds("review_rules")
    assert {"auto_approve", "gold_accuracy", "work_time", "final_labels"} <= set(review)
    assert {"gold_bonus", "wage_floor", "per_agreed_entity"} <= set(stage_rule_kinds("bonus_rules"))
    escalation = stage_rule_kinds("escalation_rule")
    assert {"early_stop", "entity_agreement"} <= set(escalation)
    check, default = review["gold_accuracy"]["min"]
    assert isinstance(check, ParamCheck)
    assert check.kind == "number"
    assert default == 0.5
    assert (check.minimum, check.maximum) == (0, 1)
    assert check(2) == "must be between 0 and 1"
    action = review["gold_accuracy"]["action"][0]
    assert action.kind == "choice"
    assert action.options == ("reject", "hold")
    assert escalation["entity_agreement"]["annotators"][0].kind == "integer"
