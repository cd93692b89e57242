"""Registry of task types. Adding a task type: one module, one line here."""

from __future__ import annotations

from campaigns.tasktypes.base import FieldError, TaskType
from campaigns.tasktypes.entity_link_validation import EntityLinkValidation
from campaigns.tasktypes.entity_linking import AnswerEntityLinking, QuestionEntityLinking
from campaigns.tasktypes.mc_question_writing import MCQuestionWriting
from campaigns.tasktypes.mc_validation import MCValidation
from campaigns.tasktypes.paraphrase_canonical import ParaphraseCanonical
from campaigns.tasktypes.question_writing import QuestionWriting
from campaigns.tasktypes.quiz import Quiz, QuizScore, score_quiz
from campaigns.tasktypes.rephrase import Rephrase
from campaigns.tasktypes.rubric_evaluation import RubricEvaluation
from campaigns.tasktypes.sentence_selection import SentenceSelectionAnswer
from campaigns.tasktypes.survey import Survey
from campaigns.tasktypes.translation import Translation
from campaigns.tasktypes.why_question import WhyQuestionFromPartialArticle

_REGISTRY: dict[str, TaskType] = {
    t.name: t
    for t in (
        QuestionWriting(),
        WhyQuestionFromPartialArticle(),
        SentenceSelectionAnswer(),
        Rephrase(),
        ParaphraseCanonical(),
        AnswerEntityLinking(),
        QuestionEntityLinking(),
        EntityLinkValidation(),
        MCQuestionWriting(),
        RubricEvaluation(),
        MCValidation(),
        Quiz(),
        Survey(),
        Translation(),
    )
}


class UnknownTaskTypeError(LookupError):
    pass


UnknownTaskType = UnknownTaskTypeError  # the name other modules already import


def task_type_get(name: str) -> TaskType:
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise UnknownTaskTypeError(
            f"Unknown task type {name!r}; known task types: {known}."
        ) from None


def task_type_names() -> list[str]:
    return sorted(_REGISTRY)


__all__ = [
    "FieldError",
    "QuizScore",
    "TaskType",
    "UnknownTaskType",
    "UnknownTaskTypeError",
    "score_quiz",
    "task_type_get",
    "task_type_names",
]
