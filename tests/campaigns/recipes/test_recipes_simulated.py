"""Each recipe piloted end to end on the local workforce by the crowd simulator, through
the real worker pages: examples flow from stage to stage as the paper's pipeline says.

The pilots are small (a requester shrinks a recipe the same way before a pilot): a few
items, fewer places per HIT; everything else is the recipe's. The suite runs them
smaller still (fewer Mintaka cells, four WhyQA questions instead of the article's ten);
``--full-size`` runs them as before, as ``bench/suite_simulations.py`` does.
"""

from __future__ import annotations

import json
import sys
from typing import Any, cast

import pytest

from campaigns.design.items import items_upload
from campaigns.design.services import campaign_create, stage_update
from campaigns.models import Assignment, AssignmentStatus, Item
from campaigns.platforms.publishing import campaign_start
from campaigns.recipes.services import recipe_apply
from campaigns.simulate import simulate_crowd
from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.base import answer_for_item
from campaigns.tasktypes.paraphrase_canonical import canonical_copy_reason
from linking.agreement import link_set
from linking.models import EntityLinkResolution
from tests.campaigns.recipes.run_summary import run_summary
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

DECIDED = (AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)


def _report(title: str, summary: dict) -> None:
    """The run's numbers, shown with ``pytest -s`` (the issue's closing note uses them)."""
    shown = {k: v for k, v in summary.items() if k != "rows"}
    sys.stdout.write(f"{title} {json.dumps(shown, indent=1)}\n")


def _campaign(name: str, slug: str):
    owner = UserFactory.create(username=f"owner-{slug}")
    return campaign_create(owner=owner, name=name, slug=slug)


@pytest.mark.slow(seconds=40)
def test_mintaka_pilot_flows_from_writing_to_both_linking_stages(full_size):
    campaign = _campaign("Mintaka pilot", "mintaka-pilot")
    write, link_answers, link_questions, _translate = recipe_apply(
        campaign=campaign, name="mintaka", sample=False
    )
    stage_update(stage=write, assignments_per_hit=1)
    # The suite's: the types the assertions below are about (count, superlative, yes/no).
    types: tuple[str, ...] = ("superlative", "yesno", "count")
    if full_size:
        types = ("comparative", "superlative", "yesno", "count", "generic")
    cells = [
        {"external_id": f"{topic}-{t}", "topic": topic, "complexity_type": t}
        for topic in ("movies", "videogames")
        for t in types
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
    assert all(i.data["answer_type"] not in ("boolean", "numeric", "date") for i in answers)
    # §4.1-4.2: count answers are linked as the entities counted.
    assert any(i.data["complexity_type"] == "count" for i in answers)
    # §4.3: every question is linked, yes/no ones included.
    written = [
        p["question"]
        for a in Assignment.objects.filter(hit__stage=write, status=AssignmentStatus.APPROVED)
        for p in cast(dict[str, Any], a.answers)["questions"]
    ]
    assert {q.data["question"] for q in questions} == set(written)
    assert Assignment.objects.filter(
        hit__stage=link_questions, status=AssignmentStatus.APPROVED
    ).exists()
    # §4.3: questions whose entities were all linked before need one annotator.
    resolutions = EntityLinkResolution.objects.filter(stage=link_questions)
    seen = resolutions.filter(seen=True)
    assert seen.exists(), "the seen-entity rule never fired"
    assert all(r.annotators == 1 for r in seen.filter(source="seen_confirmed"))
    assert all(r.annotators >= 2 for r in resolutions.filter(seen=False))
    # Issue 35, point 6: a seen question gets a second annotator only on disagreement:
    # its first annotator changed the pre-filled links.
    for r in seen.filter(annotators__gte=2).select_related("item"):
        first = (
            Assignment.objects.filter(hit__items=r.item, status__in=DECIDED)
            .order_by("submitted_at", "pk")
            .first()
        )
        assert first is not None
        entry = answer_for_item(first.answers, {"id": r.item_id, "external_id": r.item.external_id})
        assert entry is not None
        given = link_set(entry["links"])
        assert given != link_set(r.item.data.get("prefilled_links", [])), (r.item.data, given)

    summary = run_summary(campaign=campaign, export="mintaka")
    _report("MINTAKA", summary)
    rows = summary["rows"]
    assert len(rows) == len(written)
    assert {r["category"] for r in rows} == {"movies", "videogames"}
    assert all("translations" in r for r in rows)
    assert all("answerNum" in r["answer"] for r in rows if r["complexityType"] == "count")
    assert all("answerNum" in r["answer"] for r in rows if r["complexityType"] == "superlative")
    assert any(e["entityType"] == "date" for r in rows for e in r["questionEntity"])


@pytest.mark.slow(seconds=20)
def test_whyqa_pilot_flows_from_articles_to_rephrasings(full_size):
    # One why-question per QGenHIT (§2.2.1): ten writers give the article's ten; the
    # suite asks four of six workers for four, rephrased two to a HIT (not five).
    asked, workers, rephrase_items = (10, 10, 5) if full_size else (4, 6, 2)
    campaign = _campaign("WhyQA pilot", "whyqa-pilot")
    quiz, generate, answer, rephrase = recipe_apply(campaign=campaign, name="whyqa")
    stage_update(stage=quiz, assignments_per_hit=4)
    stage_update(stage=generate, assignments_per_hit=asked)
    stage_update(stage=rephrase, assignments_per_hit=2, items_per_hit=rephrase_items)
    campaign = campaign_start(campaign=campaign, to_state="pilot")

    result = simulate_crowd(
        campaign=campaign, workers=workers, seed=2, approve_all=True, shares={"good": 1.0}
    )

    assert result.ok, "\n".join(result.lines())
    assert result.server_errors() == 0
    assert Assignment.objects.filter(hit__stage=quiz, status__in=DECIDED).exists()
    assert Assignment.objects.filter(hit__stage=generate, status=AssignmentStatus.APPROVED)
    questions = list(Item.objects.filter(stage=answer))
    assert len(questions) == asked  # one article x `asked` why-questions
    assert all(q.data["question"].lower().startswith("why") for q in questions)
    assert Assignment.objects.filter(hit__stage=answer, status__in=DECIDED).count() >= 3 * asked
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
    task_type = task_type_get("paraphrase_canonical")
    for assignment in done:
        for entry in (assignment.answers or {})["items"]:
            assert entry["paraphrases"]
            assert all(p.endswith("?") for p in entry["paraphrases"])
            item = Item.objects.get(stage=paraphrase, external_id=entry["external_id"])
            # §7.1: no accepted paraphrase is the canonical question with words around it.
            assert all(
                canonical_copy_reason(p, item.data["canonical_question"], max_edit_ratio=0.2)
                is None
                for p in entry["paraphrases"]
            )
    assert task_type.name == "paraphrase_canonical"

    summary = run_summary(campaign=campaign, export="graphquestions")
    _report("GRAPHQUESTIONS", summary)
    splits: dict[str, set[str]] = {}
    for row in summary["rows"]:
        splits.setdefault(row["graph_query_id"], set()).add(row["split"])
    assert splits
    assert all(len(s) == 1 for s in splits.values())  # §7.2
