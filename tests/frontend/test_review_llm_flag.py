"""The review queue shows an answer's LLM flag with its evidence."""

from __future__ import annotations

import pytest
from django.urls import reverse

from campaigns.models import Assignment
from frontend.views.review import llm_flag_summary
from tests.helpers import local_pipeline, submitted_assignment
from validation.llm_flag import flags_combine, llm_flag

pytestmark = pytest.mark.django_db

MODEL_TEXT = "Which river is longer, the Nile or the Amazon? <script>alert(1)</script>"


def stored_flag(text: str) -> dict:
    flag = llm_flag(
        worker_texts=[text],
        model_text=MODEL_TEXT,
        telemetry={"keystrokes": 1, "pastes": [{"field": "q", "length": len(text)}]},
    )
    item = {**flag, "call": 1, "model_id": "fake-model-7b", "model_version": "fp_1", "item": "c0"}
    return flags_combine([item])


def test_the_queue_shows_the_flag_its_evidence_and_the_models_text(requester, alice_client):
    campaign, writing, _ = local_pipeline(requester, slug="flag-review")
    text = "Which river is longer, the Nile or the Amazon?"
    waiting = submitted_assignment(writing, question=text)
    Assignment.objects.filter(pk=waiting.pk).update(llm_flag=stored_flag(text))
    url = reverse("frontend:campaign-review", kwargs={"slug": campaign.slug})
    html = alice_client.get(url).content.decode()
    assert "Flagged: a model may have written this answer" in html
    assert "fake-model-7b fp_1" in html
    assert "The model&#x27;s answer to the same task" in html or "The model's answer" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # escaped, never run
    assert "<script>alert(1)" not in html
    assert "character trigrams" in html
    assert "flag at 0.6" in html


def test_no_flag_no_section_and_a_clear_flag_says_so(requester, alice_client):
    campaign, writing, _ = local_pipeline(requester, slug="flag-review-clear")
    waiting = submitted_assignment(writing)
    url = reverse("frontend:campaign-review", kwargs={"slug": campaign.slug})
    assert 'aria-label="LLM flag"' not in alice_client.get(url).content.decode()
    Assignment.objects.filter(pk=waiting.pk).update(
        llm_flag={"status": "scored", "flagged": False, "score": 0.12, "items": []}
    )
    html = alice_client.get(url).content.decode()
    assert "LLM flag: not raised" in html


def test_summary_reads_odd_shapes():
    assert llm_flag_summary(None) is None
    refused = llm_flag_summary({"status": "endpoint_refused", "flagged": False})
    assert refused is not None
    assert refused["status"] == "endpoint refused"
    summary = llm_flag_summary(stored_flag("Which river is longer, the Nile or the Amazon?"))
    assert summary is not None
    assert summary["flagged"] is True
    assert summary["items"][0]["paste_share"] == "100%"
