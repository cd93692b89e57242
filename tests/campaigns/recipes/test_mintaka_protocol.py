"""Mintaka run as published (Sen, Aji and Saffari, COLING 2022, §4.1-4.4): count answers
are linked as their counted entities, every question reaches question linking, and
the export matches the released JSON field by field (value entities, answerNum for
count and superlative, null ids for entities not in Wikidata, translations)."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest

from campaigns.design.items import items_upload
from campaigns.design.services import campaign_create, stage_link, stage_update
from campaigns.exports import export_write
from campaigns.models import Item, QualificationGrant
from campaigns.platforms.publishing import campaign_start
from campaigns.recipes.services import recipe_apply
from campaigns.tasktypes import task_type_get
from campaigns.work.allocation import assignment_accept
from campaigns.work.decisions import assignment_approve
from campaigns.work.handoff import handoff_run
from campaigns.work.invites import invite_create, invite_redeem, invite_token
from campaigns.work.submission import assignment_submit
from linking.models import EntityLinkResolution, ResolutionStatus

pytestmark = pytest.mark.django_db

COUNT = [
    {
        "question": f"How many Uncharted games came out before {2010 + i}?",
        "answer": "2",
        "numeric_value": "2",
        "counted_entities": "Uncharted: Drake's Fortune\nUncharted 2: Among Thieves",
    }
    for i in range(5)
]
SUPERLATIVE = [
    {
        "question": f"What is the longest river in the state number {i + 1}?",
        "answer": "Missouri River",
        "numeric_value": "2,341 miles",
    }
    for i in range(5)
]
YESNO = [
    {"question": f"Did the third Uncharted game come out in {2010 + i}?", "answer": "Yes"}
    for i in range(5)
]


def _form(pairs):
    form = {}
    for i, pair in enumerate(pairs):
        for key in ("question", "answer", "numeric_value", "counted_entities"):
            form[f"questions/{i}/{key}"] = pair.get(key, "")
    return form


def _work(stage, form, *, requester):
    invite = invite_create(
        campaign=stage.campaign, created_by=stage.campaign.owner, expires_in=timedelta(days=1)
    )
    _, worker = invite_redeem(token=invite_token(invite=invite))
    assignment = assignment_accept(stage=stage, worker=worker)
    result = assignment_submit(assignment_id=assignment.pk, worker=worker, form=form, telemetry={})
    assert result.stored, result.errors
    approved = assignment_approve(assignment=result.assignment, decided_by=requester,
                                  source="requester")  # fmt: skip
    handoff_run(assignment=approved)
    return approved


@pytest.fixture
def mintaka(requester):
    campaign = campaign_create(owner=requester, name="Mintaka", slug="mintaka-protocol")
    write, link_answers, link_questions, translate = recipe_apply(
        campaign=campaign, name="mintaka", sample=False
    )
    stage_update(stage=write, assignments_per_hit=1)
    handoff = {**write.handoff, "translate_languages": ["ja", "de"]}
    stage_link(stage=write, next_stage=link_answers, handoff=handoff)
    cells = [
        {"external_id": f"videogames-{t}", "topic": "videogames", "complexity_type": t}
        for t in ("count", "superlative", "yesno")
    ]
    items_upload(
        stage=write,
        content="\n".join(json.dumps(c) for c in cells).encode(),
        filename="cells.jsonl",
    )
    campaign = campaign_start(campaign=campaign, to_state="pilot")
    for pairs in (COUNT, SUPERLATIVE, YESNO):
        write.refresh_from_db()
        _work(write, _form(pairs), requester=requester)
    return campaign, write, link_answers, link_questions, translate


def test_count_answers_are_linked_as_their_entities_and_every_question_is_linked(mintaka):
    _campaign, _write, link_answers, link_questions, _translate = mintaka
    answers = {i.data["question"]: i for i in Item.objects.filter(stage=link_answers)}
    count = answers[COUNT[0]["question"]]
    assert count.data["answer"] == "Uncharted: Drake's Fortune, Uncharted 2: Among Thieves"
    assert count.data["answer_type"] == "entity"
    assert not any(q["question"] in answers for q in YESNO)  # §4.2: yes/no not linked
    questions = {i.data["question"] for i in Item.objects.filter(stage=link_questions)}
    # §4.3: yes/no questions reach question linking straight from writing.
    assert {q["question"] for q in YESNO} <= questions


def test_export_matches_the_release_field_by_field(mintaka, requester):
    campaign, _write, link_answers, link_questions, translate = mintaka
    count_item = Item.objects.get(stage=link_answers, data__question=COUNT[0]["question"])
    EntityLinkResolution.objects.create(
        item=count_item, stage=link_answers, hit=count_item.hits.get(),
        status=ResolutionStatus.RESOLVED,
        links=[{"start": 0, "end": 26, "text": "Uncharted: Drake's Fortune", "qid": "Q17150",
                "none": False},
               {"start": 28, "end": 54, "text": "Uncharted 2: Among Thieves", "qid": "Q17146",
                "none": False}],
    )  # fmt: skip
    question = YESNO[0]["question"]  # "Did the third Uncharted game come out in 2010?"
    yes_item = Item.objects.get(stage=link_questions, data__question=question)
    yes_item.data = {
        **yes_item.data,
        "proposed_spans": [
            {"start": 8, "end": 13, "text": "third", "kind": "ordinal"},
            {"start": 14, "end": 23, "text": "Uncharted", "kind": "entity"},
            {"start": 41, "end": 45, "text": "2010", "kind": "date"},
        ],
    }
    yes_item.save()
    EntityLinkResolution.objects.create(
        item=yes_item, stage=link_questions, hit=yes_item.hits.get(),
        status=ResolutionStatus.RESOLVED,
        links=[{"start": 14, "end": 23, "text": "Uncharted", "qid": "Q1064135", "none": False}],
    )  # fmt: skip
    # Professional translators translate every question (§4.4), 10 per HIT.
    assert Item.objects.filter(stage=translate).count() == 15 * 2
    japanese = "3作目のアンチャーテッドは2010年に発売されましたか\uff1f"
    for _ in range(3):
        invite = invite_create(campaign=campaign, created_by=requester,
                               expires_in=timedelta(days=1))  # fmt: skip
        _, worker = invite_redeem(token=invite_token(invite=invite))
        QualificationGrant.objects.create(  # the requester names their translators
            qualification_type_id=translate.qualification_requirements[0]["qualification_type_id"],
            worker=worker,
        )
        assignment = assignment_accept(stage=translate, worker=worker)
        form = {}
        for i, item in enumerate(assignment.hit.items.order_by("hititem__position")):
            text = f"[{item.data['language']}] {item.data['question']}"
            if item.data["question"] == question and item.data["language"] == "ja":
                text = japanese
            form[f"items/{i}/translation"] = text
        result = assignment_submit(assignment_id=assignment.pk, worker=worker, form=form,
                                   telemetry={})  # fmt: skip
        assert result.stored, result.errors
        assignment_approve(assignment=result.assignment, decided_by=requester,
                           source="requester")  # fmt: skip

    out = io.StringIO()
    export_write(campaign=campaign, name="mintaka", out=out)
    examples = {e["question"]: e for e in json.loads(out.getvalue())}
    assert len(examples) == 15
    assert all(
        list(e) == ["id", "question", "translations", "questionEntity", "answer", "category",
                    "complexityType"]
        for e in examples.values()
    )  # fmt: skip
    assert {e["category"] for e in examples.values()} == {"videogames"}

    count = examples[COUNT[0]["question"]]["answer"]
    assert count["answerType"] == "entity"
    assert [a["name"] for a in count["answer"]] == ["Q17150", "Q17146"]
    assert count["mention"] == "Uncharted: Drake's Fortune, Uncharted 2: Among Thieves"
    assert count["answerNum"] == 2

    superlative = examples[SUPERLATIVE[0]["question"]]["answer"]
    assert superlative["answerNum"] == "2,341 miles"
    assert superlative["answer"] is None  # not linked yet

    yes = examples[question]
    assert yes["answer"] == {"answerType": "boolean", "answer": [True], "mention": "Yes"}
    assert yes["questionEntity"] == [
        {"name": "Q1064135", "entityType": "entity", "label": yes["questionEntity"][0]["label"],
         "mention": "Uncharted", "span": [14, 23]},
        {"name": 3, "entityType": "ordinal", "mention": "third", "span": [8, 13]},
        {"name": 2010, "entityType": "date", "mention": "2010", "span": [41, 45]},
    ]  # fmt: skip
    assert yes["translations"] == {"ja": japanese, "de": f"[de] {question}"}
    assert set(examples[YESNO[1]["question"]]["translations"]) == {"ja", "de"}


def test_translation_is_off_by_default_and_offers_the_eight_languages(requester):
    campaign = campaign_create(owner=requester, name="M", slug="mintaka-tr")
    write, *_, translate = recipe_apply(campaign=campaign, name="mintaka", sample=False)
    assert write.handoff["translate_languages"] == []
    assert write.handoff["translate_to"] == translate.pk
    assert translate.task_type == "translation"
    assert set(task_type_get("translation").effective_config(translate.config)["languages"]) == {
        "ar", "de", "es", "fr", "hi", "it", "ja", "pt"
    }  # fmt: skip
    assert translate.qualification_requirements  # professional translators only
