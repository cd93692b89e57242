"""GraphQuestions-style paraphrasing of a canonical (machine-generated) question.

Item data::

    {"canonical_question": "what is the number of films directed by steven spielberg?",
     "characteristics": {"edges": 1, "function": "count", "commonness": -12.3,
                         "answer_cardinality": 1},
     "entities": [{"label": "Steven Spielberg", "forms": ["Spielberg", "Steven Spielberg"]}],
     "answer"?: [str]}

``function`` is one of none/count/superlative/comparative. Answer::

    {"items": [{"external_id": str, "paraphrases": [str, ...]}]}

with ``paraphrases_per_item`` (default 1) paraphrases per item. Each may be a
question or a command (Su et al. 2016, Table 2), not a trivial variant of the
canonical question or of another paraphrase (``base.trivial_variant_reason``,
threshold ``max_similarity``, default 0.8), and - when ``require_entity_mention``
(default on) - mention every entity through one of its lexical forms (or its label).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from campaigns.tasktypes import base as tt
from campaigns.tasktypes.per_item import Entry, PerItemTask

FUNCTIONS = ["none", "count", "superlative", "comparative"]
# Su et al. (2016) §4: the nine functions (and none), kept per item as function_kind.
FUNCTION_KINDS = ["none", "count", "max", "min", "argmax", "argmin", ">", ">=", "<", "<="]


# Interchangeable question words: "which city" vs "what city" is the paper's own
# example of a trivial paraphrase (§7.1).
_WH_SAME = {"which": "what", "what's": "what", "whats": "what"}


def _content_sequence(text: str) -> list[str]:
    """The content words of ``text`` in order (``normalise_text``, stop words out,
    "which" read as "what")."""
    words = (_WH_SAME.get(t, t) for t in tt.normalise_text(text).split())
    return [t for t in words if t not in tt.STOP_WORDS]


def _word_edit_distance(a: list[str], b: list[str]) -> int:
    """Levenshtein distance over words (insert, delete, substitute one word)."""
    previous = list(range(len(b) + 1))
    for i, word in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (word != other))
            )
        previous = current
    return previous[-1]


def _contains_run(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def canonical_copy_reason(candidate: str, canonical: str, *, max_edit_ratio: float) -> str | None:
    """Why ``candidate`` is a trivial paraphrase of the canonical question, or None.

    GraphQuestions §7.1 removed trivial paraphrases ("which city" vs "what city") to
    keep paraphrasing diverse. Compared over the canonical form's content words, in
    order: trivial when they all appear in the candidate as one run (the canonical
    question with words put before, after or around it: "Could you tell me ...?"),
    or when the word-level edit distance between the two content-word sequences is
    at most ``max_edit_ratio`` of the canonical's length (one word swapped, a stop
    word changed). A real rewording changes words and their order.
    """
    canon, words = _content_sequence(canonical), _content_sequence(candidate)
    if len(canon) < 2:
        return None
    if _contains_run(words, canon):
        return (
            "It is the canonical question with words added around it; rewrite the "
            "question itself in your own words."
        )
    if _word_edit_distance(words, canon) <= max_edit_ratio * len(canon):
        return (
            "It keeps the canonical question's words in the same order with one small "
            "change; rewrite it in your own words."
        )
    return None


def mentions(text: str, forms: list[str]) -> bool:
    """Whether ``text`` contains one of ``forms`` as whole words (case/punctuation-insensitive)."""
    haystack = f" {tt.normalise_text(text)} "
    return any(
        f" {tt.normalise_text(form)} " in haystack for form in forms if tt.normalise_text(form)
    )


_SIM_FRAMES = ("Tell me", "I would like to know", "Do you know", "Please name", "Find out")
_SIM_FILLERS = ("exactly", "recorded", "known", "listed", "overall", "according", "sources",
                "actually", "officially", "documented")  # fmt: skip


def _simulated_paraphrase(
    canonical: str,
    labels: list[str],
    *,
    rng: random.Random,
    cfg: Mapping[str, Any],
    avoid: list[str],
) -> str:
    """A rewording that keeps every entity label: a new frame, the canonical's other
    content words in reverse order, and filler words, retried until it is no
    trivial variant of the canonical question or of ``avoid``."""
    label_words = {w for label in labels for w in tt.normalise_text(label).split()}
    rest = [w for w in _content_sequence(canonical) if w not in label_words and w != "what"]
    candidate = canonical
    for _ in range(20):
        fillers = rng.sample(_SIM_FILLERS, k=min(len(_SIM_FILLERS), 2 + len(rest) // 2))
        words = [*reversed(rest), *fillers]
        rng.shuffle(fillers)
        candidate = f"{rng.choice(_SIM_FRAMES)}, for {' and '.join(labels) or 'this'}: " + (
            " ".join(words) + "?"
        )
        others = [canonical, *avoid]
        if all(
            tt.trivial_variant_reason(candidate, o, max_similarity=cfg["max_similarity"]) is None
            and canonical_copy_reason(candidate, o, max_edit_ratio=cfg["max_edit_ratio"]) is None
            for o in others
        ):
            break
    return candidate


class ParaphraseCanonical(PerItemTask):
    writes_free_text = True
    name = "paraphrase_canonical"
    dataset_part = "paraphrases"
    takes_generated_questions = True
    label = "Paraphrase a canonical question"
    description = "Rewrite a machine-generated question as a person would ask it."
    input_schema: ClassVar[dict] = tt.object_schema(
        {
            "canonical_question": {"type": "string", "minLength": 1, "maxLength": 2000},
            "characteristics": {
                "type": "object",
                "properties": {
                    "edges": {"type": "integer", "minimum": 0},
                    "function": {"enum": FUNCTIONS},
                    "function_kind": {"enum": FUNCTION_KINDS},
                    "commonness": {"type": "number"},
                    "answer_cardinality": {"type": "integer", "minimum": 0},
                },
            },
            "entities": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["label"],
                    "properties": {
                        "label": {"type": "string", "minLength": 1},
                        "id": {"type": "string"},
                        "forms": {"type": "array", "items": {"type": "string"}},
                    },
                },
            },
            "answer": {"type": "array", "items": {"type": "string"}},
        },
        required=["canonical_question", "characteristics", "entities"],
    )
    config_schema: ClassVar[dict] = {
        "type": "object",
        "properties": {
            "paraphrases_per_item": tt.count_setting(
                5, "Paraphrases a worker writes for each canonical question."
            ),
            "max_similarity": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 1,
                "description": "Highest word overlap with the original a paraphrase may have.",
            },
            "require_entity_mention": {
                "type": "boolean",
                "description": "The paraphrase must still name the question's entity.",
            },
            "max_edit_ratio": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "description": "Highest share of the canonical form's content words a "
                "paraphrase may keep in their order (trivial reorderings are refused).",
            },
        },
    }
    config_defaults: ClassVar[dict[str, Any]] = {
        "paraphrases_per_item": 1,
        "max_similarity": 0.8,
        "require_entity_mention": True,
        "max_edit_ratio": 0.2,
    }
    answer_schema: ClassVar[dict] = tt.per_item_answer_schema(
        {"paraphrases": {"type": "array", "items": {"type": "string"}}}
    )

    def entry_from_form(self, form: Mapping[str, Any], at: str, cfg: tt.Config) -> Entry:
        n = cfg["paraphrases_per_item"]
        return {"paraphrases": [tt.form_text(form, f"{at}/paraphrases/{j}") for j in range(n)]}

    def entry_errors(
        self, entry: Entry, data: Entry, at: str, cfg: tt.Config
    ) -> list[tt.FieldError]:
        paraphrases = entry["paraphrases"]
        errors = tt.count_errors(
            f"{at}/paraphrases",
            paraphrases,
            wanted=cfg["paraphrases_per_item"],
            what="paraphrase(s)",
        )
        for j, text in enumerate(paraphrases):
            errors += self._paraphrase_errors(
                f"{at}/paraphrases/{j}", text, data, paraphrases[:j], cfg
            )
        return errors

    def _paraphrase_errors(
        self, path: str, text: str, data: dict[str, Any], earlier: list[str], cfg: dict[str, Any]
    ) -> list[tt.FieldError]:
        problems = tt.text_errors(path, text, what="The paraphrase")
        if problems:
            return problems
        # No "?" rule: a paraphrase may be a command, as GraphQuestions' own (Su et al.
        # 2016, Table 2: "Find terrorist organizations involved in September 11 attacks.").
        reason = tt.trivial_variant_reason(
            text, data["canonical_question"], max_similarity=cfg["max_similarity"]
        ) or canonical_copy_reason(
            text, data["canonical_question"], max_edit_ratio=cfg["max_edit_ratio"]
        )
        if reason:
            return [tt.FieldError(path, reason)]
        for other in earlier:
            if tt.trivial_variant_reason(
                text, other, max_similarity=cfg["max_similarity"]
            ) or canonical_copy_reason(text, other, max_edit_ratio=cfg["max_edit_ratio"]):
                return [
                    tt.FieldError(path, "This paraphrase is almost the same as an earlier one.")
                ]
        if cfg["require_entity_mention"]:
            missing = [
                e["label"]
                for e in data.get("entities", [])
                if not mentions(text, [e["label"], *e.get("forms", [])])
            ]
            if missing:
                return [
                    tt.FieldError(
                        path, "Mention " + ", ".join(missing) + " (or a listed name for it)."
                    )
                ]
        return []

    def aggregate(self, *, answers: list[dict[str, Any]], item: dict[str, Any]) -> dict[str, Any]:
        """``{"paraphrases": [str, ...]}`` without normalised duplicates."""
        seen: set[str] = set()
        out = []
        for answer in answers:
            entry = tt.answer_for_item(answer, item) or {}
            for text in entry.get("paraphrases", []):
                key = tt.normalise_text(text)
                if key and key not in seen:
                    seen.add(key)
                    out.append(text)
        return {"paraphrases": out}

    def next_items(
        self, *, answer: dict[str, Any], items: list[dict[str, Any]], handoff: dict[str, Any]
    ) -> Iterable[dict[str, Any]]:
        """Each paraphrase as ``{"question", "canonical_question", "characteristics"}``."""
        out = []
        for i, entry in enumerate(answer.get("items", [])[: len(items)]):
            data = items[i]["data"]
            for j, text in enumerate(entry.get("paraphrases", [])):
                out.append(
                    {
                        "external_id": tt.derived_external_id(
                            str(items[i].get("external_id", "")), f"p{j + 1}", text
                        ),
                        "data": {
                            "question": text,
                            "canonical_question": data["canonical_question"],
                            "characteristics": data.get("characteristics", {}),
                        },
                    }
                )
        return out

    def row(self, form: tt.FormView, data: Entry, at: str, entry: Entry, cfg: tt.Config) -> Entry:
        return {
            "canonical_question": data.get("canonical_question", ""),
            "characteristics": data.get("characteristics", {}),
            "entities": data.get("entities", []),
            "count_error": form.error(f"{at}/paraphrases"),
            "fields": [
                form.field(f"{at}/paraphrases/{j}", tt.get_path(entry, "paraphrases", j))
                for j in range(cfg["paraphrases_per_item"])
            ],
        }

    def simulate(
        self, items: tt.Items, cfg: tt.Config, profile: str, rng: tt.Rng
    ) -> tt.SimulatedForm:
        """Good workers reword the canonical question (new frame, words reordered and
        added), keeping every entity's label; sloppy ones sometimes drop the "?" or
        shout the canonical question; spammers paste it, with or without a prefix, or
        junk."""
        n = cfg["paraphrases_per_item"]
        form: dict[str, list[str]] = {}
        # A sloppy worker slips on at most one paraphrase of the HIT.
        careless = rng.randrange(len(items) * n) if items and rng.random() < 0.3 else -1
        for i, item in enumerate(items):
            data = item.get("data", {})
            canonical = str(data.get("canonical_question", ""))
            labels = [str(e.get("label", "")) for e in data.get("entities", []) if e.get("label")]
            done: list[str] = []
            for j in range(n):
                text = _simulated_paraphrase(canonical, labels, rng=rng, cfg=cfg, avoid=done)
                if profile == "sloppy" and i * n + j == careless:
                    text = rng.choice([text.rstrip("?"), canonical.upper()])
                elif profile == "spammer":
                    text = rng.choice(
                        [canonical, f"{rng.choice(tt.SIM_NOISE_WORDS)}?", f"So, {canonical}", text]
                    )
                done.append(text)
                form[f"items/{i}/paraphrases/{j}"] = [text]
        return form
