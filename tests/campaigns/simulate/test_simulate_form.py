"""Every task type's simulated worker: good answers validate, spammers often do not."""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.utils.datastructures import MultiValueDict

from campaigns.tasktypes import task_type_get, task_type_names
from campaigns.tasktypes.base import SIMULATION_PROFILES, TaskType, simulated_qid
from tests.campaigns.tasktypes.test_quiz_survey import SURVEY, WHYQA

ARTICLE = {
    "article_id": "Q1-enwiki",
    "title": "Black Death",
    "sections": [
        {"header": "Causes", "paragraphs": [["Fleas on rats spread the plague.", "Rats too."]]},
        {"header": "Spread", "paragraphs": [["Trade routes carried it west.", "Ships too."]]},
    ],
}
PASSAGE = {"passage": "Ann left the party early because she felt tired.", "title": "Ann"}
MC = {
    "passage": PASSAGE["passage"],
    "question": "Why did Ann leave?",
    "options": ["Tired", "Bored", "Late", "Ill"],
}
SURVEY_WITH_NUMBER = {
    "questions": [
        {"id": "age", "text": "Age?", "kind": "number", "required": True, "min": 18, "max": 99},
        {"id": "lang", "text": "Language?", "kind": "single", "options": ["en", "de"]},
        {"id": "tools", "text": "Tools?", "kind": "multiple", "options": ["a", "b", "c"]},
        {"id": "notes", "text": "Notes?", "kind": "long_text", "max_length": 200},
    ]
}


def _items(*datas: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"id": n + 1, "external_id": f"x{n}", "data": d} for n, d in enumerate(datas)]


# name -> list of (items, config): representative HITs, several per type where it matters.
CASES: dict[str, list[tuple[list[dict[str, Any]], dict[str, Any]]]] = {
    "question_writing": [
        (_items({"topic": "movies", "complexity_type": t}), {"questions_per_hit": 5})
        for t in ("count", "yesno", "superlative", "comparative", "generic", "difference")
    ],
    "why_question_from_partial_article": [(_items(ARTICLE), {})],
    "sentence_selection_answer": [
        (
            _items(
                {
                    "question": "Why did the plague spread?",
                    "sentences": ["Fleas on rats spread the plague.", "It was cold.", "Ships."],
                },
                {"question": "Why is the sky blue?", "sentences": ["Grass is green."]},
            ),
            {},
        )
    ],
    "translation": [
        (
            _items(
                {"question": "Who won the 1998 World Cup?", "language": "fr"},
                {"question": "How many films did Ridley Scott direct?", "language": "ja"},
            ),
            {},
        )
    ],
    "rephrase": [
        (
            _items(
                {"question": "Why did the Roman Empire fall?"},
                {
                    "question": "Why did the long and very costly wars between the northern "
                    "kingdoms and the southern city states of the old peninsula finally end "
                    "with a treaty signed in the harbour town after many decades?"
                },
            ),
            {},
        )
    ],
    "paraphrase_canonical": [
        (
            _items(
                {
                    "canonical_question": "what is the number of films directed by spielberg?",
                    "characteristics": {"function": "count"},
                    "entities": [{"label": "Steven Spielberg", "forms": ["Spielberg"]}],
                }
            ),
            {"paraphrases_per_item": 3},
        )
    ],
    "answer_entity_linking": [
        (
            _items(
                {"question": "Who painted it?", "answer": "Frida Kahlo"},
                {
                    "question": "Who met where?",
                    "answer": "Ada Lovelace met 3 people in London",
                    "proposed_spans": [
                        {"start": 0, "end": 12, "text": "Ada Lovelace"},
                        {"start": 17, "end": 18, "text": "3"},
                        {"start": 29, "end": 35, "text": "London"},
                    ],
                },
            ),
            {},
        )
    ],
    "question_entity_linking": [
        (
            _items(
                {
                    "question": "Did Marie Curie live in Paris?",
                    "proposed_spans": [
                        {"start": 4, "end": 15, "text": "Marie Curie"},
                        {"start": 24, "end": 29, "text": "Paris"},
                    ],
                }
            ),
            {"min_links": 1},
        )
    ],
    "entity_link_validation": [
        (
            _items(
                {
                    "question": "Who painted it?",
                    "answer": "Frida Kahlo",
                    "text": "Frida Kahlo",
                    "start": 0,
                    "end": 11,
                    "qid": simulated_qid("Frida Kahlo"),
                    "span_in": "answer",
                },
                {
                    "question": "Did Marie Curie live in Paris?",
                    "text": "Paris",
                    "start": 24,
                    "end": 29,
                    "qid": "Q90000001",
                },
            ),
            {},
        )
    ],
    "mc_question_writing": [
        (_items(PASSAGE), {}),
        (_items(PASSAGE), {"questions_per_passage": 3, "justification": "required"}),
    ],
    "mc_validation": [(_items({**MC, "writer_correct": 0}, MC), {})],
    "rubric_evaluation": [(_items({**MC, "correct": 0}), {})],
    "quiz": [(_items({}), WHYQA)],
    "survey": [(_items({}), SURVEY), (_items({}), SURVEY_WITH_NUMBER)],
    "adversarial_passage_question": [
        (_items({"sentences": ["The river flows north.", "It floods in spring."]}), {})
    ],
    "adversarial_fool_validation": [
        (
            _items(
                {
                    "sentences": ["The river flows north.", "It floods in spring."],
                    "question": "When does it flood?",
                    "writer_sentences": [1],
                    "model_answer": "The river flows north.",
                }
            ),
            {},
        )
    ],
}
SEEDS = range(25)


