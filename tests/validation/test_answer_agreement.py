"""Issue 19, point 10: WhyQA's agreement measures (Mrozinski, Whittaker and Furui,
ACL-08: HLT, §3.2, Tables 3-4) on the campaign page, in the API and in an export."""

from __future__ import annotations

import csv
import io
from collections.abc import Hashable
from decimal import Decimal
from typing import cast

import pytest
from django.utils import timezone

from campaigns.design.services import campaign_create, stage_add
from campaigns.exports import export_write
from campaigns.models import HIT, Assignment, HITItem, Item, ItemSource, ItemStatus
from tests.factories import WorkerFactory
from validation.answer_agreement import RANDOM, WITH, WITHOUT, Answer, answer_agreement

# Table 2 of the paper: the five answers to "Why is the moon crucial to the rare earth
# hypothesis?" by their sentence ids.
TABLE_2 = [{20, 21}, {18, 19, 20}, {20, 21, 22}, {18, 20, 21}, {18, 21}]


def test_sentence_id_agreement_on_the_papers_table_2_example():
    answers: dict[Hashable, list[Answer]] = {
        "fermi": [(ids, f"sentences {sorted(ids)}") for ids in TABLE_2]
    }
    result = answer_agreement(answers)
    # Ten pairs: 1/4 2/3 2/3 1/3 1/5 1/2 1/4 1/2 1/4 2/3 -> 4.2833 / 10.
    assert result.sentence_ids[WITHOUT]["total_average"] == pytest.approx(0.4283, abs=1e-4)
    # Best matches: 2/3, 1/2, 2/3, 2/3, 2/3.
    assert result.sentence_ids[WITHOUT]["best_match"] == pytest.approx(0.6333, abs=1e-4)
    with_noa = answer_agreement({"fermi": [*answers["fermi"], (None, "")]})
    # NoA against an answer scores 0: the same sum over 15 pairs; its own best is 0.
    assert with_noa.sentence_ids[WITH]["total_average"] == pytest.approx(0.2856, abs=1e-4)
    assert with_noa.sentence_ids[WITH]["best_match"] == pytest.approx(0.5278, abs=1e-4)
    assert with_noa.sentence_ids[WITHOUT] == result.sentence_ids[WITHOUT]
    assert with_noa.answers == {WITH: 6, WITHOUT: 5}


def test_rouge_with_and_without_no_answer_and_the_random_baseline():
    same = "the moon stabilises the axis of the earth"
    answers: dict[Hashable, list[Answer]] = {
        "q1": [({1}, same), ({1}, same), (None, ""), (None, "")],
        "q2": [({4}, "ferries carry cars across the bay at night"), ({4}, "ferries carry cars")],
    }
    result = answer_agreement(answers, seed=3)
    # q1: identical texts, F 1; q2: 3 of 8 words, P 1, R 3/8, F 6/11.
    assert result.rouge[WITHOUT]["rouge1"] == pytest.approx((1 + 6 / 11) / 2, abs=1e-4)
    # NoA included: q1 has 6 pairs (identical 1, NoA-NoA 1, four mixed 0), q2 one.
    assert result.pairs[WITH] == 7
    with_noa, without_noa = result.rouge[WITH]["rouge1"], result.rouge[WITHOUT]["rouge1"]
    random_rouge = result.rouge[RANDOM]["rouge1"]
    assert with_noa is not None
    assert without_noa is not None
    assert random_rouge is not None
    assert with_noa < without_noa
    assert result.pairs[RANDOM] == 7
    assert random_rouge < without_noa
    paper = cast(dict[str, dict[str, dict[str, float]]], result.as_json()["paper"])
    assert set(paper["rouge"]) == {WITH, WITHOUT, RANDOM}


@pytest.mark.django_db
def test_answer_agreement_on_the_page_in_the_api_and_in_an_export(requester, client):
    from rest_framework.test import APIClient

    campaign = campaign_create(owner=requester, name="Why", slug="why-agree")
    stage = stage_add(campaign=campaign, name="Answer", task_type="sentence_selection_answer")
    sentences = ["The moon pulls the sea.", "Tides steady the axis.", "Ferries sail.", "Ok."]
    now = timezone.now()
    for q, (picks, dropped) in enumerate(
        [([[0, 1], [1], [0, 1], None], False), ([None, None, [2]], True)]
    ):
        item = Item.objects.create(
            stage=stage,
            external_id=f"q{q}",
            data={"question": f"Why {q}?", "sentences": sentences},
            source=ItemSource.UPLOADED,
            status=ItemStatus.DROPPED if dropped else ItemStatus.PENDING,
        )
        hit = HIT.objects.create(stage=stage, provider="local", reward=Decimal("0.06"))
        HITItem.objects.create(hit=hit, item=item, position=0)
        for ids in picks:
            Assignment.objects.create(
                hit=hit,
                worker=WorkerFactory.create(provider="local"),
                provider="local",
                status="submitted",
                answers={
                    "items": [
                        {"external_id": f"q{q}", "sentences": ids or [], "no_answer": ids is None}
                    ]
                },
                accepted_at=now,
                submitted_at=now,
            )
    api = APIClient()
    api.force_authenticate(requester)
    body = api.get(f"/api/v1/stages/{stage.pk}/answer-agreement/").json()
    assert body["questions"] == 1  # the dropped question is left out, as in §3.2
    assert body["answers"] == {"noa_included": 4, "noa_not_included": 3}
    # Pairs {0,1}-{1}: 1/2, {0,1}-{0,1}: 1, {1}-{0,1}: 1/2 -> 2/3.
    assert body["sentence_ids"]["noa_not_included"]["total_average"] == pytest.approx(0.6667)
    # Best matches: 1, 1/2, 1.
    assert body["sentence_ids"]["noa_not_included"]["best_match"] == pytest.approx(0.8333)
    assert set(body["rouge"]["noa_included"]) == {"rouge1", "rouge2", "rougeSU4", "rougeL"}
    other = stage_add(
        campaign=campaign, name="Write", task_type="why_question_from_partial_article"
    )
    assert api.get(f"/api/v1/stages/{other.pk}/answer-agreement/").status_code == 400

    client.force_login(requester)
    page = client.get(f"/campaigns/{campaign.slug}/quality/").content.decode()
    assert f'id="answer-agreement-{stage.pk}"' in page
    assert "NoA not included" in page
    assert "0.67" in page

    out = io.StringIO()
    rows = export_write(campaign=campaign, name="answer-agreement", out=out)
    table = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert rows == 3
    assert [r["data_set"] for r in table] == ["noa_not_included", "noa_included", "random"]
    assert table[0]["total_average"] == "0.6667"
