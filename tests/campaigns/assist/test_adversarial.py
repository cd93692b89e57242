"""Adversarial writing: the stage option, tries (the worker's text first, the model's
answer off the request path), judging by the task type or the worker, the claim in the
stored answer, validation of fools and the bonus paid once; the worker page's flow."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import transaction
from django.test import Client
from django.urls import reverse

from campaigns.assist.adversarial import (
    adversarial_fools_verify,
    adversarial_try_make,
    adversarial_try_mark,
)
from campaigns.assist.calls import model_call_run
from campaigns.assist.endpoints import model_endpoint_create
from campaigns.assist.judging import adversarial_try_settle
from campaigns.assist.selectors import adversarial_panel
from campaigns.design.services import campaign_create, stage_add, stage_link
from campaigns.insights.adversarial import campaign_fooled_rates
from campaigns.models import (
    AdversarialTry,
    Assignment,
    CampaignState,
    Item,
    ItemSource,
    LedgerEntry,
    LedgerKind,
    ModelCall,
    ModelCallStatus,
    Provider,
    Stage,
)
from campaigns.platforms.publishing import campaign_start
from campaigns.tasktypes import task_type_get
from campaigns.work.allocation import assignment_accept
from campaigns.work.decisions import assignment_approve
from campaigns.work.invites import invite_create, invite_redeem, invite_token
from campaigns.work.submission import assignment_submit
from qaportal.errors import DomainError
from tests.campaigns.assist.fake_openai import FakeOpenAI

pytestmark = pytest.mark.django_db(transaction=True)

SENTENCES = [
    "The Amazon river flows through Brazil.",
    "Its basin covers seven million square kilometres.",
    "Francisco de Orellana sailed it in 1542.",
]
WRITER = task_type_get("adversarial_passage_question")
VALIDATOR = task_type_get("adversarial_fool_validation")


def _pipeline(owner, *, endpoint=None, max_tries=3, judge="auto", validators=1, bonus="0.50"):
    campaign = campaign_create(owner=owner, name="Beat the model", slug="beat")
    if endpoint is None:
        endpoint = model_endpoint_create(
            owner=owner, values={"name": "bm25", "kind": "baseline_bm25"}
        )
    writing = stage_add(
        campaign=campaign,
        name="Write",
        task_type="adversarial_passage_question",
        config={"adversarial": {"endpoint": endpoint.pk, "max_tries": max_tries, "judge": judge}},
        bonus_rules=[{"rule": "verified_fool", "amount": bonus}],
    )
    validation = stage_add(
        campaign=campaign,
        name="Validate",
        task_type="adversarial_fool_validation",
        assignments_per_hit=validators,
    )
    stage_link(stage=writing, next_stage=validation, handoff={})
    Item.objects.create(
        stage=writing,
        external_id="p1",
        data={"title": "Amazon", "sentences": SENTENCES},
        source=ItemSource.UPLOADED,
    )
    campaign_start(campaign=campaign, to_state=CampaignState.PILOT)
    writing.refresh_from_db()
    validation.refresh_from_db()
    return writing, validation


def _worker_assignment(stage: Stage):
    invite = invite_create(
        campaign=stage.campaign, created_by=stage.campaign.owner, expires_in=timedelta(days=1)
    )
    _, worker = invite_redeem(token=invite_token(invite=invite))
    return worker, assignment_accept(stage=stage, worker=worker)


def _answers(assignment: Assignment) -> dict:
    answers = Assignment.objects.get(pk=assignment.pk).answers
    assert isinstance(answers, dict)
    return answers


def _form(question: str, sentence: int) -> dict[str, str]:
    return {"items/0/question": question, "items/0/sentences": str(sentence)}


# --- The task type judges ------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Francisco de Orellana sailed it in 1542.", True),
        ("1542", True),
        ("The Amazon river flows through Brazil.", False),
        ("Brazil", False),
        ("Nobody knows", None),
    ],
)
def test_sentence_id_judging(answer, expected):
    entry = {"question": "Who sailed it?", "sentences": [2]}
    data = {"sentences": SENTENCES}

    assert WRITER.model_answer_judge(entry=entry, data=data, model_answer=answer) is expected


@pytest.mark.parametrize(
    ("entry", "answer", "expected"),
    [
        ({"answer": "1,542", "answer_type": "number"}, "In 1542.", True),
        ({"answer": "1542", "answer_type": "number"}, "About 1,600 years ago.", False),
        ({"answer": "wd:Q5", "answer_type": "entity"}, "http://www.wikidata.org/entity/Q5", True),
        ({"answer": "1542-06-01", "answer_type": "date"}, "On 1 June 1541", False),
    ],
)
def test_a_typed_answer_is_judged_where_the_sentences_do_not_tell(entry, answer, expected):
    entry = {"question": "When did Orellana sail it?", "sentences": [], **entry}
    data = {"sentences": SENTENCES}

    assert WRITER.model_answer_judge(entry=entry, data=data, model_answer=answer) is expected


def test_a_task_type_without_an_answer_type_leaves_judging_to_the_worker():
    tt = task_type_get("question_writing")
    assert tt.model_answer_judge(entry={"question": "q"}, data={}, model_answer="x") is None


def test_validator_verdicts():
    assert VALIDATOR.fool_verdict({"verdict": "fooled"}) is True
    assert VALIDATOR.fool_verdict({"verdict": "model_right"}) is False
    assert VALIDATOR.fool_verdict({"verdict": "bogus"}) is None


# --- The stage option -----------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        {"endpoint": "one"},
        {"endpoint": 1, "max_tries": 0},
        {"endpoint": 1, "judge": "model"},
        {"endpoint": 1, "colour": "red"},
        {"max_tries": 2},
    ],
)
def test_bad_adversarial_options_are_refused(bad):
    assert WRITER.validate_config({"adversarial": bad})


def test_the_option_is_refused_where_the_task_type_cannot_write_adversarially(requester):
    campaign = campaign_create(owner=requester, name="C", slug="c")
    endpoint = model_endpoint_create(owner=requester, values={"name": "b", "kind": "baseline_bm25"})
    with pytest.raises(DomainError):
        stage_add(
            campaign=campaign,
            name="Rephrase",
            task_type="rephrase",
            config={"adversarial": {"endpoint": endpoint.pk}},
        )
    with pytest.raises(DomainError):
        stage_add(
            campaign=campaign,
            name="Write",
            task_type="adversarial_passage_question",
            config={"adversarial": {"endpoint": endpoint.pk + 1000}},
        )
    with pytest.raises(DomainError):
        stage_add(
            campaign=campaign,
            name="Write",
            task_type="adversarial_passage_question",
            bonus_rules=[{"rule": "verified_fool", "amount": "-1"}],
        )


def test_the_api_refuses_a_bad_option(token_client, requester):
    campaign = campaign_create(owner=requester, name="C", slug="c")
    response = token_client.post(
        f"/api/v1/campaigns/{campaign.slug}/stages/",
        {
            "name": "Write",
            "task_type": "adversarial_passage_question",
            "config": {"adversarial": {"endpoint": 1, "max_tries": 99}},
        },
        format="json",
    )
    assert response.status_code == 400, response.content
    assert "adversarial" in response.content.decode()


# --- Tries ------------------------------------------------------------------------------


def test_a_try_stores_the_text_with_its_call_and_the_app_judges(requester):
    writing, _ = _pipeline(requester)
    _, assignment = _worker_assignment(writing)

    outcome = adversarial_try_make(
        assignment=assignment, form=_form("When did Francisco de Orellana sail it?", 2)
    )

    attempt = AdversarialTry.objects.get()
    assert outcome.attempt == attempt
    assert not outcome.errors
    assert attempt.question == "When did Francisco de Orellana sail it?"
    assert attempt.entry == {
        "question": "When did Francisco de Orellana sail it?",
        "sentences": [2],
    }
    call = ModelCall.objects.get()
    assert attempt.model_call == call
    assert call.try_number == 1
    assert call.assignment_id == assignment.pk
    assert call.purpose == "adversarial"
    # Eager mode: the baseline answered at commit, and the app compared the sentences.
    assert call.status == ModelCallStatus.DONE
    attempt.refresh_from_db()
    assert attempt.model_answer == SENTENCES[2]
    assert attempt.judged_by == "auto"
    assert attempt.fooled is False


def test_settling_judges_a_typed_answer(requester):
    writing, _ = _pipeline(requester)
    _, assignment = _worker_assignment(writing)
    adversarial_try_make(
        assignment=assignment, form=_form("When did Francisco de Orellana sail it?", 2)
    )
    attempt = AdversarialTry.objects.get()
    call_id = attempt.model_call_id
    assert call_id is not None
    # As a task type recording a number would have stored it, and a model answering
    # with a number in another spelling (no sentence of the passage quoted).
    AdversarialTry.objects.filter(pk=attempt.pk).update(
        entry={"question": attempt.question, "answer": "1,542", "answer_type": "number"},
        judged_by="",
        fooled=None,
    )
    ModelCall.objects.filter(pk=call_id).update(answer="It was 1542")

    with transaction.atomic():
        settled = adversarial_try_settle(call=ModelCall.objects.get(pk=call_id))

    assert settled is not None
    assert (settled.judged_by, settled.fooled) == ("auto", False)
    assert settled.model_answer == "It was 1542"


def test_tries_up_to_the_limit_then_submit_claims_the_fool(requester):
    writing, _ = _pipeline(requester, max_tries=2)
    worker, assignment = _worker_assignment(writing)
    # A question BM25 gets wrong: its words point at the first sentence.
    adversarial_try_make(assignment=assignment, form=_form("Where does the Amazon river flow?", 0))
    first = AdversarialTry.objects.get(try_number=1)
    assert first.fooled is False
    adversarial_try_make(
        assignment=assignment, form=_form("Which river did the explorer sail in Brazil?", 2)
    )
    second = AdversarialTry.objects.get(try_number=2)
    assert second.model_answer == SENTENCES[0]
    assert second.fooled is True
    panel = adversarial_panel(stage=writing, assignment_id=assignment.pk)
    assert panel is not None
    assert not panel.allow.may_try
    assert panel.allow.may_submit
    with pytest.raises(DomainError):
        adversarial_try_make(assignment=assignment, form=_form("One more?", 1))

    result = assignment_submit(
        assignment_id=assignment.pk,
        worker=worker,
        form=_form("Which river did the explorer sail in Brazil?", 2),
        telemetry=None,
    )

    assert result.stored, result.errors
    claimed = _answers(assignment)["adversarial"]["p1"]
    assert claimed["try"] == 2
    assert claimed["fooled"] is True
    assert claimed["tries"] == 2
    assert claimed["model_answer"] == SENTENCES[0]
    assert claimed["model_id"] == "baseline-bm25"


def test_invalid_text_makes_no_try(requester):
    writing, _ = _pipeline(requester)
    _, assignment = _worker_assignment(writing)

    outcome = adversarial_try_make(assignment=assignment, form=_form("no question mark", 9))

    assert outcome.attempt is None
    assert outcome.errors
    assert not AdversarialTry.objects.exists()
    assert not ModelCall.objects.exists()


def test_the_worker_marks_when_the_app_may_not_judge(requester):
    writing, _ = _pipeline(requester, judge="worker")
    _, assignment = _worker_assignment(writing)
    adversarial_try_make(assignment=assignment, form=_form("Who sailed the river?", 2))
    attempt = AdversarialTry.objects.get()
    assert attempt.model_answer
    assert attempt.judged_by == ""
    assert attempt.fooled is None
    panel = adversarial_panel(stage=writing, assignment_id=assignment.pk)
    assert panel is not None
    assert panel.last is not None
    assert panel.last.to_mark
    assert not panel.allow.may_try
    assert not panel.allow.may_submit

    adversarial_try_mark(assignment=assignment, try_number=1, model_right=False)

    attempt.refresh_from_db()
    assert attempt.fooled is True
    assert attempt.judged_by == "worker"
    with pytest.raises(DomainError):
        adversarial_try_mark(assignment=assignment, try_number=1, model_right=True)


def test_model_unavailable_lets_the_worker_go_on(requester):
    with FakeOpenAI(api_key="sk-test-0123456789abcdef") as fake:
        fake.fail("garbage")
        endpoint = model_endpoint_create(
            owner=requester,
            values={
                "name": "fake",
                "kind": "openai",
                "base_url": fake.base_url,
                "model": "m",
                "api_key": fake.api_key,
                "timeout_seconds": "1",
            },
        )
        writing, _ = _pipeline(requester, endpoint=endpoint)
        _, assignment = _worker_assignment(writing)
        adversarial_try_make(assignment=assignment, form=_form("Who sailed the river?", 2))

    attempt = AdversarialTry.objects.get()
    assert attempt.model_unavailable
    assert attempt.judged_by == "none"
    assert attempt.fooled is None
    panel = adversarial_panel(stage=writing, assignment_id=assignment.pk)
    assert panel is not None
    assert panel.allow.may_submit
    assert panel.allow.may_try


def test_a_call_that_finishes_late_is_recorded_once(requester):
    writing, _ = _pipeline(requester)
    _, assignment = _worker_assignment(writing)
    adversarial_try_make(assignment=assignment, form=_form("When did Orellana sail?", 2))
    call = ModelCall.objects.get()

    model_call_run(call_id=call.pk)  # again: nothing changes

    assert ModelCall.objects.count() == 1
    assert LedgerEntry.objects.filter(kind=LedgerKind.MODEL_USAGE).count() == 1
    assert AdversarialTry.objects.get().judged_by == "auto"


# --- Validation and the bonus ----------------------------------------------------------


def _fool_and_submit(writing: Stage) -> Assignment:
    worker, assignment = _worker_assignment(writing)
    adversarial_try_make(
        assignment=assignment, form=_form("Which river did the explorer sail in Brazil?", 2)
    )
    result = assignment_submit(
        assignment_id=assignment.pk,
        worker=worker,
        form=_form("Which river did the explorer sail in Brazil?", 2),
        telemetry=None,
    )
    assert result.stored, result.errors
    return result.assignment


def test_a_verified_fool_is_paid_once(requester):
    writing, validation = _pipeline(requester, validators=1)
    written = _fool_and_submit(writing)
    assignment_approve(assignment=written, source="test", reason="ok")

    item = Item.objects.get(stage=validation)
    assert item.data["model_answer"] == SENTENCES[0]
    assert item.data["writer_sentences"] == [2]
    assert item.data["source"] == {
        "assignment": written.pk,
        "item": Item.objects.get(stage=writing).pk,
        "try": 1,
    }
    worker, check = _worker_assignment(validation)
    result = assignment_submit(
        assignment_id=check.pk,
        worker=worker,
        form={"items/0/verdict": "fooled"},
        telemetry=None,
    )
    assert result.stored, result.errors

    attempt = AdversarialTry.objects.get()
    assert attempt.verified is True
    bonuses = LedgerEntry.objects.filter(kind=LedgerKind.BONUS)
    assert bonuses.count() == 1
    assert bonuses.get().amount == Decimal("0.50")
    # Asked again (a replayed event, a second validator): still one bonus.
    adversarial_fools_verify(
        assignment=Assignment.objects.get(pk=check.pk), stage=validation, task_type=VALIDATOR
    )
    assert LedgerEntry.objects.filter(kind=LedgerKind.BONUS).count() == 1


def test_a_rejected_fool_earns_nothing(requester):
    writing, validation = _pipeline(requester, validators=1)
    written = _fool_and_submit(writing)
    assignment_approve(assignment=written, source="test", reason="ok")
    worker, check = _worker_assignment(validation)
    assignment_submit(
        assignment_id=check.pk,
        worker=worker,
        form={"items/0/verdict": "model_right"},
        telemetry=None,
    )

    assert AdversarialTry.objects.get().verified is False
    assert not LedgerEntry.objects.filter(kind=LedgerKind.BONUS).exists()


# --- The worker page (Django client) ---------------------------------------------------


# The plain submission (4, test_query_counts.py), the tries read once, the claim stored.
PAGE_SUBMIT_QUERIES = 6


def _client_for(stage: Stage) -> tuple[Client, Assignment]:
    client = Client()
    invite = invite_create(
        campaign=stage.campaign, created_by=stage.campaign.owner, expires_in=timedelta(days=1)
    )
    client.post(reverse("worker:invite", kwargs={"token": invite_token(invite=invite)}))
    response = client.post(reverse("worker:accept", kwargs={"stage_id": stage.pk}))
    assert response.status_code == 302, response.content
    return client, Assignment.objects.get(hit__stage=stage)


def test_worker_page_flow(requester):
    writing, _ = _pipeline(requester, max_tries=2)
    client, assignment = _client_for(writing)
    page = reverse("worker:assignment", kwargs={"assignment_id": assignment.pk})
    html = client.get(page).content.decode()
    assert "Beat the model" in html
    assert "Ask the model" in html

    # Submitting before asking the model is refused, and nothing is stored.
    response = client.post(page, _form("Where does the Amazon river flow?", 2))
    assert response.status_code == 400
    assert "Ask the model your question first" in response.content.decode()

    try_url = reverse("worker:adversarial_try", kwargs={"assignment_id": assignment.pk})
    response = client.post(try_url, _form("Where does the Amazon river flow?", 0))
    assert response.status_code == 302
    html = client.get(page).content.decode()
    assert "The model answered" in html
    assert "The model got it right" in html
    assert "Try again" in html
    state = client.get(
        reverse(
            "worker:adversarial_state", kwargs={"assignment_id": assignment.pk, "try_number": 1}
        )
    ).json()
    assert state["final"]
    assert state["status"] == "done"

    client.post(try_url, _form("Which river did the explorer sail in Brazil?", 2))
    html = client.get(page).content.decode()
    assert "You fooled the model" in html
    assert "Try again" not in html
    response = client.post(page, _form("Which river did the explorer sail in Brazil?", 2))
    assert response.status_code == 302
    assert _answers(assignment)["adversarial"]["p1"]["fooled"]


def test_worker_page_mark_buttons(requester):
    writing, _ = _pipeline(requester, judge="worker")
    client, assignment = _client_for(writing)
    client.post(
        reverse("worker:adversarial_try", kwargs={"assignment_id": assignment.pk}),
        _form("Who sailed the river?", 2),
    )
    page = reverse("worker:assignment", kwargs={"assignment_id": assignment.pk})
    assert "Is the model's answer right?" in client.get(page).content.decode()

    response = client.post(
        reverse(
            "worker:adversarial_mark", kwargs={"assignment_id": assignment.pk, "try_number": 1}
        ),
        {"model_right": "yes"},
    )

    assert response.status_code == 302
    assert AdversarialTry.objects.get().fooled is False


def test_another_workers_tries_are_not_reachable(requester):
    writing, _ = _pipeline(requester)
    _, assignment = _worker_assignment(writing)
    response = Client().post(
        reverse("worker:adversarial_try", kwargs={"assignment_id": assignment.pk}),
        _form("Who sailed the river?", 2),
    )
    assert response.status_code == 404
    assert not AdversarialTry.objects.exists()


# --- The dashboard ---------------------------------------------------------------------


def test_fooled_rates_on_the_progress_api_and_the_campaign_page(requester, token_client):
    writing, _ = _pipeline(requester, max_tries=2)
    _, assignment = _worker_assignment(writing)
    adversarial_try_make(assignment=assignment, form=_form("Where does the Amazon river flow?", 0))
    adversarial_try_make(
        assignment=assignment, form=_form("Which river did the explorer sail in Brazil?", 2)
    )

    rates = campaign_fooled_rates(campaign=writing.campaign)

    assert rates is not None
    assert (rates.total.tries, rates.total.judged, rates.total.fooled) == (2, 2, 1)
    assert rates.total.rate == 0.5
    assert [(r.key, r.rate) for r in rates.by_stage] == [("Write", 0.5)]
    assert len(rates.by_worker) == 1
    assert len(rates.by_day) == 1
    data = token_client.get(f"/api/v1/campaigns/{writing.campaign.slug}/progress/").json()
    assert data["fooled"]["total"]["rate"] == 0.5
    assert data["fooled"]["by_stage"][0]["key"] == "Write"
    client = Client()
    client.force_login(requester)
    html = client.get(reverse("frontend:campaign-detail", kwargs={"slug": "beat"})).content
    assert b"Model fooled" in html
    assert b"1 of 2 judged tries fooled the model (50 %)" in html


def test_no_fooled_rates_without_tries(requester, token_client):
    writing, _ = _pipeline(requester)
    assert campaign_fooled_rates(campaign=writing.campaign) is None
    data = token_client.get(f"/api/v1/campaigns/{writing.campaign.slug}/progress/").json()
    assert data["fooled"] is None


def test_the_submission_is_held_back_on_every_workforce_with_the_panel(requester):
    """The check rides on the submission service (``answer_submitting``): any entry of a
    workforce with the panel is refused before a try; MTurk's (no panel) is not."""
    writing, _ = _pipeline(requester)
    worker, assignment = _worker_assignment(writing)
    result = assignment_submit(
        assignment_id=assignment.pk, worker=worker, form=_form("Who?", 2), telemetry={}
    )
    assert not result.stored
    assert "Ask the model" in result.errors[""]
    assert result.answer is not None  # the worker's text comes back

    Assignment.objects.filter(pk=assignment.pk).update(provider=Provider.MTURK)
    result = assignment_submit(
        assignment_id=assignment.pk, worker=worker, form=_form("Who?", 2), telemetry={}
    )
    assert result.stored


def test_the_adversarial_page_and_submission_read_the_tries_once(
    requester, django_assert_num_queries
):
    """The work page: the assignment, then its tries (one prepared statement, read once
    for the form and the panel); the submission reads them once for its check and the
    claim it stores (tests/campaigns/work/test_query_counts.py has the plain budget)."""
    writing, _ = _pipeline(requester, max_tries=2)
    client, assignment = _client_for(writing)
    page = reverse("worker:assignment", kwargs={"assignment_id": assignment.pk})
    try_url = reverse("worker:adversarial_try", kwargs={"assignment_id": assignment.pk})
    client.post(try_url, _form("Which river did the explorer sail in Brazil?", 2))
    client.get(page)

    with django_assert_num_queries(2):
        html = client.get(page).content.decode()
    assert "You fooled the model" in html
    with django_assert_num_queries(PAGE_SUBMIT_QUERIES):
        response = client.post(page, _form("Which river did the explorer sail in Brazil?", 2))
    assert response.status_code == 302
    assert _answers(assignment)["adversarial"]["p1"]["fooled"]
