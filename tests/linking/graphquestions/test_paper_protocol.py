"""GraphQuestions as published (Su et al., EMNLP 2016): the nine functions (§4), the
canonical questions checked by two people before paraphrasing (§7.1), trivial
paraphrases removed (§7.1), and a train/test split grouped by graph query (§7.2)."""

from __future__ import annotations

import io
import json
import random
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from django.contrib.auth.models import User

from campaigns.design.items import items_upload
from campaigns.design.services import campaign_create, stage_update
from campaigns.exports import export_write
from campaigns.models import Item
from campaigns.platforms.publishing import campaign_start
from campaigns.recipes.services import recipe_apply
from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.base import simulated_rephrasing
from campaigns.work.allocation import assignment_accept
from campaigns.work.decisions import assignment_approve
from campaigns.work.invites import invite_create, invite_redeem, invite_token
from campaigns.work.submission import assignment_submit
from linking.graphquestions.generate import Spec, canonical_question, query_answers
from linking.graphquestions.kb import RDFFileKnowledgeBase
from linking.graphquestions.query import FUNCTIONS, Edge, Function, GraphQuery, Node
from linking.graphquestions.services import (
    generated_questions_decide,
    generated_questions_propose,
    generated_questions_send,
)
from tests.factories import UserFactory

EX = "http://example.org/"
PERSON, PARENT, BORN = EX + "Person", EX + "parent", EX + "birthDate"
TTL = Path(__file__).parent / "people.ttl"
CANONICAL = "what is the number of films directed by steven spielberg?"
ITEM: dict[str, Any] = {
    "external_id": "gq-1",
    "data": {
        "canonical_question": CANONICAL,
        "characteristics": {"edges": 1, "function": "count"},
        "entities": [{"label": "Steven Spielberg", "forms": ["Spielberg"]}],
    },
}


def _errors(text: str) -> list[str]:
    tt = task_type_get("paraphrase_canonical")
    answer = {"items": [{"external_id": "gq-1", "paraphrases": [text]}]}
    return [e.message for e in tt.validate_answer(answer=answer, items=[ITEM], config={})]


@pytest.mark.parametrize(
    "text",
    [
        "Could you tell me what is the number of films directed by Steven Spielberg?",
        "Hey, what is the number of films directed by steven spielberg?",
        "I wonder: what is the number of films directed by Steven Spielberg, the director?",
        "What is the number of films directed by Steven Spielberg so far?",
        "Which is the number of movies directed by Steven Spielberg?",
    ],
)
def test_the_canonical_question_behind_a_prefix_or_one_word_changed_is_trivial(text):
    assert _errors(text), text


def test_thirty_copies_behind_the_simulators_prefixes_are_all_refused():
    """The old simulator's "paraphrases": the canonical question behind added phrases,
    worded apart enough to pass the word-overlap check alone."""
    copies = {
        simulated_rephrasing(CANONICAL, rng=random.Random(seed), max_similarity=0.8)
        for seed in range(30)
    }
    assert all(CANONICAL.rstrip("?") in c.lower() for c in copies)
    assert all(_errors(c) for c in copies), [c for c in copies if not _errors(c)]


@pytest.mark.parametrize(
    "text",
    [
        "How many films has Steven Spielberg directed?",
        "Spielberg has directed how many movies?",
        "How many movies did Steven Spielberg make as a director?",
    ],
)
def test_real_paraphrases_pass(text):
    assert _errors(text) == []


def test_all_nine_functions_including_max_and_min():
    assert set(FUNCTIONS) - {"none"} == {
        "count", "max", "min", "argmax", "argmin", ">", ">=", "<", "<="
    }  # fmt: skip
    kb = RDFFileKnowledgeBase(TTL)
    kids = GraphQuery(nodes=(Node(PERSON), Node(PERSON, EX + "Carl")), edges=(Edge(0, PARENT, 1),))
    latest = GraphQuery(kids.nodes, kids.edges, 0, Function("max", attribute=BORN))
    earliest = GraphQuery(kids.nodes, kids.edges, 0, Function("min", attribute=BORN))
    assert [a[:10].strip('"') for a in query_answers(kb=kb, query=latest)] == ["1950-12-24"]
    assert [a[:10].strip('"') for a in query_answers(kb=kb, query=earliest)] == ["1940-09-09"]
    labels = {PERSON: "person", PARENT: "parent", BORN: "date of birth", EX + "Carl": "Carl"}
    assert canonical_question(query=latest, labels=labels).startswith(
        "what is the largest date of birth of a person"
    )


