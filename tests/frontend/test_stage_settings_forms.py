"""Issue 36 point 5: qualification requirements, review rules, bonus rules, escalation and
hand-off as forms on the stage edit page. The forms write the JSON the API takes, ask the
same checks saving runs (the same messages, beside the input they name), keep what was
typed when something is refused, and leave the JSON a click away. Posted as a browser
without JavaScript posts the page (every input as drawn, then changed)."""

from __future__ import annotations

import html
import json
from html.parser import HTMLParser
from typing import Any

import pytest
from django.urls import reverse

from campaigns.design.requirement_checks import requirement_problems
from campaigns.design.services import campaign_create, stage_add, stage_link, stage_update
from campaigns.design.stage_rules import stage_rules_problems
from campaigns.models import Stage
from campaigns.workforce.qualifications import qualification_type_create
from frontend.stage_forms import StageEditForm
from frontend.stage_summary import HELP_EXAMPLES, help_examples, summary_lines
from frontend.views.stages import _editable
from qaportal.errors import DomainError
from tests.campaigns.workforce.test_quiz_gate import WHYQA

pytestmark = pytest.mark.django_db


class _Form(HTMLParser):
    """The stage form's inputs as a browser would post them (first submit button aside)."""

    def __init__(self) -> None:
        super().__init__()
        self.data: dict[str, Any] = {}
        self.inside = False
        self.select: str | None = None
        self.textarea: str | None = None
        self.options: list[tuple[str, bool]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form" and a.get("id") == "stage-form":
            self.inside = True
        if not self.inside or "disabled" in a:
            return
        if tag == "input" and a.get("name"):
            kind = a.get("type", "text")
            if kind in ("submit", "button"):
                return
            if kind == "checkbox":
                if "checked" in a:
                    self.data[a["name"]] = a.get("value", "on")
                return
            self.data[a["name"]] = a.get("value", "")
        elif tag == "select" and a.get("name"):
            self.select, self.options = a["name"], []
        elif tag == "option" and self.select is not None:
            self.options.append((a.get("value", ""), "selected" in a))
        elif tag == "textarea" and a.get("name"):
            self.textarea = a["name"]
            self.data[self.textarea] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False
        if tag == "select" and self.select is not None:
            chosen = [v for v, sel in self.options if sel]
            if chosen:
                self.data[self.select] = chosen[0]
            elif self.options:
                self.data[self.select] = self.options[0][0]
            self.select = None
        if tag == "textarea":
            self.textarea = None

    def handle_data(self, data: str) -> None:
        if self.textarea is not None:
            text = data[1:] if not self.data[self.textarea] and data.startswith("\n") else data
            self.data[self.textarea] += text


def _edit(stage: Stage) -> str:
    return reverse(
        "frontend:stage-edit", kwargs={"slug": stage.campaign.slug, "stage_id": stage.pk}
    )


def page_form(client, stage: Stage, data: dict[str, Any] | None = None) -> dict[str, Any]:
    """The inputs of the edit page (GET, or the page a POST of ``data`` answered)."""
    response = client.get(_edit(stage)) if data is None else client.post(_edit(stage), data)
    parser = _Form()
    parser.feed(response.content.decode())
    parser.data.pop("countries", None)  # a multiple select: not posted unless chosen
    return parser.data


@pytest.fixture
def campaign(requester):
    return campaign_create(owner=requester, name="Forms", slug="forms", provider="mturk")


@pytest.fixture
def stages(campaign):
    quiz = stage_add(campaign=campaign, name="Quiz", task_type="quiz", config=WHYQA)
    write = stage_add(
        campaign=campaign,
        name="Write questions",
        task_type="question_writing",
        config={"questions_per_hit": 5},
    )
    link = stage_add(campaign=campaign, name="Link answers", task_type="answer_entity_linking")
    return quiz, write, link


def _add(client, stage, prefix: str, kind: str, data=None) -> dict[str, Any]:
    data = dict(data or page_form(client, stage))
    data[f"{prefix}-add"] = kind
    data["add_row"] = prefix
    return page_form(client, stage, data)


def _save(client, stage, data):
    return client.post(_edit(stage), data)


# --- each setting: valid saves, round trip -----------------------------------------------


def test_a_requirement_added_through_the_form_saves_as_the_json(alice_client, stages):
    quiz, write, _ = stages
    data = _add(alice_client, write, "req", "approval_rate")
    assert data["req-0-kind"] == "approval_rate"
    assert data["req-0-min"] == ""
    data["req-0-min"] = "95"
    data = _add(alice_client, write, "req", "quiz_stage", data)
    assert data["req-1-kind"] == "quiz_stage"
    data["req-1-quiz_stage"] = str(quiz.pk)
    response = _save(alice_client, write, data)
    assert response.status_code == 302, response.content.decode()[:3000]
    write.refresh_from_db()
    assert write.qualification_requirements == [
        {"kind": "approval_rate", "min": 95},
        {"quiz_stage": quiz.pk},
    ]
    # Round trip: the form shows them again, and posting it untouched changes nothing.
    again = page_form(alice_client, write)
    assert again["req-0-min"] == "95"
    assert again["req-1-quiz_stage"] == str(quiz.pk)
    assert _save(alice_client, write, again).status_code == 302
    write.refresh_from_db()
    assert write.qualification_requirements[1] == {"quiz_stage": quiz.pk}


def test_every_requirement_kind_round_trips(alice_client, requester, stages):
    quiz, write, link = stages
    qt = qualification_type_create(owner=requester, name="Trusted", kind="manual")
    stored = [
        {"kind": "approval_rate", "min": 98},
        {"kind": "approved_count", "min": 1000},
        {"kind": "country", "countries": ["US", "CA"], "exclude": True},
        {"kind": "locale", "values": ["GB"]},
        {"kind": "masters"},
        {"kind": "adult"},
        {"quiz_stage": quiz.pk},
        {"round_stage": link.pk, "round": 2},
        {"graders_stage": link.pk, "round": 1},
        {"qualification_type_id": qt.pk, "min": 3},
        {"mturk_qualification_id": "3XYZ"},  # the form cannot show it: kept, JSON edits it
    ]
    stage_update(stage=write, qualification_requirements=stored)
    data = page_form(alice_client, write)
    assert data["req-2-countries"] == "US, CA"
    assert data["req-2-exclude"] == "true"
    assert data["req-3-countries"] == "GB"
    assert data["req-7-round"] == "2"
    assert data["req-9-qualification_type_id"] == str(qt.pk)
    assert _save(alice_client, write, data).status_code == 302
    write.refresh_from_db()
    assert write.qualification_requirements == stored
    # A change rewrites that entry only, in its own spelling.
    data["req-3-countries"] = "GB, IE"
    data["req-0-min"] = "90"
    assert _save(alice_client, write, data).status_code == 302
    write.refresh_from_db()
    assert write.qualification_requirements[0] == {"kind": "approval_rate", "min": 90}
    assert write.qualification_requirements[3] == {"kind": "locale", "countries": ["GB", "IE"]}
    assert write.qualification_requirements[10] == {"mturk_qualification_id": "3XYZ"}
    # Removing one.
    data = page_form(alice_client, write)
    data["req-4-remove"] = "1"
    assert _save(alice_client, write, data).status_code == 302
    write.refresh_from_db()
    assert {"kind": "masters"} not in write.qualification_requirements
    assert len(write.qualification_requirements) == len(stored) - 1


def test_a_review_rule_bonus_and_escalation_through_the_form(alice_client, stages):
    _, write, _ = stages
    data = _add(alice_client, write, "rr", "gold_accuracy")
    data["rr-0-min"] = "0.8"
    data["rr-0-action"] = "hold"
    data = _add(alice_client, write, "rr", "work_time", data)
    data["rr-1-min_seconds"] = "30"
    data["rr-1-per_item"] = "true"
    data = _add(alice_client, write, "br", "gold_bonus", data)
    data["br-0-amount"] = "0.50"
    data = _add(alice_client, write, "esc", "early_stop", data)
    data["esc-0-first"] = "3"
    data["esc-0-extend_to"] = "8"
    assert "esc-add" not in data  # one escalation rule at most
    response = _save(alice_client, write, data)
    assert response.status_code == 302, response.content.decode()[:3000]
    write.refresh_from_db()
    assert write.review_rules == [
        {"rule": "gold_accuracy", "min": 0.8, "action": "hold"},
        {"rule": "work_time", "min_seconds": 30, "per_item": True},
    ]
    assert write.bonus_rules == [{"rule": "gold_bonus", "amount": "0.50"}]
    assert write.escalation_rule == {"rule": "early_stop", "first": 3, "extend_to": 8}
    # Round trip, and a list parameter.
    data = page_form(alice_client, write)
    assert data["rr-0-min"] == "0.8"
    assert data["rr-1-per_item"] == "true"
    assert data["br-0-amount"] == "0.50"
    assert data["esc-0-first"] == "3"
    data = _add(alice_client, write, "rr", "paste_share", data)
    data["rr-2-fields"] = "question, answer"
    assert _save(alice_client, write, data).status_code == 302
    write.refresh_from_db()
    assert write.review_rules[2] == {"rule": "paste_share", "fields": ["question", "answer"]}
    assert write.bonus_rules == [{"rule": "gold_bonus", "amount": "0.50"}]


def test_linking_rules_come_from_the_linking_room(alice_client, stages):
    _, _, link = stages
    data = _add(alice_client, link, "esc", "entity_agreement")
    data["esc-0-annotators"] = "2"
    data["esc-0-max"] = "3"
    data = _add(alice_client, link, "br", "per_agreed_entity", data)
    data["br-0-amount"] = "0.05"
    assert _save(alice_client, link, data).status_code == 302
    link.refresh_from_db()
    assert link.escalation_rule == {"rule": "entity_agreement", "annotators": 2, "max": 3}
    assert link.bonus_rules == [{"rule": "per_agreed_entity", "amount": "0.05"}]


def test_the_hand_off_through_the_form(alice_client, stages):
    _, write, link = stages
    data = page_form(alice_client, write)
    data["next_stage"] = str(link.pk)
    data["ho-0-target"] = "answer_entity_linking"
    data["ho-0-exclude_answer_types"] = "numeric, boolean"
    response = _save(alice_client, write, data)
    assert response.status_code == 302, response.content.decode()[:3000]
    write.refresh_from_db()
    assert write.next_stage_id == link.pk
    assert write.handoff == {
        "target": "answer_entity_linking",
        "exclude_answer_types": ["numeric", "boolean"],
    }
    again = page_form(alice_client, write)
    assert again["ho-0-target"] == "answer_entity_linking"
    assert again["ho-0-exclude_answer_types"] == "numeric, boolean"


# --- refused: the checks' own messages, beside the input; nothing lost -----------------


def _errors_of(response, prefix: str) -> dict[str, list[str]]:
    form = response.context["form"]
    name = {r.prefix: n for n, r in form.rows.items()}[prefix]
    out: dict[str, list[str]] = {}
    for n, row in enumerate(form.rows[name].rows):
        for param, messages in row.errors.items():
            out[f"{prefix}-{n}-{param}"] = messages
    return out


def test_a_bad_value_is_refused_beside_its_input_with_the_checks_message(alice_client, stages):
    _, write, _ = stages
    data = _add(alice_client, write, "req", "approval_rate")
    data["req-0-min"] = "150"
    data = _add(alice_client, write, "rr", "gold_accuracy", data)
    data["rr-0-min"] = "2"
    data["rr-0-min_gold"] = "three"
    data = _add(alice_client, write, "br", "gold_bonus", data)  # amount left empty
    data = _add(alice_client, write, "esc", "early_stop", data)
    data["esc-0-first"] = "5"
    data["esc-0-extend_to"] = "4"
    data["name"] = "Write questions, renamed"
    response = _save(alice_client, write, data)
    assert response.status_code == 400
    errors = _errors_of(response, "req")
    expected = requirement_problems([{"kind": "approval_rate", "min": 150}])
    assert errors == {"req-0-min": expected}
    assert expected == ["requirement 1 (approval_rate): min must be a whole number from 0 to 100"]
    rules = stage_rules_problems(
        review_rules=[{"rule": "gold_accuracy", "min": 2, "min_gold": "three"}],
        bonus_rules=[{"rule": "gold_bonus"}],
        escalation_rule={"rule": "early_stop", "first": 5, "extend_to": 4},
    )
    assert _errors_of(response, "rr") == {
        "rr-0-min": [rules["review_rules"][0]],
        "rr-0-min_gold": [rules["review_rules"][1]],
    }
    assert _errors_of(response, "br") == {"br-0-amount": rules["bonus_rules"]}
    assert rules["escalation_rule"] == ["escalation_rule: extend_to must exceed first"]
    assert _errors_of(response, "esc") == {"esc-0-extend_to": rules["escalation_rule"]}
    # Beside the input in the page, and everything typed is still there.
    page = response.content.decode()
    assert 'id="req-0-min-error"' in page
    assert "min must be a whole number from 0 to 100" in page
    kept = page_form(alice_client, write, data)
    for key in ("req-0-min", "rr-0-min", "rr-0-min_gold", "esc-0-first", "name"):
        assert kept[key] == data[key], key
    write.refresh_from_db()
    assert write.qualification_requirements == []
    assert write.name == "Write questions"


def test_the_api_refuses_the_same_with_the_same_message(token_client, stages):
    _, write, _ = stages
    url = f"/api/v1/stages/{write.pk}/"
    response = token_client.patch(
        url, {"qualification_requirements": [{"kind": "approval_rate", "min": 150}]}, format="json"
    )
    assert response.status_code == 400
    assert "min must be a whole number from 0 to 100" in json.dumps(response.json())
    response = token_client.patch(
        url, {"review_rules": [{"rule": "gold_accuracy", "min": 2}]}, format="json"
    )
    assert response.status_code == 400
    assert "review_rules[0] (gold_accuracy): min must be between 0 and 1" in json.dumps(
        response.json()
    )


def test_a_service_refusal_on_saving_lands_beside_the_row(alice_client, campaign, stages):
    _, write, _ = stages
    other = campaign_create(owner=campaign.owner, name="Other", slug="other", provider="mturk")
    elsewhere = stage_add(campaign=other, name="Quiz elsewhere", task_type="quiz", config=WHYQA)
    data = _add(alice_client, write, "req", "quiz_stage")
    data["req-0-quiz_stage"] = str(elsewhere.pk)  # not offered; posted anyway
    response = _save(alice_client, write, data)
    assert response.status_code == 400
    row = response.context["form"].rows["qualification_requirements"].rows[0]
    assert row.errors == {
        "quiz_stage": [f"requirement 1: quiz_stage {elsewhere.pk} is not a stage of this campaign"]
    }
    with pytest.raises(DomainError, match="is not a stage of this campaign"):
        stage_update(stage=write, qualification_requirements=[{"quiz_stage": elsewhere.pk}])


def test_changing_both_the_rows_and_the_json_is_refused_and_both_are_kept(alice_client, stages):
    _, write, _ = stages
    data = _add(alice_client, write, "req", "approval_rate")
    data["req-0-min"] = "95"
    data["qualification_requirements"] = '[{"kind": "masters"}]'
    response = _save(alice_client, write, data)
    assert response.status_code == 400
    assert "change it in one place" in str(response.context["form"].errors)
    kept = page_form(alice_client, write, data)
    assert kept["req-0-min"] == "95"
    assert json.loads(kept["qualification_requirements"]) == [{"kind": "masters"}]


def test_the_json_still_edits_and_wins_when_only_it_changed(alice_client, stages):
    _, write, _ = stages
    data = page_form(alice_client, write)
    data["review_rules"] = '[{"rule": "auto_approve"}]'
    assert _save(alice_client, write, data).status_code == 302
    write.refresh_from_db()
    assert write.review_rules == [{"rule": "auto_approve"}]
    # A JSON refusal opens the JSON with the message.
    data = page_form(alice_client, write)
    data["review_rules"] = '[{"rule": "gold_accuracy", "min": 7}]'
    response = _save(alice_client, write, data)
    assert response.status_code == 400
    assert "review_rules[0] (gold_accuracy): min must be between 0 and 1" in str(
        response.context["form"]["review_rules"].errors
    )
    assert response.context["form"].setting("review_rules")["json_open"]


def test_frozen_settings_are_shown_disabled_and_rules_still_edit(alice_client, stages):
    _, write, _ = stages
    stage_update(stage=write, qualification_requirements=[{"kind": "approval_rate", "min": 95}])
    write.campaign.__class__.objects.filter(pk=write.campaign_id).update(state="live")
    write.refresh_from_db()
    form = StageEditForm(stage=write, editable=_editable(write.campaign))
    assert form.setting("qualification_requirements")["frozen"]
    assert not form.setting("review_rules")["frozen"]
    data = _add(alice_client, write, "rr", "auto_approve")
    assert "req-rows" not in data
    assert "req-0-min" not in data
    assert _save(alice_client, write, data).status_code == 302
    write.refresh_from_db()
    assert write.review_rules == [{"rule": "auto_approve"}]
    assert write.qualification_requirements == [{"kind": "approval_rate", "min": 95}]


# --- the help's examples save and show on the stage card ---------------------------------


def _card(client, stage) -> str:
    url = reverse("frontend:campaign-detail", kwargs={"slug": stage.campaign.slug})
    page = client.get(url).content.decode()
    start = page.index(f'id="stage-{stage.pk}"')
    return html.unescape(page[start : page.index("</dl>", page.index("stage-settings", start))])


@pytest.mark.parametrize(
    "setting", ["qualification_requirements", "review_rules", "bonus_rules", "escalation_rule"]
)
def test_every_help_example_saves_and_shows_on_the_stage_card(alice_client, stages, setting):
    quiz, write, _link = stages
    examples = HELP_EXAMPLES[setting]
    assert examples
    for example in examples:
        entry = json.loads(example.replace("STAGE_ID", str(quiz.pk)))
        value = entry if setting == "escalation_rule" else [entry]
        data = page_form(alice_client, write)
        data[setting] = json.dumps(value)
        response = _save(alice_client, write, data)
        assert response.status_code == 302, (example, response.content.decode()[:3000])
        write.refresh_from_db()
        assert getattr(write, setting) == value
        card = _card(alice_client, write)
        lines = summary_lines(write)[setting]
        assert len(lines) == 1, example
        assert lines[0] in card, (lines, card[-1500:])
    # The help the page gives is these examples (with a real stage id).
    page = alice_client.get(_edit(write)).content.decode()
    shown = help_examples(setting, stage_id=quiz.pk)
    assert html.escape(shown, quote=True) in page or shown in html.unescape(page)


def test_the_card_says_every_setting_in_words(alice_client, requester, stages):
    quiz, write, link = stages
    stage_update(
        stage=write,
        qualification_requirements=[
            {"kind": "approval_rate", "min": 95},
            {"quiz_stage": quiz.pk},
            {"round_stage": link.pk, "round": 2},
        ],
        review_rules=[{"rule": "gold_accuracy", "min": 0.8}],
        bonus_rules=[{"rule": "gold_bonus", "amount": "0.50"}],
        escalation_rule={"rule": "early_stop", "first": 3, "extend_to": 8},
    )
    stage_link(stage=write, next_stage=link, handoff={"target": "answer_entity_linking"})
    lines = summary_lines(write)
    assert lines["qualification_requirements"] == [
        "Approval rate at least 95 %",
        "Passed the quiz of stage “Quiz”",
        "Qualified in a round of stage “Link answers”, round 2",
    ]
    assert lines["review_rules"] == ["Gold accuracy: min 0.8"]
    assert lines["bonus_rules"] == ["Gold bonus: amount 0.50"]
    assert lines["escalation_rule"] == ["Early stop: first 3, extend to 8"]
    assert lines["handoff"] == ["Feeds “Link answers”: target answer_entity_linking"]
    card = _card(alice_client, write)
    assert "Approval rate at least 95 %" in card
    assert "Early stop: first 3, extend to 8" in card
