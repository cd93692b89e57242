"""Adversarial Mintaka question writing (issue 38): a worker on the local workforce
writes a question and its answer, asks a model (the in-process OpenAI fake) the question
without the answer, and the app judges the model's answer where its type allows."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from campaigns.assist.adversarial import adversarial_fools_verify
from campaigns.assist.endpoints import model_endpoint_create
from campaigns.design.services import (
    campaign_create,
    stage_add,
    stage_link,
    stage_update,
)
from campaigns.models import (
    AdversarialTry,
    Assignment,
    CampaignState,
    Item,
    ItemSource,
    LedgerEntry,
    LedgerKind,
    ModelEndpoint,
    Stage,
)
from campaigns.platforms.publishing import campaign_start
from campaigns.tasktypes import task_type_get
from campaigns.work.decisions import assignment_approve
from campaigns.work.invites import invite_create, invite_token
from qaportal.errors import DomainError
from tests.campaigns.assist.fake_openai import FakeOpenAI

pytestmark = pytest.mark.django_db(transaction=True)

KEY = "sk-test-0123456789abcdef"


class Model:
    """What the fake model answers next, and the prompts it was sent."""

    def __init__(self) -> None:
        self.reply = "I don't know"
        self.prompts: list[str] = []

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        self.prompts.append(" ".join(str(m.get("content", "")) for m in messages))
        return self.reply


@pytest.fixture
def model() -> Model:
    return Model()


@pytest.fixture
def fake(model: Model) -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY, answer=model) as server:
        yield server


def _endpoint(owner, fake: FakeOpenAI) -> ModelEndpoint:
    return model_endpoint_create(
        owner=owner,
        values={
            "name": "fake",
            "kind": "openai",
            "base_url": fake.base_url,
            "model": "m",
            "api_key": fake.api_key,
            "timeout_seconds": "2",
        },
    )


def _writing_stage(owner, endpoint: ModelEndpoint, complexity_type: str) -> Stage:
    campaign = campaign_create(owner=owner, name="Beat the model", slug="beat-mintaka")
    stage = stage_add(
        campaign=campaign,
        name="Write",
        task_type="question_writing",
        config={"questions_per_hit": 1, "adversarial": {"endpoint": endpoint.pk, "max_tries": 2}},
    )
    Item.objects.create(
        stage=stage,
        external_id="cell-1",
        data={"topic": "books", "complexity_type": complexity_type},
        source=ItemSource.UPLOADED,
    )
    campaign_start(campaign=campaign, to_state=CampaignState.PILOT)
    stage.refresh_from_db()
    return stage


def _worker(stage: Stage) -> tuple[Client, Assignment]:
    client = Client()
    invite = invite_create(
        campaign=stage.campaign, created_by=stage.campaign.owner, expires_in=timedelta(days=1)
    )
    client.post(reverse("worker:invite", kwargs={"token": invite_token(invite=invite)}))
    response = client.post(reverse("worker:accept", kwargs={"stage_id": stage.pk}))
    assert response.status_code == 302, response.content
    return client, Assignment.objects.get(hit__stage=stage)


def _form(question: str, answer: str, **more: str) -> dict[str, str]:
    form = {"questions/0/question": question, "questions/0/answer": answer}
    form.update({f"questions/0/{k}": v for k, v in more.items()})
    return form


def _ask(client: Client, assignment: Assignment, form: dict[str, str]) -> str:
    url = reverse("worker:adversarial_try", kwargs={"assignment_id": assignment.pk})
    response = client.post(url, form)
    assert response.status_code == 302, response.content
    page = reverse("worker:assignment", kwargs={"assignment_id": assignment.pk})
    return client.get(page).content.decode()


ADAMS = _form(
    "Who wrote The Hitchhiker's Guide to the Galaxy?", "Douglas Adams", answer_entity="Q42"
)


@pytest.mark.parametrize(
    "reply",
    [
        "http://www.wikidata.org/entity/Q42",
        "wd:q42",
        "It was Douglas Adams.",
    ],
)
def test_an_entity_answer_in_another_spelling_is_the_model_right(requester, fake, model, reply):
    model.reply = reply
    stage = _writing_stage(requester, _endpoint(requester, fake), "generic")
    client, assignment = _worker(stage)
    form_page = client.get(reverse("worker:assignment", kwargs={"assignment_id": assignment.pk}))
    assert "Wikidata id of the answer" in form_page.content.decode()

    html = _ask(client, assignment, ADAMS)

    attempt = AdversarialTry.objects.get()
    assert attempt.entry == {
        "question": "Who wrote The Hitchhiker's Guide to the Galaxy?",
        "answer": "Q42",
        "answer_type": "entity",
        "answer_label": "Douglas Adams",
        "answer_text": "Douglas Adams",
    }
    assert (attempt.model_answer, attempt.judged_by, attempt.fooled) == (reply, "auto", False)
    assert "The model got it right" in html
    # The model was asked the question, closed book, without the worker's answer.
    (prompt,) = model.prompts
    assert "Who wrote The Hitchhiker's Guide to the Galaxy?" in prompt
    assert "Q42" not in prompt.replace("(Q...)", "")
    assert "Douglas Adams" not in prompt
    assert "Passage" not in prompt


def test_another_entity_fools_the_model_and_the_claim_is_stored(requester, fake, model):
    model.reply = "Q5"
    stage = _writing_stage(requester, _endpoint(requester, fake), "generic")
    client, assignment = _worker(stage)

    html = _ask(client, assignment, ADAMS)

    assert "You fooled the model" in html
    page = reverse("worker:assignment", kwargs={"assignment_id": assignment.pk})
    assert client.post(page, ADAMS).status_code == 302
    assignment.refresh_from_db()
    assert isinstance(assignment.answers, dict)
    claim = assignment.answers["adversarial"]["cell-1"]
    assert claim["fooled"] is True
    assert claim["entry"]["answer"] == "Q42"
    assert assignment.answers["questions"][0]["answer_entity"] == "Q42"


COUNT = _form(
    "How many Hitchhiker's Guide novels did Douglas Adams write?",
    "5",
    numeric_value="5",
    counted_entities="\n".join(["H1", "H2", "H3", "H4", "H5"]),
)


@pytest.mark.parametrize(
    ("reply", "fooled"),
    [("He wrote six of them.", True), ("4", True), ("Five.", False), ("5 novels", False)],
)
def test_a_number_is_judged(requester, fake, model, reply, fooled):
    model.reply = reply
    stage = _writing_stage(requester, _endpoint(requester, fake), "count")
    client, assignment = _worker(stage)

    _ask(client, assignment, COUNT)

    attempt = AdversarialTry.objects.get()
    assert (attempt.entry["answer"], attempt.entry["answer_type"]) == ("5", "numeric")
    assert (attempt.judged_by, attempt.fooled) == ("auto", fooled)


def test_an_answer_the_app_cannot_judge_is_marked_by_the_worker(requester, fake, model):
    model.reply = "No."
    stage = _writing_stage(requester, _endpoint(requester, fake), "yesno")
    client, assignment = _worker(stage)

    html = _ask(client, assignment, _form("Did Douglas Adams write Dirk Gently?", "Yes"))

    attempt = AdversarialTry.objects.get()
    assert attempt.entry["answer_type"] == "boolean"
    assert attempt.judged_by == ""
    assert "Is the model's answer right?" in html


def test_the_workers_text_is_stored_first_and_kept_when_the_model_fails(requester, fake):
    fake.fail("garbage")
    stage = _writing_stage(requester, _endpoint(requester, fake), "generic")
    client, assignment = _worker(stage)

    html = _ask(client, assignment, ADAMS)

    attempt = AdversarialTry.objects.get()
    assert attempt.question == "Who wrote The Hitchhiker's Guide to the Galaxy?"
    assert attempt.entry["answer_text"] == "Douglas Adams"
    assert attempt.model_unavailable
    assert "The model is unavailable right now" in html
    page = reverse("worker:assignment", kwargs={"assignment_id": assignment.pk})
    assert client.post(page, ADAMS).status_code == 302
    assignment.refresh_from_db()
    assert isinstance(assignment.answers, dict)
    assert assignment.answers["questions"][0]["answer"] == "Douglas Adams"
    assert assignment.answers["adversarial"]["cell-1"]["model_unavailable"] is True


def test_a_bad_wikidata_id_makes_no_try(requester, fake):
    stage = _writing_stage(requester, _endpoint(requester, fake), "generic")
    client, assignment = _worker(stage)
    url = reverse("worker:adversarial_try", kwargs={"assignment_id": assignment.pk})

    response = client.post(url, {**ADAMS, "questions/0/answer_entity": "Douglas"})

    assert response.status_code == 400
    assert "Give one Wikidata id" in response.content.decode()
    assert not AdversarialTry.objects.exists()


# --- The stage settings ---------------------------------------------------------------


def _stage_add(owner, endpoint: ModelEndpoint, **config: Any) -> Callable[[], Stage]:
    campaign = campaign_create(owner=owner, name="C", slug="c")
    return lambda: stage_add(
        campaign=campaign,
        name="Write",
        task_type="question_writing",
        config={**config, "adversarial": {"endpoint": endpoint.pk}},
    )


def test_the_baseline_cannot_answer_without_a_passage(requester):
    baseline = model_endpoint_create(
        owner=requester, values={"name": "bm25", "kind": "baseline_bm25"}
    )

    with pytest.raises(DomainError) as refused:
        _stage_add(requester, baseline, questions_per_hit=1)()

    assert "register an OpenAI-compatible model endpoint" in str(refused.value.errors)


def test_one_question_per_task(requester, fake):
    with pytest.raises(DomainError) as refused:
        _stage_add(requester, _endpoint(requester, fake))()

    assert "set questions_per_hit to 1" in str(refused.value.errors)


def test_the_api_says_why(token_client, requester):
    baseline = model_endpoint_create(
        owner=requester, values={"name": "bm25", "kind": "baseline_bm25"}
    )
    campaign = campaign_create(owner=requester, name="C", slug="c")
    response = token_client.post(
        f"/api/v1/campaigns/{campaign.slug}/stages/",
        {
            "name": "Write",
            "task_type": "question_writing",
            "config": {"questions_per_hit": 1, "adversarial": {"endpoint": baseline.pk}},
        },
        format="json",
    )
    assert response.status_code == 400, response.content
    assert "OpenAI-compatible" in response.content.decode()


# --- Multiple-choice question writing ---------------------------------------------------

CITIES = ["Paris", "Lyon", "Marseille", "Nice"]
MC_FORM = {
    "questions/0/question": "Which city hosts the silk museum?",
    **{f"questions/0/options/{o}": city for o, city in enumerate(CITIES)},
    "questions/0/correct": "1",
}


def _mc_stage(owner, endpoint: ModelEndpoint) -> Stage:
    campaign = campaign_create(owner=owner, name="Beat the model", slug="beat-mc")
    stage = stage_add(
        campaign=campaign,
        name="Write",
        task_type="mc_question_writing",
        config={"questions_per_passage": 1, "adversarial": {"endpoint": endpoint.pk}},
    )
    Item.objects.create(
        stage=stage,
        external_id="passage-1",
        data={"passage": "The silk museum is in Lyon. Paris has the Louvre."},
        source=ItemSource.UPLOADED,
    )
    campaign_start(campaign=campaign, to_state=CampaignState.PILOT)
    stage.refresh_from_db()
    return stage


@pytest.mark.parametrize(
    ("reply", "fooled"), [("(b) Lyon", False), ("Lyon.", False), ("A", True), ("Nice", True)]
)
def test_a_multiple_choice_option_is_judged(requester, fake, model, reply, fooled):
    model.reply = reply
    stage = _mc_stage(requester, _endpoint(requester, fake))
    client, assignment = _worker(stage)

    _ask(client, assignment, MC_FORM)

    attempt = AdversarialTry.objects.get()
    assert (attempt.entry["answer"], attempt.entry["answer_type"]) == ("B", "option")
    assert (attempt.judged_by, attempt.fooled) == ("auto", fooled)
    # The question and its options on the passage, not the writer's mark.
    (prompt,) = model.prompts
    assert "B) Lyon" in prompt
    assert "The silk museum is in Lyon." in prompt
    assert "correct" not in prompt.casefold()


def test_multiple_choice_settings(requester, fake):
    baseline = model_endpoint_create(
        owner=requester, values={"name": "bm25", "kind": "baseline_bm25"}
    )
    campaign = campaign_create(owner=requester, name="C", slug="c")
    for endpoint, config, why in [
        (baseline, {"questions_per_passage": 1}, "OpenAI-compatible"),
        (_endpoint(requester, fake), {}, "set questions_per_passage to 1"),
    ]:
        with pytest.raises(DomainError) as refused:
            stage_add(
                campaign=campaign,
                name="Write",
                task_type="mc_question_writing",
                config={**config, "adversarial": {"endpoint": endpoint.pk}},
            )
        assert why in str(refused.value.errors)


# --- Fools confirmed by validators, the bonus paid ---------------------------------------


def _with_validation(writing: Stage, handoff: dict[str, Any], next_stage: Stage | None = None):
    """A fool-validation stage fed by ``writing`` (one validator) and the writing
    stage's ``verified_fool`` bonus, added in the pilot."""
    campaign = writing.campaign
    validation = stage_add(
        campaign=campaign,
        name="Confirm",
        task_type="adversarial_fool_validation",
        assignments_per_hit=1,
    )
    if "fools_to" in handoff:
        handoff = {**handoff, "fools_to": validation.pk}
    stage_update(stage=writing, bonus_rules=[{"rule": "verified_fool", "amount": "0.25"}])
    stage_link(stage=writing, next_stage=next_stage or validation, handoff=handoff)
    writing.refresh_from_db()
    validation.refresh_from_db()
    return validation


