"""WhyQA question generation from a partial article.

Item data (one article per HIT)::

    {"article_id": "Q1234-enwiki", "title": "Black Death", "url"?: str,
     "sections": [{"header": "Causes", "paragraphs": [["First sentence.", "Second."], ...]}]}

Each paragraph is a list of its sentences. The worker sees the title, the
section headers and only the *first* sentence of each paragraph, and writes
``questions_per_article`` (default 5) questions that start with "Why" and end
with "?". Answer: ``{"questions": [str, ...]}``.

``next_items`` turns each question into a ``sentence_selection_answer`` item
carrying the whole article as numbered sentences (with section breaks), so the
answering stage needs nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from campaigns.tasktypes import base as tt

_WHY_RE = re.compile(r"^why\b", re.IGNORECASE)

ARTICLE_SCHEMA: dict[str, Any] = tt.object_schema(
    {
        "article_id": {"type": "string", "maxLength": 200},
        "title": {"type": "string", "minLength": 1, "maxLength": 300},
        "url": {"type": "string", "maxLength": 2000},
        "sections": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["paragraphs"],
                "properties": {
                    "header": {"type": "string", "maxLength": 300},
                    "paragraphs": {
                        "type": "array",
                        "items": {
                            "type": "array",
                            "minItems": 1,
                            "items": {"type": "string", "minLength": 1},
                        },
                    },
                },
            },
        },
    },
    required=["title", "sections"],
)


def article_sentences(article: Mapping[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """The article as one list of sentences plus the section headers' positions.

    Returns ``(sentences, section_breaks)`` where each break is
    ``{"sentence": index of the section's first sentence, "header": str}``.
    """
    sentences: list[str] = []
    breaks: list[dict[str, Any]] = []
    for section in article.get("sections", []):
        header = section.get("header", "")
        if header:
            breaks.append({"sentence": len(sentences), "header": header})
        for paragraph in section.get("paragraphs", []):
            sentences.extend(paragraph)
    return sentences, breaks


class WhyQuestionFromPartialArticle(tt.TaskType):
    questions_key = "questions_per_article"
    writes_free_text = True
    name = "why_question_from_partial_article"
    label = "Why-questions from a partial article"
    description = "Read the outline of an article and ask why-questions it may answer."
    input_schema: ClassVar[dict] = ARTICLE_SCHEMA
    config_schema: ClassVar[dict] = {
        "type": "object",
        "properties": {
            "questions_per_article": tt.count_setting(
                20, "Why-questions a worker writes about one article."
            ),
            "min_question_words": {
                "type": "integer",
                "minimum": 2,
                "maximum": 20,
                "description": "Shortest question accepted, in words.",
            },
        },
    }
    config_defaults: ClassVar[dict[str, Any]] = {
        "questions_per_article": 5,
        "min_question_words": 4,
    }
    answer_schema: ClassVar[dict] = {
        "type": "object",
        "required": ["questions"],
        "properties": {"questions": {"type": "array", "items": {"type": "string"}}},
    }
    handoff_schema: ClassVar[dict] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"target": {"const": "sentence_selection_answer"}},
    }

    def parse_form(
        self, *, form: Mapping[str, Any], items: list[dict[str, Any]], config: dict[str, Any]
    ) -> dict[str, Any]:
        n = self.effective_config(config)["questions_per_article"]
        return {"questions": [tt.form_text(form, f"questions/{i}") for i in range(n)]}

    def answer_errors(self, answer: Any, items: tt.Items, cfg: tt.Config) -> list[tt.FieldError]:
        questions = answer["questions"]
        errors = self.questions_count_errors(questions, cfg)
        for i, question in enumerate(questions):
            path = f"questions/{i}"
            problems = tt.text_errors(path, question, what="The question")
            if not problems and not _WHY_RE.match(question):
                problems.append(tt.FieldError(path, 'Start the question with "Why".'))
            if not problems and not question.endswith("?"):
                problems.append(tt.FieldError(path, 'End the question with "?".'))
            if not problems and len(question.split()) < cfg["min_question_words"]:
                problems.append(
                    tt.FieldError(path, f"Use at least {cfg['min_question_words']} words.")
                )
            errors += problems
        errors += tt.duplicate_errors(
            [(f"questions/{i}", q) for i, q in enumerate(questions)], what="question"
        )
        return errors

    def next_items(
        self, *, answer: dict[str, Any], items: list[dict[str, Any]], handoff: dict[str, Any]
    ) -> Iterable[dict[str, Any]]:
        """Each question becomes a ``sentence_selection_answer`` item with the full article."""
        source = items[0] if items else {}
        article = source.get("data", {})
        sentences, breaks = article_sentences(article)
        return tt.question_items(
            items,
            answer,
            tag="why",
            content=lambda question: question,
            data=lambda question: {
                "question": question,
                "article_id": article.get("article_id", str(source.get("external_id", ""))),
                "title": article.get("title", ""),
                "sentences": sentences,
                "section_breaks": breaks,
            },
        )

    takes_articles: ClassVar[bool] = True

    def items_from_article(
        self, *, article: Mapping[str, Any], questions: list[str]
    ) -> list[dict[str, Any]] | None:
        """The article itself: one item, whose outline the writers see."""
        return [{"external_id": str(article["article_id"]), **article}]

    def page(
        self, form: tt.FormView, items: tt.Items, cfg: tt.Config, answer: Any
    ) -> dict[str, Any]:
        article = tt.get_path(items, 0, "data", default={}) or {}
        outline = [
            {
                "header": section.get("header", ""),
                "first_sentences": [p[0] for p in section.get("paragraphs", []) if p],
            }
            for section in article.get("sections", [])
        ]
        rows = [
            {
                "number": i + 1,
                "field": form.field(f"questions/{i}", tt.get_path(answer, "questions", i)),
            }
            for i in range(cfg["questions_per_article"])
        ]
        count_error = form.error("questions")
        return {
            "title": article.get("title", ""),
            "outline": outline,
            "rows": rows,
            "count_error": count_error,
        }

    def simulate(
        self, items: tt.Items, cfg: tt.Config, profile: str, rng: tt.Rng
    ) -> tt.SimulatedForm:
        """Why-questions about the outline's headers and first sentences; sloppy ones
        sometimes forget "Why" or the "?"; spammers paste the first sentences."""
        n = cfg["questions_per_article"]
        article = tt.get_path(items, 0, "data", default={}) or {}
        title = str(article.get("title", "this")).strip() or "this"
        firsts = [
            str(p[0])
            for section in article.get("sections", [])
            for p in section.get("paragraphs", [])
            if p
        ] or [title]
        if profile == "spammer" and rng.random() < 0.7:
            texts = [rng.choice([*firsts, *tt.SIM_NOISE_WORDS]) for _ in range(n)]
            return {f"questions/{i}": [t] for i, t in enumerate(texts)}
        headers = [
            str(s.get("header", "")) for s in article.get("sections", []) if s.get("header")
        ] or ["its history"]
        verbs = ["matter so much", "change over time", "become well known", "draw criticism"]
        # One question per assignment (WhyQA's unit): each writer starts elsewhere, so
        # that ten writers of one article do not all ask the same thing.
        offset = rng.randrange(10**6) if n == 1 else 0
        questions = []
        for i in range(offset, offset + n):
            header = headers[i % len(headers)].lower()
            verb = verbs[(i // len(headers)) % len(verbs)]
            questions.append(f"Why did the {header} of {title} {verb} (point {i + 1})?")
        if profile == "good":
            questions = [
                q.replace(f" (point {i + 1})", "", 1) if i < len(headers) * 4 else q
                for i, q in enumerate(questions, start=offset)
            ]
        if profile == "spammer":
            questions = [f"Why {title} {i + 1} {rng.choice(tt.SIM_NOISE_WORDS)}?" for i in range(n)]
        if profile == "sloppy" and rng.random() < 0.35:
            i = rng.randrange(n)
            questions[i] = rng.choice(
                [questions[i].replace("Why did", "How did", 1), questions[i].rstrip("?"), "Why?"]
            )
        return {f"questions/{i}": [q] for i, q in enumerate(questions)}
