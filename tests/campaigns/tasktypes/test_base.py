from __future__ import annotations

import pytest

from campaigns.tasktypes import (
    UnknownTaskTypeError,
    task_type_get,
    task_type_name_of,
    task_type_names,
    task_type_reading,
)
from campaigns.tasktypes.base import (
    HARD_TEXT_CAP,
    MAX_EXTERNAL_ID_LENGTH,
    derived_external_id,
    form_indices,
    form_list,
    form_text,
    normalise_text,
    parse_number_or_text,
    text_errors,
    token_set_similarity,
    trivial_variant_reason,
)
from tests.campaigns.tasktypes.helpers import qd

ALL = [
    "adversarial_fool_validation",
    "adversarial_passage_question",
    "answer_entity_linking",
    "entity_link_validation",
    "mc_question_writing",
    "mc_validation",
    "paraphrase_canonical",
    "question_entity_linking",
    "question_writing",
    "quiz",
    "rephrase",
    "rubric_evaluation",
    "sentence_selection_answer",
    "survey",
    "translation",
    "why_question_from_partial_article",
]


def test_registry_lists_every_task_type():
    assert task_type_names() == ALL
    for name in ALL:
        task_type = task_type_get(name)
        assert task_type.name == name
        assert task_type.template_name == f"tasktypes/{name}.html"


def test_unknown_task_type_names_the_known_ones():
    with pytest.raises(UnknownTaskTypeError, match="question_writing"):
        task_type_get("nope")


@pytest.mark.parametrize("name", [n for n in ALL if n not in {"quiz", "survey"}])
def test_config_defaults_satisfy_the_config_schema(name):
    task_type = task_type_get(name)
    assert task_type.validate_config(task_type.effective_config({})) == []


def test_form_text_normalises_newlines_strips_and_caps():
    form = qd({"a": "  line 1\r\nline 2  ", "big": "x" * (HARD_TEXT_CAP + 50)})
    assert form_text(form, "a") == "line 1\nline 2"
    assert form_text(form, "missing") == ""
    assert len(form_text(form, "big")) == HARD_TEXT_CAP


def test_form_list_and_indices():
    form = qd({"x": ["1", " 2 ", ""], "rows/3/a": "", "rows/10/b": "y", "rowsx/1/a": "z"})
    assert form_list(form, "x") == ["1", "2"]
    assert form_indices(form, "rows") == [3, 10]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("42", 42), ("1,234", 1234), ("3.5", 3.5), ("\u22122", -2), ("", None), ("abc", "abc")],
)
def test_parse_number_or_text_keeps_invalid_text(text, expected):
    assert parse_number_or_text(text) == expected


def test_text_errors():
    assert text_errors("p", "ok") == []
    assert text_errors("p", "  ")[0].message.endswith("required.")
    assert text_errors("p", "", required=False) == []
    assert "too long" in text_errors("p", "x" * 2001)[0].message
    assert text_errors("p", 3)[0].message.endswith("must be text.")


def test_normalise_and_similarity():
    assert normalise_text("  Why did  ROME fall?! ") == "why did rome fall"
    assert token_set_similarity("Why did Rome fall?", "Rome: why did it fall") == 1.0
    assert token_set_similarity("Why did Rome fall?", "What caused the fall of Rome?") < 0.8


def test_trivial_variant_reason():
    assert trivial_variant_reason("why did rome fall", "Why did Rome fall?", max_similarity=0.8)
    assert trivial_variant_reason(
        "Why did the Rome fall?", "Why did Rome fall?", max_similarity=0.8
    )
    assert (
        trivial_variant_reason(
            "What caused the collapse of the Roman Empire?",
            "Why did the Roman Empire fall?",
            max_similarity=0.8,
        )
        is None
    )


def test_derived_external_id_is_stable_unique_and_short():
    a = derived_external_id("cell-1", "q1", ["Q?", "A"])
    assert a == derived_external_id("cell-1", "q1", ["Q?", "A"])
    assert a.startswith("cell-1/q1-")
    assert a != derived_external_id("cell-1", "q1", ["Other?", "A"])
    assert a != derived_external_id("cell-1", "q2", ["Q?", "A"])
    long = derived_external_id("x" * 500, "q1", "c")
    assert len(long) <= MAX_EXTERNAL_ID_LENGTH
    assert long != derived_external_id("x" * 499 + "y", "q1", "c")


