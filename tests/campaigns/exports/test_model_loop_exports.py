"""The model in the loop travels with each example in every export format: the model
calls (the model's id, version and answer) and the LLM flag with its evidence; the
PostgreSQL and portable (SQLite) paths carry the same; the card, the datasheet and
Croissant say a model was in the loop, and Croissant still validates."""

from __future__ import annotations

import csv
import io
import json

import pytest

from campaigns.assist.calls import model_call_request
from campaigns.assist.endpoints import model_endpoint_create
from campaigns.exports import common, hf_rows, mintaka
from campaigns.exports.card_facts import campaign_facts
from campaigns.exports.datasheet import datasheet_prefill
from campaigns.exports.graphquestions import graphquestions_stream
from campaigns.exports.hf import hf_folder_write
from campaigns.exports.mintaka import DEFAULT_RATIOS, mintaka_stream
from campaigns.exports.provenance import csv_stream, jsonl_stream
from campaigns.models import Assignment, AssignmentStatus, HITItem, ModelCall, ModelCallStatus
from campaigns.work.decisions import assignment_approve
from tests.helpers import local_pipeline, submitted_assignment
from tests.validation.db_helpers import hits, make_stage, submit, worker
from validation.llm_flag import flags_combine, llm_flag

pytestmark = pytest.mark.django_db

QUESTION = "Which river is longer, the Nile or the Amazon?"


class NotPostgres:
    vendor = "sqlite"


@pytest.fixture
def flagged(requester):
    """A question-writing campaign with one approved answer that has a done llm_flag
    call and its flag (one approved answer without either)."""
    campaign, writing, _ = local_pipeline(requester, slug="model-loop")
    written = submitted_assignment(writing, question=QUESTION)
    plain = submitted_assignment(writing, question="Which film won more awards?")
    endpoint = model_endpoint_create(owner=requester, values={"name": "m", "kind": "baseline_bm25"})
    item_id = HITItem.objects.filter(hit_id=written.hit_id).values_list("item_id", flat=True)[0]
    call = model_call_request(
        endpoint_id=endpoint.pk,
        purpose="llm_flag",
        item_id=item_id,
        assignment_id=written.pk,
        question="Write a comparative question about rivers.",
        context=["Which river is longer, the Nile or the Amazon?"],
    )
    ModelCall.objects.filter(pk=call.pk).update(
        status=ModelCallStatus.DONE, answer=QUESTION, model_id="baseline-bm25", model_version="1"
    )
    flag = llm_flag(
        worker_texts=[QUESTION],
        model_text=QUESTION,
        telemetry={"keystrokes": 0, "pastes": [{"field": "q", "length": len(QUESTION)}]},
    )
    stored = flags_combine([{**flag, "call": call.pk, "model_id": "baseline-bm25"}])
    Assignment.objects.filter(pk=written.pk).update(llm_flag=stored)
    for a in (written, plain):
        assignment_approve(assignment=a, decided_by=requester, source="requester")
    return campaign, written, plain, stored


def _expected_call():
    return {
        "purpose": "llm_flag",
        "item": "cell-0",
        "try": 1,
        "status": "done",
        "model_id": "baseline-bm25",
        "model_version": "1",
        "answer": QUESTION,
    }


def _portable(monkeypatch):
    for module in (mintaka, hf_rows):
        monkeypatch.setattr(module, "connection", NotPostgres())
    monkeypatch.setattr(common, "IN_BATCH", 1)


def test_jsonl_and_csv_carry_the_calls_and_the_flag(flagged):
    campaign, written, plain, stored = flagged
    lines = [json.loads(x) for x in "".join(jsonl_stream(campaign=campaign)).splitlines()]
    by_id = {e["assignment"]: e for e in lines}
    assert by_id[written.pk]["model_calls"] == [_expected_call()]
    assert by_id[written.pk]["llm_flag"] == stored
    assert by_id[plain.pk]["model_calls"] == []
    assert by_id[plain.pk]["llm_flag"] is None
    rows = {
        int(r["assignment"]): r
        for r in csv.DictReader(io.StringIO("".join(csv_stream(campaign=campaign))))
    }
    assert json.loads(rows[written.pk]["model_calls"]) == [_expected_call()]
    assert json.loads(rows[written.pk]["llm_flag"]) == stored
    assert rows[plain.pk]["llm_flag"] == "null"


