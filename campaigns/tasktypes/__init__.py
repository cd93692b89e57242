"""Registry of task types. Adding a task type: one module, one line here."""

from __future__ import annotations

from campaigns.tasktypes.adversarial_qa import (
    AdversarialFoolValidation,
    AdversarialPassageQuestion,
)
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
        AdversarialPassageQuestion(),
        AdversarialFoolValidation(),
    )
}


class UnknownTaskTypeError(LookupError):
    pass


def task_type_get(name: str) -> TaskType:
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise UnknownTaskTypeError(
            f"Unknown task type {name!r}; known task types: {known}."
        ) from None


def task_type_names(**having: object) -> list[str]:
    """Names of the registered task types, or of those whose attributes match
    ``having`` (``task_type_names(links_entities=True)``), for queries by type."""
    return sorted(
        name
        for name, t in _REGISTRY.items()
        if all(getattr(t, attr) == value for attr, value in having.items())
    )


def task_type_name_of(**having: object) -> str:
    """The name of the one registered task type whose attributes match ``having``
    (``task_type_name_of(dataset_part="qa_pairs")``); LookupError for none or several."""
    names = task_type_names(**having)
    if len(names) != 1:
        raise LookupError(f"{len(names)} task types have {having!r}: {names}; expected one.")
    return names[0]


# What reads the answers of a task type not registered (plain data from elsewhere):
# the base class's ``label_of`` / ``gold_correct`` (a choice, label or verdict).
_PLAIN = TaskType()


def task_type_reading(name: str) -> TaskType:
    """The task type that says what answers of stage task type ``name`` mean
    (``label_of``, ``is_no_answer``, ``gold_correct``): the registered one, or for a
    name not registered the base class, which reads a choice, label or verdict."""
    return _REGISTRY.get(name, _PLAIN)


__all__ = [
    "FieldError",
    "QuizScore",
    "TaskType",
    "UnknownTaskTypeError",
    "score_quiz",
    "task_type_get",
    "task_type_name_of",
    "task_type_names",
    "task_type_reading",
]