# --- What an answer means: label_of, is_no_answer, gold_correct -------------------------


@pytest.mark.parametrize(
    ("name", "entry", "label"),
    [
        ("mc_validation", {"choice": 2}, "2"),
        ("mc_validation", {"choice": ""}, None),
        ("mc_validation", {"label": "x", "verdict": "y"}, "x"),
        ("entity_link_validation", {"verdict": "wrong", "choice": 1}, "wrong"),
        ("rubric_evaluation", {"answerable": "yes", "ambiguous": "no"}, "yes"),
        ("sentence_selection_answer", {"sentences": [], "no_answer": True}, "no_answer"),
        ("sentence_selection_answer", {"sentences": [1], "no_answer": False}, "answered"),
        ("answer_entity_linking", {"links": []}, "[]"),
        ("rephrase", {"rephrasing": "Why?"}, None),
        ("mc_validation", None, None),
    ],
)
def test_each_task_type_says_which_label_its_answers_carry(name, entry, label):
    assert task_type_get(name).label_of(entry) == label


def test_a_rubric_label_is_read_on_the_dimension_asked_for():
    entry = {"answerable": "yes", "ambiguous": "no"}
    assert task_type_get("rubric_evaluation").label_of(entry, dimension="ambiguous") == "no"


def test_equal_link_sets_carry_the_same_label_in_any_order():
    linking = task_type_get("question_entity_linking")
    a = {"start": 0, "end": 5, "text": "Paris", "qid": "Q90"}
    b = {"start": 9, "end": 14, "text": "Rome", "none": True}
    assert linking.label_of({"links": [a, b]}) == linking.label_of({"links": [b, a]})
    assert linking.label_of({"links": [a]}) != linking.label_of({"links": [b]})


def test_only_sentence_selection_can_say_no_answer():
    selection = task_type_get("sentence_selection_answer")
    assert selection.is_no_answer({"no_answer": True}) is True
    assert selection.is_no_answer({"sentences": [2]}) is False
    assert selection.is_no_answer(None) is None
    assert task_type_get("mc_validation").is_no_answer({"no_answer": True}) is None


def test_gold_is_compared_as_each_task_type_reads_its_answers():
    assert task_type_get("mc_validation").gold_correct({"choice": 2}, {"choice": "2"})
    assert task_type_get("mc_validation").gold_correct({"comment": "x"}, 2) is None
    assert task_type_get("rubric_evaluation").gold_correct({"answerable": None}, "yes") is False
    selection = task_type_get("sentence_selection_answer")
    entry = {"sentences": [1], "no_answer": False}
    assert not selection.gold_correct(entry, [1, 2, 3])
    assert selection.gold_correct(entry, [1, 2, 3], sentence_threshold=0.3)
    link = {"start": 0, "end": 5, "text": "Paris", "qid": "Q90"}
    linking = task_type_get("answer_entity_linking")
    assert linking.gold_correct({"links": [link]}, {"links": [link]})
    assert linking.gold_correct({"links": [link]}, None) is None


def test_a_name_not_registered_reads_a_choice_label_or_verdict():
    plain = task_type_reading("imported_elsewhere")
    assert plain.label_of({"verdict": "ok"}) == "ok"
    assert plain.gold_correct({"label": 3}, 3)
    assert task_type_reading("rubric_evaluation") is task_type_get("rubric_evaluation")


def test_exports_find_their_stages_by_the_dataset_part_a_task_type_declares():
    assert task_type_name_of(dataset_part="qa_pairs") == "question_writing"
    assert task_type_names(dataset_part="answer_links") == ["answer_entity_linking"]
    assert task_type_names(dataset_part="paraphrases") == ["paraphrase_canonical"]
    with pytest.raises(LookupError, match="expected one"):
        task_type_name_of(links_entities=True)
    assert task_type_names(selects_sentences=True) == ["sentence_selection_answer"]
