"""Campaign life cycle: create, stages, links and the state machine."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest
from django.db import connection

from campaigns.design.services import (
    campaign_create,
    campaign_transition,
    stage_add,
    stage_link,
    stage_update,
)
from campaigns.models import Campaign, CampaignState
from qaportal.errors import DomainError, IllegalTransition
from tests.factories import ItemFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign(requester) -> Campaign:
    return campaign_create(owner=requester, name="Mintaka pilot", provider="mturk")


def _ready(campaign: Campaign) -> None:
    stage = stage_add(campaign=campaign, name="write", task_type="question_writing")
    ItemFactory.create(stage=stage)


def test_create_derives_slug_currency_and_starts_in_draft(requester):
    first = campaign_create(owner=requester, name="Why QA", provider="prolific")
    second = campaign_create(owner=requester, name="Why QA?")
    assert (first.slug, second.slug) == ("why-qa", "why-qa-2")
    assert first.state == CampaignState.DRAFT
    assert first.currency == "GBP"
    assert second.currency == "USD"


def test_a_second_campaign_with_the_same_name_is_refused(requester):
    campaign_create(owner=requester, name="Why QA")
    with pytest.raises(DomainError, match=r"e.g. 'why qa \(2\)'") as caught:
        campaign_create(owner=requester, name="  why qa ")
    assert caught.value.errors == {"name": ["taken"]}
    assert Campaign.objects.filter(owner=requester).count() == 1
    # Someone else may use the name; the slug, not the name, tells the URLs apart.
    other = UserFactory.create(username="bob")
    assert campaign_create(owner=other, name="Why QA").slug == "why-qa-2"


def test_create_rejects_unknown_provider_and_negative_budget(requester):
    with pytest.raises(DomainError, match="Unknown provider"):
        campaign_create(owner=requester, name="x", provider="upwork")
    with pytest.raises(DomainError, match="negative"):
        campaign_create(owner=requester, name="x", budget_cap=Decimal("-1"))


def test_duplicate_slug_is_a_clear_error(requester, campaign):
    with pytest.raises(DomainError, match="exists already"):
        campaign_create(owner=requester, name="other", slug=campaign.slug)


def test_stages_get_consecutive_positions(campaign):
    a = stage_add(campaign=campaign, name="write", task_type="question_writing")
    b = stage_add(campaign=campaign, name="write more", task_type="question_writing")
    assert (a.position, b.position) == (0, 1)


def test_stage_add_validates_task_type_and_config(campaign):
    with pytest.raises(DomainError, match="Unknown task type") as unknown:
        stage_add(campaign=campaign, name="x", task_type="translate")
    assert "task_type" in unknown.value.errors
    with pytest.raises(DomainError, match="does not fit") as bad:
        stage_add(
            campaign=campaign,
            name="x",
            task_type="question_writing",
            config={"questions_per_hit": 0},
        )
    assert bad.value.errors["config"]
    with pytest.raises(DomainError, match="negative"):
        stage_add(
            campaign=campaign, name="x", task_type="question_writing", reward=Decimal("-0.01")
        )


def test_stage_names_unique_per_campaign(campaign):
    stage_add(campaign=campaign, name="write", task_type="question_writing")
    with pytest.raises(DomainError, match="already"):
        stage_add(campaign=campaign, name="write", task_type="question_writing")


def test_stage_update_only_while_editable(campaign):
    stage = stage_add(campaign=campaign, name="write", task_type="question_writing")
    stage_update(stage=stage, reward=Decimal("2.00"))
    stage.refresh_from_db()
    assert stage.reward == Decimal("2.00")
    with pytest.raises(DomainError, match="cannot be changed"):
        stage_update(stage=stage, task_type="survey")
    ItemFactory.create(stage=stage)
    campaign_transition(campaign=campaign, to_state="live")
    with pytest.raises(DomainError, match="only draft and pilot"):
        stage_update(stage=stage, reward=Decimal("3.00"))


def test_stage_link_same_campaign_and_no_cycles(campaign, requester):
    a = stage_add(campaign=campaign, name="a", task_type="question_writing")
    b = stage_add(campaign=campaign, name="b", task_type="question_writing")
    stage_link(stage=a, next_stage=b, handoff={"exclude_answer_types": ["boolean"]})
    a.refresh_from_db()
    assert a.next_stage == b
    assert a.handoff == {"exclude_answer_types": ["boolean"]}
    with pytest.raises(DomainError, match="cycle"):
        stage_link(stage=b, next_stage=a)
    other = campaign_create(owner=requester, name="other")
    foreign = stage_add(campaign=other, name="c", task_type="question_writing")
    with pytest.raises(DomainError, match="same campaign"):
        stage_link(stage=a, next_stage=foreign)


def test_start_needs_a_stage_with_items(campaign):
    with pytest.raises(IllegalTransition, match="at least one stage"):
        campaign_transition(campaign=campaign, to_state="pilot")
    stage = stage_add(campaign=campaign, name="write", task_type="question_writing")
    with pytest.raises(IllegalTransition, match="no items"):
        campaign_transition(campaign=campaign, to_state="live")
    ItemFactory.create(stage=stage)
    assert campaign_transition(campaign=campaign, to_state="pilot").state == "pilot"


@pytest.mark.parametrize(
    ("path", "illegal"),
    [
        (["pilot", "live", "paused", "live", "completed"], "draft"),
        (["live", "completed"], "live"),
        (["pilot", "draft"], "completed"),
        (["live", "paused", "completed"], "paused"),
    ],
)
def test_state_machine_paths(campaign, path, illegal):
    _ready(campaign)
    for state in path:
        campaign_transition(campaign=campaign, to_state=state)
        assert Campaign.objects.get(pk=campaign.pk).state == state
        assert campaign.state_changed_at is not None
    with pytest.raises(IllegalTransition, match=f"cannot move to '{illegal}'"):
        campaign_transition(campaign=campaign, to_state=illegal)


def test_completed_is_final_and_unknown_states_refused(campaign):
    _ready(campaign)
    campaign_transition(campaign=campaign, to_state="live")
    campaign_transition(campaign=campaign, to_state="completed")
    with pytest.raises(IllegalTransition, match="it is final"):
        campaign_transition(campaign=campaign, to_state="live")
    with pytest.raises(IllegalTransition, match="Unknown state"):
        campaign_transition(campaign=campaign, to_state="archived")


@pytest.mark.django_db(transaction=True)
def test_concurrent_transitions_are_serialised(requester):
    """Two requests pausing and completing at once: the row lock orders them."""
    campaign = campaign_create(owner=requester, name="race")
    _ready(campaign)
    campaign_transition(campaign=campaign, to_state="live")
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def move(to_state: str) -> None:
        barrier.wait()
        try:
            campaign_transition(campaign=Campaign.objects.get(pk=campaign.pk), to_state=to_state)
            outcomes.append(f"ok:{to_state}")
        except IllegalTransition:
            outcomes.append(f"refused:{to_state}")
        finally:
            connection.close()

    threads = [threading.Thread(target=move, args=(s,)) for s in ("completed", "completed")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["ok:completed", "refused:completed"]


def test_stage_link_validates_the_handoff(campaign):
    a = stage_add(campaign=campaign, name="a", task_type="question_writing")
    b = stage_add(campaign=campaign, name="b", task_type="answer_entity_linking")
    with pytest.raises(DomainError, match="hand-off does not fit") as bad:
        stage_link(stage=a, next_stage=b, handoff={"exclude_answer_types": ["colour"]})
    assert bad.value.errors["handoff"]
    a.refresh_from_db()
    assert a.next_stage is None


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("review_rules", [{"rule": "vibes"}], "unknown rule"),
        ("review_rules", [{"rule": "work_time", "min_secs": 5}], "unknown parameter"),
        ("bonus_rules", [{"rule": "per_agreed_entity", "amount": "-1"}], "positive decimal"),
        ("bonus_rules", [{"rule": "gold_bonus"}], "amount"),
        ("escalation_rule", {"rule": "entity_agreement", "annotators": 3, "max": 2}, "below"),
        ("escalation_rule", {"rule": "early_stop", "first": 3, "extend_to": 2}, "extend_to"),
        ("escalation_rule", {"rule": "ask_my_cousin"}, "escalation_rule must be"),
    ],
)
def test_stage_rules_are_checked_by_their_apps(campaign, field, value, fragment):
    with pytest.raises(DomainError, match="rules are not valid") as bad:
        stage_add(campaign=campaign, name="x", task_type="answer_entity_linking", **{field: value})
    assert fragment in " ".join(bad.value.errors[field])
    stage = stage_add(campaign=campaign, name="ok", task_type="answer_entity_linking")
    with pytest.raises(DomainError, match="rules are not valid"):
        stage_update(stage=stage, **{field: value})


def test_valid_rules_from_both_apps_are_accepted(campaign):
    stage = stage_add(
        campaign=campaign,
        name="link",
        task_type="answer_entity_linking",
        review_rules=[{"rule": "work_time", "min_seconds": 5}, {"rule": "consensus"}],
        bonus_rules=[
            {"rule": "per_agreed_entity", "amount": "0.05", "beyond": 1},
            {"rule": "gold_bonus", "amount": "0.20"},
        ],
        escalation_rule={"rule": "entity_agreement", "annotators": 2, "max": 3},
    )
    assert stage.escalation_rule["max"] == 3
