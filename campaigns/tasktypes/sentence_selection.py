"""WhyQA answering: select the 1-3 sentences of an article that answer a question.

Item data::

    {"question": "Why ...?", "sentences": ["...", ...], "title"?: str,
     "article_id"?: str, "section_breaks"?: [{"sentence": int, "header": str}]}

Sentence ids are 0-based indices into ``sentences`` (the page numbers them from 1).
Answer (one entry per item of the HIT)::

    {"items": [{"external_id": str, "sentences": [int], "no_answer": bool, "comment": str}]}

Either ``no_answer`` with no sentences, or 1..``max_sentences`` (default 3)
distinct valid ids. ``aggregate`` counts votes per sentence id and no-answer
votes (for early stopping: drop a question when 2 of 3 say no answer).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

from campaigns.tasktypes import base as tt
from campaigns.tasktypes.per_item import Entry, PerItemTask
from campaigns.tasktypes.why_question import article_sentences

NO_ANSWER = "no_answer"
ANSWERED = "answered"


def sentence_set(entry: Mapping[str, Any] | None) -> frozenset[int] | None:
    """Selected sentence ids; None for "no answer" (or no entry)."""
    if not isinstance(entry, Mapping) or entry.get("no_answer"):
        return None
    return frozenset(s for s in entry.get("sentences", []) if isinstance(s, int))


def sentence_overlap(a: Collection[int] | None, b: Collection[int] | None) -> float:
    """len(A & B) / len(A | B); no answer vs no answer = 1, no answer vs an answer = 0."""
    sa, sb = set(a or ()), set(b or ())
    if not sa or not sb:
        return 1.0 if not sa and not sb else 0.0
    return len(sa & sb) / len(sa | sb)


def gold_match_sentences(
    entry: Mapping[str, Any], gold: Any, *, threshold: float = tt.DEFAULT_SENTENCE_THRESHOLD
) -> bool:
    """Sentence-id overlap with the gold selection ≥ ``threshold`` (no answer = no answer).
    Gold: ``{"sentences": [...]}``, ``{"no_answer": true}`` or a bare list of ids."""
    if isinstance(gold, Mapping):
        gold_set = None if gold.get("no_answer") else sentence_set(gold)
    elif isinstance(gold, Sequence) and not isinstance(gold, str):
        gold_set = frozenset(s for s in gold if isinstance(s, int)) or None
    else:
        gold_set = None
    return sentence_overlap(sentence_set(entry), gold_set) >= threshold - 1e-12


class SentenceSelectionAnswer(PerItemTask):
    name = "sentence_selection_answer"
    selects_sentences = True
    label = "Answer by selecting sentences"
    description = "Select the sentences of an article that answer a question, or 'no answer'."
    input_schema: ClassVar[dict] = tt.object_schema(
        {
            "question": {"type": "string", "minLength": 1},
            "sentences": {"type": "array", "minItems": 1, "items": {"type": "string"}},
            "title": {"type": "string"},
            "article_id": {"type": "string"},
            "section_breaks": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["sentence", "header"],
                    "properties": {
                        "sentence": {"type": "integer", "minimum": 0},
                        "header": {"type": "string"},
                    },
                },
            },
        },
        required=["question", "sentences"],
    )
    config_schema: ClassVar[dict] = {
        "type": "object",
        "properties": {
            "max_sentences": tt.count_setting(
                10, "Most sentences a worker may select as the answer."
            ),
            "allow_comment": {
                "type": "boolean",
                "description": "Offer a free-text comment box.",
            },
        },
    }
    config_defaults: ClassVar[dict[str, Any]] = {"max_sentences": 3, "allow_comment": True}
    handoff_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"context": {"enum": ["title", "none"]}},
    }
    answer_schema: ClassVar[dict] = tt.per_item_answer_schema(
        {
            "sentences": {"type": "array", "items": {"type": ["integer", "string"]}},
            "no_answer": {"type": "boolean"},
            "comment": {"type": "string"},
        },
        required=["sentences", "no_answer"],
    )

    def entry_label(self, entry: Mapping[str, Any], dimension: str) -> Hashable | None:
        """``"no_answer"`` or ``"answered"``: what agreement on answerability compares."""
        return NO_ANSWER if entry.get("no_answer") else ANSWERED

    def is_no_answer(self, entry: Mapping[str, Any] | None) -> bool | None:
        return bool(entry.get("no_answer")) if isinstance(entry, Mapping) else None

    def gold_match(self, entry: Mapping[str, Any], gold: Any, threshold: float, dim: str) -> bool:
        """Sentence-id overlap with the gold selection ≥ the rule's threshold."""
        return gold_match_sentences(entry, gold, threshold=threshold)

    def entry_from_form(self, form: Mapping[str, Any], at: str, cfg: tt.Config) -> Entry:
        return {
            "sentences": [tt.parse_int_or_text(v) for v in tt.form_list(form, f"{at}/sentences")],
            "no_answer": tt.form_bool(form, f"{at}/no_answer"),
            "comment": tt.form_text(form, f"{at}/comment"),
        }

    def entry_errors(
        self, entry: Entry, data: Entry, at: str, cfg: tt.Config
    ) -> list[tt.FieldError]:
        errors = []
        limit, path = cfg["max_sentences"], f"{at}/sentences"
        chosen = entry["sentences"]
        count = len(data.get("sentences", []))
        if entry["no_answer"] and chosen:
            errors.append(
                tt.FieldError(path, 'Either select sentences or tick "no answer", not both.')
            )
        elif not entry["no_answer"] and not chosen:
            errors.append(tt.FieldError(path, 'Select at least one sentence or tick "no answer".'))
        elif len(chosen) > limit:
            errors.append(tt.FieldError(path, f"Select at most {limit} sentences."))
        elif any(not isinstance(s, int) or not 0 <= s < count for s in chosen):
            errors.append(tt.FieldError(path, "Select sentences from the list."))
        elif len(set(chosen)) != len(chosen):
            errors.append(tt.FieldError(path, "Each sentence can be selected once."))
        comment = entry.get("comment", "")
        if comment and not cfg["allow_comment"]:
            errors.append(tt.FieldError(f"{at}/comment", "Comments are not collected here."))
        else:
            errors += tt.text_errors(f"{at}/comment", comment, required=False, what="The comment")
        return errors

    def next_items(
        self, *, answer: dict[str, Any], items: list[dict[str, Any]], handoff: dict[str, Any]
    ) -> Iterable[dict[str, Any]]:
        """Each question that the answer found answerable becomes a ``rephrase`` item
        ``{"question", "context"?}`` (WhyQA's rephrasing round), its id
        ``<item id>/r-<digest of the question>``: every annotator who answered produces
        the same item, so it is made once; a question answered "no answer" is not
        handed on by that answer. ``{"context": "title"}`` (default) gives the article
        title as context, ``"none"`` nothing."""
        by_id = {str(item.get("external_id", "")): item for item in items}
        out = []
        for entry in answer.get("items", []):
            if not isinstance(entry, Mapping) or entry.get("no_answer"):
                continue
            source = by_id.get(str(entry.get("external_id", "")))
            if source is None or not entry.get("sentences"):
                continue
            data = source.get("data", {})
            question = str(data.get("question", ""))
            produced: dict[str, Any] = {"question": question}
            if handoff.get("context", "title") == "title" and data.get("title"):
                produced["context"] = str(data["title"])
            out.append(
                {
                    "external_id": tt.derived_external_id(
                        str(source.get("external_id", "")), "r", question
                    ),
                    "data": produced,
                }
            )
        return out

    def aggregate(self, *, answers: list[dict[str, Any]], item: dict[str, Any]) -> dict[str, Any]:
        """``{"answers": n, "sentence_votes": {"<id>": votes}, "no_answer_votes": k}``.

        Keys of ``sentence_votes`` are strings (JSON objects), most-voted first.
        """
        votes: Counter[int] = Counter()
        no_answer = 0
        n = 0
        for answer in answers:
            entry = tt.answer_for_item(answer, item)
            if entry is None:
                continue
            n += 1
            if entry.get("no_answer"):
                no_answer += 1
            votes.update({s for s in entry.get("sentences", []) if isinstance(s, int)})
        ordered = sorted(votes.items(), key=lambda kv: (-kv[1], kv[0]))
        return {
            "answers": n,
            "sentence_votes": {str(k): v for k, v in ordered},
            "no_answer_votes": no_answer,
        }

    takes_articles: ClassVar[bool] = True

    def items_from_article(
        self, *, article: Mapping[str, Any], questions: list[str]
    ) -> list[dict[str, Any]] | None:
        """One answering item per question, the article as numbered sentences."""
        sentences, breaks = article_sentences(article)
        article_id = str(article["article_id"])
        return [
            {
                "external_id": f"{article_id}/q{n}",
                "question": question,
                "article_id": article_id,
                "title": article.get("title", ""),
                "sentences": sentences,
                "section_breaks": breaks,
            }
            for n, question in enumerate(questions, start=1)
        ]

    def page(
        self, form: tt.FormView, items: tt.Items, cfg: tt.Config, answer: Any
    ) -> dict[str, Any]:
        blocks = []
        for i, item in enumerate(items):
            data = item.get("data", {})
            entry = tt.get_path(answer, "items", i, default={}) or {}
            chosen = {str(s) for s in entry.get("sentences", [])}
            headers = {b["sentence"]: b["header"] for b in data.get("section_breaks", [])}
            sentences_field = form.field(f"items/{i}/sentences")
            sentences = [
                {
                    "index": j,
                    "number": j + 1,
                    "text": text,
                    "header": headers.get(j, ""),
                    "checked": str(j) in chosen,
                    "id": f"{sentences_field.id}-{j}",
                }
                for j, text in enumerate(data.get("sentences", []))
            ]
            blocks.append(
                {
                    "index": i,
                    "question": data.get("question", ""),
                    "title": data.get("title", ""),
                    "sentences": sentences,
                    "sentences_field": sentences_field,
                    "no_answer": form.field(f"items/{i}/no_answer", bool(entry.get("no_answer"))),
                    "comment": form.field(f"items/{i}/comment", entry.get("comment")),
                }
            )
        return {
            "items": blocks,
            "max_sentences": cfg["max_sentences"],
            "allow_comment": cfg["allow_comment"],
        }

    def simulate(
        self, items: tt.Items, cfg: tt.Config, profile: str, rng: tt.Rng
    ) -> tt.SimulatedForm:
        """Good workers tick the 1..3 sentences sharing most words with the question
        (or "no answer" when none does); sloppy ones tick at random, sometimes too
        many or none; spammers tick "no answer", everything, or both."""
        limit = cfg["max_sentences"]
        form: dict[str, list[str]] = {}
        for i, item in enumerate(items):
            data = item.get("data", {})
            sentences = [str(t) for t in data.get("sentences", [])]
            count = len(sentences)
            chosen: list[int] = []
            no_answer = False
            if profile == "good":
                wanted = tt.content_tokens(str(data.get("question", "")))
                scored = sorted(
                    ((len(wanted & tt.content_tokens(t)), j) for j, t in enumerate(sentences)),
                    key=lambda sj: (-sj[0], sj[1]),
                )
                chosen = [j for score, j in scored[: rng.randint(1, limit)] if score > 0]
                no_answer = not chosen
            elif profile == "sloppy":
                roll = rng.random()
                if roll < 0.15:
                    chosen = []  # forgot to tick anything
                elif roll < 0.25:
                    no_answer = True
                else:
                    k = rng.randint(1, limit + 1 if roll < 0.4 else limit)
                    chosen = rng.sample(range(count), min(k, count))
            else:
                roll = rng.random()
                if roll < 0.4:
                    no_answer = True
                elif roll < 0.7:
                    chosen = list(range(count))
                else:
                    chosen, no_answer = [0], True
            form[f"items/{i}/sentences"] = [str(j) for j in sorted(chosen)]
            if no_answer:
                form[f"items/{i}/no_answer"] = ["1"]
            form[f"items/{i}/comment"] = [""]
        return form