def _write_a_fool(stage: Stage, form: dict[str, str]) -> Assignment:
    client, assignment = _worker(stage)
    assert "You fooled the model" in _ask(client, assignment, form)
    page = reverse("worker:assignment", kwargs={"assignment_id": assignment.pk})
    assert client.post(page, form).status_code == 302
    assignment.refresh_from_db()
    assignment_approve(assignment=assignment, source="test", reason="ok")
    return assignment


def _validate(validation: Stage, verdict: str) -> str:
    """One validator's page (its HTML) and verdict, posted as the worker posts it."""
    client, check = _worker(validation)
    page = reverse("worker:assignment", kwargs={"assignment_id": check.pk})
    html = client.get(page).content.decode()
    assert client.post(page, {"items/0/verdict": verdict}).status_code == 302
    return html


@pytest.mark.parametrize(("verdict", "verified"), [("fooled", True), ("model_right", False)])
def test_a_mintaka_fool_is_confirmed_and_paid_once(requester, fake, model, verdict, verified):
    model.reply = "Q5"
    writing = _writing_stage(requester, _endpoint(requester, fake), "generic")
    linking = stage_add(campaign=writing.campaign, name="Link", task_type="answer_entity_linking")
    # The pairs go on to answer linking; the claimed fools beside them to validation.
    validation = _with_validation(writing, {"fools_to": 0}, next_stage=linking)

    written = _write_a_fool(writing, ADAMS)

    assert Item.objects.filter(stage=linking).count() == 1
    item = Item.objects.get(stage=validation)
    assert item.data == {
        "topic": "books",
        "writer_answer": "Douglas Adams",
        "writer_entity": "Q42",
        "question": "Who wrote The Hitchhiker's Guide to the Galaxy?",
        "model_answer": "Q5",
        "source": {
            "assignment": written.pk,
            "item": Item.objects.get(stage=writing).pk,
            "try": 1,
        },
    }
    html = _validate(validation, verdict)
    for shown in ("Douglas Adams", "Q42", "Q5"):
        assert shown in html
    attempt = AdversarialTry.objects.get()
    assert attempt.verified is verified
    bonuses = LedgerEntry.objects.filter(kind=LedgerKind.BONUS)
    assert [b.amount for b in bonuses] == ([Decimal("0.25")] if verified else [])
    # Asked again (a replayed event): still one bonus at most.
    check = Assignment.objects.get(hit__stage=validation)
    adversarial_fools_verify(
        assignment=check, stage=validation, task_type=task_type_get(validation.task_type)
    )
    assert bonuses.count() == (1 if verified else 0)


