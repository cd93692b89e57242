from __future__ import annotations

import pytest

from campaigns.tasktypes import UnknownTaskType, task_type_get, task_type_names
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
    with pytest.raises(UnknownTaskType, match="question_writing"):
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