def answer_errors(
    task_type: TaskType,
    items: list[dict[str, Any]],
    config: dict[str, Any],
    profile: str,
    seed: int,
) -> list[Any]:
    fields = task_type.simulate_form(
        items=items, config=config, profile=profile, rng=random.Random(seed)
    )
    assert all(isinstance(v, list) for v in fields.values()), fields
    answer = task_type.parse_form(form=MultiValueDict(fields), items=items, config=config)
    return task_type.validate_answer(answer=answer, items=items, config=config)


def test_every_registered_task_type_has_a_case():
    assert sorted(CASES) == task_type_names()


@pytest.mark.parametrize("name", sorted(CASES))
def test_good_workers_answer_validly(name):
    task_type = task_type_get(name)
    for items, config in CASES[name]:
        for problem in (task_type.validate_item(i["data"]) for i in items):
            assert problem == []
        for seed in SEEDS:
            assert answer_errors(task_type, items, config, "good", seed) == [], (config, seed)


@pytest.mark.parametrize("name", sorted(CASES))
def test_spammers_are_often_refused_and_sloppy_workers_mostly_pass(name):
    task_type = task_type_get(name)
    items, config = CASES[name][-1]
    spam = [bool(answer_errors(task_type, items, config, "spammer", s)) for s in SEEDS]
    sloppy = [bool(answer_errors(task_type, items, config, "sloppy", s)) for s in SEEDS]
    assert sum(spam) >= 3, "spammers should often send answers the page refuses"
    assert sum(sloppy) < len(SEEDS) // 2, "sloppy workers are mostly valid"


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("profile", SIMULATION_PROFILES)
def test_one_seed_gives_one_answer(name, profile):
    task_type = task_type_get(name)
    items, config = CASES[name][0]

    def form(seed: int) -> dict[str, list[str]]:
        return task_type.simulate_form(
            items=items, config=config, profile=profile, rng=random.Random(seed)
        )

    assert form(7) == form(7)


def test_unknown_profile_and_missing_hook_say_so():
    with pytest.raises(ValueError, match="Unknown simulation profile 'lazy'"):
        task_type_get("rephrase").simulate_form(
            items=[], config={}, profile="lazy", rng=random.Random(0)
        )

    class Bare(TaskType):
        name = "bare"
        label = "Bare"

    with pytest.raises(NotImplementedError, match="'bare' has no simulate_form"):
        Bare().simulate_form(items=[], config={}, profile="good", rng=random.Random(0))


def test_good_entity_linkers_skip_numbers_and_agree():
    task_type = task_type_get("answer_entity_linking")
    items, config = CASES["answer_entity_linking"][0]
    forms = [
        task_type.parse_form(
            form=MultiValueDict(
                task_type.simulate_form(
                    items=items, config=config, profile="good", rng=random.Random(s)
                )
            ),
            items=items,
            config=config,
        )
        for s in (1, 2)
    ]
    assert forms[0] == forms[1]
    links = forms[0]["items"][1]["links"]
    assert [link["text"] for link in links] == ["Ada Lovelace", "London"]
    assert links[0]["qid"] == simulated_qid("Ada Lovelace")


def test_good_linker_never_links_overlapping_proposals():
    """spaCy proposes a whole coordination and its parts; a careful worker links the parts."""
    import random

    from django.http import QueryDict

    from campaigns.tasktypes import task_type_get

    tt = task_type_get("answer_entity_linking")
    items = [
        {
            "id": 1,
            "external_id": "qa-1",
            "data": {
                "question": "Who starred in Sleepless in Seattle?",
                "answer": "Tom Hanks and Meg Ryan",
                "proposed_spans": [
                    {"start": 0, "end": 22, "text": "Tom Hanks and Meg Ryan", "kind": "entity"},
                    {"start": 0, "end": 9, "text": "Tom Hanks", "kind": "entity"},
                    {"start": 14, "end": 22, "text": "Meg Ryan", "kind": "entity"},
                ],
            },
        }
    ]
    for seed in range(5):
        fields = tt.simulate_form(items=items, config={}, profile="good", rng=random.Random(seed))
        form = QueryDict(mutable=True)
        for key, values in fields.items():
            form.setlist(key, values)
        answer = tt.parse_form(form=form, items=items, config={})
        assert tt.validate_answer(answer=answer, items=items, config={}) == []
        linked = {link["text"] for link in answer["items"][0]["links"] if link.get("qid")}
        assert linked == {"Tom Hanks", "Meg Ryan"}