def test_a_multiple_choice_fool_is_confirmed_and_paid(requester, fake, model):
    model.reply = "A"
    writing = _mc_stage(requester, _endpoint(requester, fake))
    validation = _with_validation(writing, {"target": "adversarial_fool_validation"})

    _write_a_fool(writing, MC_FORM)

    item = Item.objects.get(stage=validation)
    assert item.data["writer_option"] == "B"
    assert item.data["options"][1] == {"id": "B", "text": "Lyon"}
    assert item.data["passage"].startswith("The silk museum is in Lyon.")
    html = _validate(validation, "fooled")
    assert "B) Lyon" in html
    assert "answer:</strong> A</p>" in html
    assert AdversarialTry.objects.get().verified is True
    (bonus,) = LedgerEntry.objects.filter(kind=LedgerKind.BONUS)
    assert bonus.amount == Decimal("0.25")


def test_a_fool_validation_stage_takes_only_claimed_fools(requester, fake, token_client):
    endpoint = _endpoint(requester, fake)
    campaign = campaign_create(owner=requester, name="C", slug="c")

    def add(name: str, task_type: str, **config: Any) -> Stage:
        return stage_add(campaign=campaign, name=name, task_type=task_type, config=config)

    plain = add("Plain", "question_writing", questions_per_hit=1)
    adversarial = add(
        "Adversarial",
        "question_writing",
        questions_per_hit=1,
        adversarial={"endpoint": endpoint.pk},
    )
    validation = add("Confirm", "adversarial_fool_validation")
    linking = add("Link", "answer_entity_linking")
    fools: dict[str, Any] = {"target": "adversarial_fool_validation"}
    refused: list[tuple[Stage, Stage, dict[str, Any]]] = [
        (plain, validation, fools),  # no adversarial option
        (plain, linking, {"fools_to": validation.pk}),
        (adversarial, validation, {}),  # hands on pairs, not fools
        (adversarial, linking, {"fools_to": linking.pk}),  # fools to a stage not confirming
        (adversarial, linking, fools),
    ]
    for stage, next_stage, handoff in refused:
        with pytest.raises(DomainError):
            stage_link(stage=stage, next_stage=next_stage, handoff=handoff)
    response = token_client.post(
        f"/api/v1/stages/{plain.pk}/link/",
        {"next_stage": validation.pk, "handoff": fools},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert "no claimed fools to confirm" in response.content.decode()
    stage_link(stage=adversarial, next_stage=validation, handoff=fools)
    stage_link(stage=adversarial, next_stage=linking, handoff={"fools_to": validation.pk})
    # The option stays while the fools go to validation.
    with pytest.raises(DomainError):
        stage_update(stage=adversarial, config={"questions_per_hit": 1})
