"""Model calls: the request, the task's runs (each failure kind, retries, cost once,
concurrency), the baseline, the page's poll."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal

import pytest
import requests
from django.db import connection, transaction
from django.utils import timezone

from campaigns.assist.baseline import baseline_answer, bm25_scores, sentences_split
from campaigns.assist.calls import (
    MAX_ATTEMPTS,
    model_call_request,
    model_call_run,
    model_calls_reconcile,
)
from campaigns.assist.endpoints import model_endpoint_create
from campaigns.assist.selectors import ModelCallState, model_call_state
from campaigns.models import LedgerEntry, LedgerKind, ModelCall, ModelCallStatus
from campaigns.payments.budget import campaign_spending
from qaportal.celery import app
from qaportal.errors import DomainError
from qaportal.models import OutboxMessage
from tests.campaigns.assist.fake_openai import FakeOpenAI
from tests.factories import AssignmentFactory, ItemFactory

PASSAGE = "Berlin is the capital of Germany. Paris is the capital of France. Rome is old."


@pytest.fixture
def fake():
    with FakeOpenAI(api_key="sk-test-0123456789abcdef") as server:
        yield server


@pytest.fixture
def item(db):
    return ItemFactory()


def _endpoint(owner, fake=None, **values):
    base = {"name": "m", "kind": "baseline_bm25"}
    if fake is not None:
        base = {
            "name": "fake",
            "kind": "openai",
            "base_url": fake.base_url,
            "model": "fake-model-7b",
            "api_key": fake.api_key,
            "timeout_seconds": "1",
            "price_in_per_1k": "0.5",
            "price_out_per_1k": "1.5",
            "currency": "USD",
        }
    base.update(values)
    return model_endpoint_create(owner=owner, values=base)


def _due(call: ModelCall) -> None:
    ModelCall.objects.filter(pk=call.pk).update(
        next_attempt_at=timezone.now() - timedelta(seconds=1)
    )


def _run(*, call_id: int) -> ModelCall:
    call = model_call_run(call_id=call_id)
    assert call is not None
    return call


def _state(*, call_id: int) -> ModelCallState:
    state = model_call_state(call_id=call_id)
    assert state is not None
    return state


# --- the baseline ---------------------------------------------------------------------


def test_baseline_answers_with_the_best_matching_sentence():
    assert sentences_split(PASSAGE)[1] == "Paris is the capital of France."
    assert baseline_answer(question="What is the capital of France?", context=PASSAGE) == (
        "Paris is the capital of France."
    )
    assert (
        baseline_answer(question="Why is Rome old?", context=sentences_split(PASSAGE))
        == "Rome is old."
    )
    assert baseline_answer(question="anything", context="") == ""
    # No word in common: the first sentence, deterministically.
    assert baseline_answer(question="zzz", context=PASSAGE).startswith("Berlin")
    scores = bm25_scores(query="france capital", documents=sentences_split(PASSAGE))
    assert scores[1] > scores[0] > scores[2] == 0


@pytest.mark.django_db(transaction=True)
def test_baseline_call_runs_at_commit_in_eager_mode(item):
    endpoint = _endpoint(item.stage.campaign.owner)
    with transaction.atomic():
        call = model_call_request(
            endpoint_id=endpoint.pk,
            purpose="adversarial",
            item_id=item.pk,
            question="What is the capital of France?",
            context=PASSAGE,
        )
        assert call.status == ModelCallStatus.PENDING
        assert OutboxMessage.objects.filter(task="assist.model_call_run", args=[call.pk]).exists()
    call.refresh_from_db()
    assert call.status == ModelCallStatus.DONE
    assert call.answer == "Paris is the capital of France."
    assert (call.model_id, call.model_version) == ("baseline-bm25", "1")
    assert call.cost == 0
    state = _state(call_id=call.pk)
    assert state is not None
    assert state.final
    assert not state.go_on_without_model
    assert state.answer == call.answer


@pytest.mark.django_db
def test_request_is_idempotent_and_checks_its_arguments(item, other_requester):
    endpoint = _endpoint(item.stage.campaign.owner)
    kwargs = {
        "endpoint_id": endpoint.pk,
        "purpose": "llm_flag",
        "item_id": item.pk,
        "question": "q",
        "context": PASSAGE,
    }
    first = model_call_request(**kwargs)
    assert model_call_request(**kwargs).pk == first.pk
    assert model_call_request(**kwargs, try_number=2).pk != first.pk
    assert OutboxMessage.objects.filter(task="assist.model_call_run").count() == 2
    with pytest.raises(DomainError):
        model_call_request(**{**kwargs, "purpose": "nope"})
    stranger = _endpoint(other_requester, name="theirs")
    with pytest.raises(DomainError):
        model_call_request(**{**kwargs, "endpoint_id": stranger.pk})
    with pytest.raises(DomainError):
        model_call_request(**kwargs, assignment_id=AssignmentFactory.create().pk)  # another stage's
    assert ModelCall.objects.count() == 2


# --- an OpenAI-compatible endpoint through the fake -------------------------------------


@pytest.mark.django_db
def test_answer_model_version_tokens_and_cost_recorded_once(item, fake):
    endpoint = _endpoint(item.stage.campaign.owner, fake)
    call = model_call_request(
        endpoint_id=endpoint.pk,
        purpose="adversarial",
        item_id=item.pk,
        question="What is the capital of France?",
        context=PASSAGE,
    )
    call = _run(call_id=call.pk)
    assert call is not None
    assert call.status == ModelCallStatus.DONE
    assert (call.answer, call.model_id, call.model_version) == (
        "Paris",
        "fake-model-7b",
        "fp_fake_0001",
    )
    sent = fake.calls[-1]["body"]
    assert sent["model"] == "fake-model-7b"
    assert sent["messages"][0]["role"] == "user"
    assert "Passage:" in sent["messages"][0]["content"]
    expected = (
        Decimal(call.prompt_tokens or 0) * Decimal("0.5")
        + Decimal(call.completion_tokens or 0) * Decimal("1.5")
    ) / 1000
    assert call.cost == expected.quantize(Decimal("0.000001"))
    # Once: running again changes nothing and asks nothing.
    asked = len(fake.calls)
    _run(call_id=call.pk)
    assert len(fake.calls) == asked
    entries = LedgerEntry.objects.filter(kind=LedgerKind.MODEL_USAGE)
    assert entries.count() == 1
    assert entries.get().key == f"model_usage:call:{call.pk}"


@pytest.mark.django_db
def test_fractions_of_a_cent_add_up_in_the_ledger_and_the_spending(item, fake):
    campaign = item.stage.campaign
    endpoint = _endpoint(campaign.owner, fake, price_in_per_1k="1", price_out_per_1k="1")
    before = campaign_spending(campaign=campaign)
    costs = Decimal("0")
    for n in range(1, 8):
        call = model_call_request(
            endpoint_id=endpoint.pk,
            purpose="llm_flag",
            item_id=item.pk,
            try_number=n,
            question="q " * 3,
            context="Paris " * 4,
        )
        call = _run(call_id=call.pk)
        assert call is not None
        assert call.status == ModelCallStatus.DONE
        costs += call.cost or Decimal(0)
    ledger = sum(e.amount for e in LedgerEntry.objects.filter(kind=LedgerKind.MODEL_USAGE))
    assert costs > Decimal("0.01")
    assert ledger == costs.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    assert campaign_spending(campaign=campaign) - before == ledger


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["429", "500", "503", "drop"])
def test_transient_failures_are_retried_then_answered(item, fake, kind):
    endpoint = _endpoint(item.stage.campaign.owner, fake)
    call = model_call_request(
        endpoint_id=endpoint.pk, purpose="adversarial", item_id=item.pk, question="Paris?"
    )
    fake.fail(kind, times=1, retry_after="7")
    call = _run(call_id=call.pk)
    assert call is not None
    assert call.status == ModelCallStatus.PENDING
    assert call.attempts == 1
    assert call.error
    assert call.next_attempt_at is not None
    wait = (call.next_attempt_at - timezone.now()).total_seconds()
    assert (6 < wait <= 7) if kind == "429" else (0 < wait <= 1)
    # Not due yet: a run changes nothing.
    assert _run(call_id=call.pk).attempts == 1
    _due(call)
    call = _run(call_id=call.pk)
    assert call.status == ModelCallStatus.DONE
    assert call.attempts == 2
    assert call.error == ""
    assert LedgerEntry.objects.filter(kind=LedgerKind.MODEL_USAGE).count() == 1


@pytest.mark.django_db
def test_always_failing_endpoint_ends_unavailable_after_the_last_try(item, fake):
    endpoint = _endpoint(item.stage.campaign.owner, fake)
    call = model_call_request(
        endpoint_id=endpoint.pk, purpose="adversarial", item_id=item.pk, question="q"
    )
    fake.fail("500", times=MAX_ATTEMPTS)
    for _ in range(MAX_ATTEMPTS):
        _due(call)
        call = _run(call_id=call.pk)
    assert call.status == ModelCallStatus.UNAVAILABLE
    assert call.attempts == MAX_ATTEMPTS
    assert "HTTP 500" in call.error
    assert call.finished_at is not None
    assert not LedgerEntry.objects.filter(kind=LedgerKind.MODEL_USAGE).exists()
    state = _state(call_id=call.pk)
    assert state.final
    assert state.go_on_without_model
    assert state.answer == ""


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["garbage", "badkey"])
def test_garbage_and_refusals_are_not_retried(item, fake, kind):
    extra = {"api_key": "sk-wrong-0123456789"} if kind == "badkey" else {}
    endpoint = _endpoint(item.stage.campaign.owner, fake, **extra)
    if kind == "garbage":
        fake.fail("garbage")
    call = model_call_request(
        endpoint_id=endpoint.pk, purpose="adversarial", item_id=item.pk, question="q"
    )
    call = _run(call_id=call.pk)
    assert call.status == ModelCallStatus.UNAVAILABLE
    assert call.attempts == 1
    assert ("garbage" in call.error) if kind == "garbage" else ("HTTP 401" in call.error)
    assert "sk-wrong" not in call.error


@pytest.mark.django_db
def test_a_slow_endpoint_never_holds_the_run_longer_than_its_timeout(item, fake):
    endpoint = _endpoint(item.stage.campaign.owner, fake, timeout_seconds="0.5")
    call = model_call_request(
        endpoint_id=endpoint.pk, purpose="adversarial", item_id=item.pk, question="q"
    )
    fake.fail("slow", delay=3)
    started = time.monotonic()
    call = _run(call_id=call.pk)
    assert time.monotonic() - started < 1.5
    assert call.status == ModelCallStatus.PENDING
    assert "timed out" in call.error


@pytest.mark.django_db
def test_a_down_endpoint_is_retried_and_the_page_goes_on_after_the_timeout(item):
    with FakeOpenAI() as gone:
        url = gone.base_url  # the port is free again once the block ends
    endpoint = model_endpoint_create(
        owner=item.stage.campaign.owner,
        values={
            "name": "down",
            "kind": "openai",
            "base_url": url,
            "model": "m",
            "timeout_seconds": "0.5",
        },
    )
    call = model_call_request(
        endpoint_id=endpoint.pk, purpose="adversarial", item_id=item.pk, question="q"
    )
    state = _state(call_id=call.pk)
    assert not state.final
    assert not state.go_on_without_model
    call = _run(call_id=call.pk)
    assert call.status == ModelCallStatus.PENDING
    assert call.error == "endpoint unreachable"
    ModelCall.objects.filter(pk=call.pk).update(created_at=timezone.now() - timedelta(seconds=1))
    state = _state(call_id=call.pk)
    assert state.waited_out
    assert state.go_on_without_model
    assert not state.final


@pytest.mark.django_db
def test_concurrency_limit_holds_further_calls_back(item, fake):
    endpoint = _endpoint(item.stage.campaign.owner, fake, concurrency=1)
    first = model_call_request(
        endpoint_id=endpoint.pk, purpose="adversarial", item_id=item.pk, question="a"
    )
    second = model_call_request(
        endpoint_id=endpoint.pk, purpose="adversarial", item_id=item.pk, question="b", try_number=2
    )
    ModelCall.objects.filter(pk=first.pk).update(
        status=ModelCallStatus.RUNNING, started_at=timezone.now(), attempts=1
    )
    second = _run(call_id=second.pk)
    assert second.status == ModelCallStatus.PENDING
    assert second.attempts == 0
    assert second.next_attempt_at is not None
    assert not fake.calls
    # The first run's worker died: the reconcile finds it stale and both get their turn.
    ModelCall.objects.filter(pk=first.pk).update(started_at=timezone.now() - timedelta(minutes=5))
    _due(second)
    due = model_calls_reconcile()
    assert set(due) == {first.pk, second.pk}
    for call_id in due:
        _run(call_id=call_id)
    assert set(ModelCall.objects.values_list("status", flat=True)) == {ModelCallStatus.DONE}


@pytest.mark.django_db(transaction=True)
def test_concurrent_runs_never_exceed_the_limit(item):
    with FakeOpenAI(delay=0.3) as fake:
        endpoint = _endpoint(
            item.stage.campaign.owner, fake, concurrency=2, api_key="", timeout_seconds="5"
        )
        calls = [
            model_call_request(
                endpoint_id=endpoint.pk,
                purpose="llm_flag",
                item_id=item.pk,
                question="q",
                try_number=n,
            )
            for n in range(1, 7)
        ]

        def run(call_id: int) -> str:
            try:
                return str(_run(call_id=call_id).status)
            finally:
                connection.close()

        with ThreadPoolExecutor(max_workers=6) as pool:
            results = list(pool.map(run, [c.pk for c in calls]))
        assert fake.peak_active <= 2
        assert results.count("done") >= 2
        assert set(results) <= {"done", "pending"}


def test_fake_refuses_malformed_requests_as_the_real_api_does():
    with FakeOpenAI(api_key="sk-k") as fake:
        url = fake.base_url + "/chat/completions"
        auth = {"Authorization": "Bearer sk-k"}
        ok = requests.post(
            url,
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            headers=auth,
            timeout=5,
        )
        assert ok.status_code == 200
        assert {
            "id",
            "model",
            "system_fingerprint",
            "choices",
            "usage",
        } <= set(ok.json())
        for body, param in [
            ({"messages": [{"role": "user", "content": "x"}]}, "model"),
            ({"model": "m", "messages": []}, "messages"),
            ({"model": "m", "messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
            (
                {"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 3},
                "temperature",
            ),
            ({"model": "m", "messages": [{"role": "user", "content": "x"}], "bogus": 1}, "bogus"),
        ]:
            answer = requests.post(url, json=body, headers=auth, timeout=5)
            assert answer.status_code == 400
            assert answer.json()["error"]["type"] == "invalid_request_error"
            assert answer.json()["error"]["param"] == param
        assert requests.post(url, json={}, timeout=5).json()["error"]["code"] == "invalid_api_key"
        assert requests.get(url, headers=auth, timeout=5).status_code == 404
        fake.fail("429", retry_after="3")
        limited = requests.post(
            url,
            json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
            headers=auth,
            timeout=5,
        )
        assert limited.status_code == 429
        assert limited.headers["Retry-After"] == "3"
        assert limited.json()["error"]["code"] == "rate_limit_exceeded"


# --- the Celery tasks, by name --------------------------------------------------------


@pytest.mark.django_db
def test_the_tasks_by_name_run_and_reconcile(item, fake):
    app.loader.import_default_modules()
    endpoint = _endpoint(item.stage.campaign.owner, fake)
    call = model_call_request(
        endpoint_id=endpoint.pk, purpose="llm_flag", item_id=item.pk, question="Paris?"
    )
    fake.fail("503")
    assert app.tasks["assist.model_call_run"].apply(args=[call.pk]).get() == "pending"
    assert app.tasks["assist.model_call_run"].apply(args=[call.pk]).get() == "pending"  # not due
    _due(call)
    assert app.tasks["assist.model_calls_reconcile"].apply().get() == 1
    assert _state(call_id=call.pk).status == ModelCallStatus.DONE
    assert app.tasks["assist.model_call_run"].apply(args=[call.pk]).get() == "done"
    assert app.tasks["assist.model_call_run"].apply(args=[10**9]).get() == "missing"