@pytest.mark.django_db
def test_max_and_min_questions_are_generated(requester):
    campaign = campaign_create(owner=requester, name="KB", slug="kb-maxmin")
    kb = RDFFileKnowledgeBase(TTL)
    for kind in ("max", "min"):
        stored = generated_questions_propose(
            campaign=campaign, kb=kb, spec=Spec(classes=(PERSON,), function=kind), count=2,
            seed=3,
        )  # fmt: skip
        assert stored
        assert {q.characteristics["function_kind"] for q in stored} == {kind}
        assert {q.characteristics["function"] for q in stored} == {"superlative"}


@pytest.mark.django_db
def test_sending_to_the_recipes_stage_needs_two_checks_and_never_collides(requester):
    campaign = campaign_create(owner=requester, name="GQ", slug="gq-fresh")
    (paraphrase,) = recipe_apply(campaign=campaign, name="graphquestions")  # gq-1 ... gq-4
    stored = generated_questions_propose(
        campaign=campaign, kb=RDFFileKnowledgeBase(TTL), spec=Spec(classes=(PERSON,)), count=3,
        seed=4,
    )  # fmt: skip
    # An uploaded item already holds the id the old numbering would have given.
    items_upload(
        stage=paraphrase,
        content=json.dumps({**ITEM["data"], "external_id": f"gq-{stored[0].pk}"}).encode(),
        filename="more.jsonl",
    )
    generated_questions_decide(questions=stored, accept=True, user=requester)
    assert generated_questions_send(campaign=campaign, stage=paraphrase) == 0  # one check
    generated_questions_decide(questions=stored, accept=True, user=requester)  # same person
    assert generated_questions_send(campaign=campaign, stage=paraphrase) == 0
    generated_questions_decide(
        questions=stored, accept=True, user=cast(User, UserFactory(username="bo"))
    )
    assert generated_questions_send(campaign=campaign, stage=paraphrase) == len(stored)
    sent = Item.objects.filter(stage=paraphrase, source="generated")
    assert sent.count() == len(stored)
    assert all(i.external_id.startswith("gq-") and len(i.external_id) == 19 for i in sent)


@pytest.mark.django_db
def test_export_split_keeps_every_query_in_one_set(requester):
    campaign = campaign_create(owner=requester, name="GQ", slug="gq-split")
    (paraphrase,) = recipe_apply(campaign=campaign, name="graphquestions")
    stage_update(stage=paraphrase, assignments_per_hit=2)
    campaign = campaign_start(campaign=campaign, to_state="pilot")
    rewordings = {
        "gq-1": ["How many films has Steven Spielberg directed?",
                 "Spielberg has directed how many movies?"],
        "gq-2": ["In Germany, which river runs the longest distance?",
                 "Name the longest of the German rivers."],
        "gq-3": ["Who are the parents of Microsoft's founder?",
                 "Whose child started Microsoft?"],
        "gq-4": ["Name the mountains whose height tops 8000 meters.",
                 "Over 8000 meters: which peaks reach that height?"],
    }  # fmt: skip
    for turn in range(2):
        for _ in range(4):
            invite = invite_create(
                campaign=campaign, created_by=requester, expires_in=timedelta(days=1)
            )
            _, worker = invite_redeem(token=invite_token(invite=invite))
            assignment = assignment_accept(stage=paraphrase, worker=worker)
            item = assignment.hit.items.get()
            text = rewordings[item.external_id][turn]
            result = assignment_submit(
                assignment_id=assignment.pk, worker=worker,
                form={"items/0/paraphrases/0": text}, telemetry={},
            )  # fmt: skip
            assert result.stored, (text, result.errors)
            assignment_approve(assignment=result.assignment, decided_by=requester,
                               source="requester")  # fmt: skip
    out = io.StringIO()
    assert export_write(campaign=campaign, name="graphquestions", out=out, seed=5) == 8
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    split_of: dict[str, set[str]] = {}
    for row in rows:
        split_of.setdefault(row["graph_query_id"], set()).add(row["split"])
        assert row["characteristics"]
        assert row["canonical_question"]
    assert all(len(s) == 1 for s in split_of.values())
    assert sorted(next(iter(s)) for s in split_of.values()) == ["test", "test", "train", "train"]
    train = io.StringIO()
    export_write(campaign=campaign, name="graphquestions", out=train, seed=5, split="train")
    assert len(train.getvalue().splitlines()) == 4
