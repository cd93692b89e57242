"""Mintaka-style question writing: one topic x complexity-type cell per item."""

from __future__ import annotations

from typing import ClassVar

from campaigns.tasktypes.base import TaskType

COMPLEXITY_TYPES = [
    "count",
    "comparative",
    "superlative",
    "ordinal",
    "multihop",
    "intersection",
    "difference",
    "yesno",
    "generic",
]


class QuestionWriting(TaskType):
    name = "question_writing"
    label = "Question writing (topic x complexity type)"
    input_schema: ClassVar[dict] = {
        "type": "object",
        "required": ["topic", "complexity_type"],
        "properties": {
            "topic": {"type": "string", "minLength": 1, "maxLength": 100},
            "complexity_type": {"enum": COMPLEXITY_TYPES},
        },
    }
    config_schema: ClassVar[dict] = {
        "type": "object",
        "properties": {
            "questions_per_hit": {"type": "integer", "minimum": 1, "maximum": 20},
        },
    }