def test_mintaka_json_adds_the_model_only_where_it_was_in_the_loop(flagged, monkeypatch):
    campaign, _written, _plain, stored = flagged

    def read():
        return {e["question"]: e for e in json.loads("".join(mintaka_stream(campaign=campaign)))}

    on_postgresql = read()
    assert on_postgresql[QUESTION]["modelInTheLoop"] == {
        "modelCalls": [_expected_call()],
        "llmFlag": stored,
    }
    assert "modelInTheLoop" not in on_postgresql["Which film won more awards?"]
    _portable(monkeypatch)
    assert read() == on_postgresql


def test_hf_examples_rows_are_the_same_on_both_paths(flagged, monkeypatch):
    campaign, written, _plain, stored = flagged

    def read():
        rows = list(
            hf_rows.dataset_rows(
                campaign=campaign, ratios=DEFAULT_RATIOS, seed=1, shape=hf_rows.EXAMPLES_SHAPE
            )
        )
        for _, row in rows:
            for key in ("answers", "item_data", "llm_flag"):
                row[key] = json.loads(row[key]) if row[key] is not None else None
        return rows

    on_postgresql = read()
    by_id = {row["assignment"]: row for _, row in on_postgresql}
    assert by_id[written.pk]["model_calls"] == [_expected_call()]
    assert by_id[written.pk]["llm_flag"] == stored
    _portable(monkeypatch)
    assert read() == on_postgresql


def test_hf_folder_card_croissant_and_datasheet_name_the_model(flagged, tmp_path):
    import mlcroissant as mlc

    campaign, _written, _plain, _stored = flagged
    result = hf_folder_write(campaign=campaign, target=tmp_path)
    card = (tmp_path / "README.md").read_text()
    assert "## Model in the loop" in card
    assert "baseline-bm25 (version 1)" in card
    assert "`llm_flag`" in card
    assert "`model_calls`" in card
    jsonld = json.loads((tmp_path / "croissant.json").read_text())
    assert any("language model" in s for s in jsonld["rai:dataAnnotationAnalysis"])
    dataset = mlc.Dataset(jsonld=tmp_path / "croissant.json")  # raises on validation errors
    assert not dataset.metadata.ctx.issues.errors
    split = next(iter(result.contents.split_rows))
    fields = {f["name"] for rs in jsonld["recordSet"] for f in rs["field"]}
    assert {"model_calls", "llm_flag"} <= fields
    assert list(dataset.records(split))
    text = datasheet_prefill(facts=campaign_facts(campaign=campaign))
    assert "A language model was in the loop" in text
    assert "1 of 1 answers checked were flagged" in text


def test_graphquestions_lines_carry_the_model_where_it_was_in_the_loop(requester):
    def data(n):
        return {
            "canonical_question": f"what river flows through city {n}?",
            "characteristics": {"edges": 1},
            "entities": [{"label": f"city {n}"}],
        }

    stage = make_stage(items=2, task_type="paraphrase_canonical", data=data, per_hit=1)
    first, second = hits(stage)
    flagged = submit(
        first,
        worker("p1"),
        {"paraphrases": ["which river runs through city 0?"]},
        status=AssignmentStatus.APPROVED,
    )
    submit(
        second,
        worker("p2"),
        {"paraphrases": ["city 1 has which river?"]},
        status=AssignmentStatus.APPROVED,
    )
    flag = {"status": "scored", "flagged": True, "score": 0.95, "items": []}
    Assignment.objects.filter(pk=flagged.pk).update(llm_flag=flag)
    lines = [
        json.loads(x) for x in "".join(graphquestions_stream(campaign=stage.campaign)).splitlines()
    ]
    by_text = {line["question"]: line for line in lines}
    assert by_text["which river runs through city 0?"]["llm_flag"] == flag
    assert by_text["which river runs through city 0?"]["model_calls"] == []
    assert "llm_flag" not in by_text["city 1 has which river?"]
