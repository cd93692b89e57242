"""Each recipe piloted end to end on the local workforce by the crowd simulator, through
the real worker pages: examples flow from stage to stage as the paper's pipeline says.

The pilots are small (a requester shrinks a recipe the same way before a pilot): a few
items, fewer places per HIT; everything else is the recipe's.
"""

from __future__ import annotations

import json

import pytest

from campaigns.models import Assignment, AssignmentStatus, Item
from campaigns.services import campaign_create
from campaigns.services.campaigns import stage_update
from campaigns.services.items import items_upload
from campaigns.services.recipes import recipe_apply
from campaigns.services.work import campaign_start
from campaigns.simulate import simulate_crowd
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

DECIDED = (AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)


def _campaign(name: str, slug: str):
    owner = UserFactory.create(username=f"owner-{slug}")
    return campaign_create(owner=owner, name=name, slug=slug)


def test_mintaka_pilot_flows_from_writing_to_both_linking_stages():
    campaign = _campaign("Mintaka pilot", "mintaka-pilot")
    write, link_answers, link_questions = recipe_apply(
        campaign=campaign, name="mintaka", sample=False
    )
    stage_update(stage=write, assignments_per_hit=1)
    cells = [
        {"external_id": f"movies-{t}", "topic": "movies", "complexity_type": t}
        for t in ("comparative", "superlative", "yesno", "count")
    ]
    items_upload(
        stage=write,
        content="\n".join(json.dumps(c) for c in cells).encode(),
        filename="cells.jsonl",
    )
    campaign = campaign_start(campaign=campaign, to_state="pilot")

    result = simulate_crowd(
        campaign=campaign, workers=6, seed=4, approve_all=True, shares={"good": 1.0}
    )

    assert result.ok, "\n".join(result.lines())
    assert result.server_errors() == 0
    answers = list(Item.objects.filter(stage=link_answers))
    questions = list(Item.objects.filter(stage=link_questions))
    assert answers, "no QA pair reached answer linking"
    assert all(i.data["answer_type"] not in ("boolean", "numeric") for i in answers)
    assert questions, "no QA pair reached question linking"
    answered = {i.external_id for i in answers}
    assert all(q.external_id.rsplit("/", 1)[0] in answered for q in questions)
    assert Assignment.objects.filter(
        hit__stage=link_questions, status=AssignmentStatus.APPROVED
    ).exists()


def test_whyqa_pilot_flows_from_articles_to_rephrasings():
    campaign = _campaign("WhyQA pilot", "whyqa-pilot")
    quiz, generate, answer, rephrase = recipe_apply(campaign=campaign, name="whyqa")
    stage_update(stage=quiz, assignments_per_hit=4)
    stage_update(stage=rephrase, assignments_per_hit=2)
    campaign = campaign_start(campaign=campaign, to_state="pilot")

    # One why-question per QGenHIT (§2.2.1): ten writers give the article's ten.
    result = simulate_crowd(
        campaign=campaign, workers=10, seed=2, approve_all=True, shares={"good": 1.0}
    )

    assert result.ok, "\n".join(result.lines())
    assert result.server_errors() == 0
    assert Assignment.objects.filter(hit__stage=quiz, status__in=DECIDED).exists()
    assert Assignment.objects.filter(hit__stage=generate, status=AssignmentStatus.APPROVED)
    questions = list(Item.objects.filter(stage=answer))
    assert len(questions) == 10  # one article x 10 why-questions
    assert all(q.data["question"].lower().startswith("why") for q in questions)
    assert Assignment.objects.filter(hit__stage=answer, status__in=DECIDED).count() >= 3 * 10
    # Answering is for those who passed the quiz.
    passers = {
        a.worker_id
        for a in Assignment.objects.filter(hit__stage=quiz)
        if (a.review_details or {}).get("quiz", {}).get("passed")
    }
    answerers = set(
        Assignment.objects.filter(hit__stage=answer).values_list("worker_id", flat=True)
    )
    assert answerers
    assert answerers <= passers
    # So is rephrasing (§2.3).
    rephrasers = set(
        Assignment.objects.filter(hit__stage=rephrase).values_list("worker_id", flat=True)
    )
    assert rephrasers <= passers
    rephrasings = list(Item.objects.filter(stage=rephrase))
    assert rephrasings
    assert {r.data["question"] for r in rephrasings} <= {q.data["question"] for q in questions}
    assert Assignment.objects.filter(hit__stage=rephrase, status=AssignmentStatus.APPROVED)


def test_graphquestions_pilot_collects_paraphrases_with_characteristics():
    campaign = _campaign("GraphQuestions pilot", "gq-pilot")
    (paraphrase,) = recipe_apply(campaign=campaign, name="graphquestions")
    stage_update(stage=paraphrase, assignments_per_hit=2)
    campaign = campaign_start(campaign=campaign, to_state="pilot")

    result = simulate_crowd(campaign=campaign, workers=4, seed=1, approve_all=True)

    assert result.ok, "\n".join(result.lines())
    done = Assignment.objects.filter(hit__stage=paraphrase, status=AssignmentStatus.APPROVED)
    assert done.count() >= 4
    for assignment in done:
        for entry in (assignment.answers or {})["items"]:
            assert entry["paraphrases"]
            assert all(p.endswith("?") for p in entry["paraphrases"])
