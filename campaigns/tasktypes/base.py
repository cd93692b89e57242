"""The task-type interface. One module per task type; the registry lists them.

A task type owns: the schema of its items' data, the schema of its stage
config, validation of a worker's answer, its worker template, the aggregation
of several answers, and the mapping of accepted output to the next stage's items.

Conventions shared by every task type (the worker page relies on them):

* Form field names are the answer paths they fill, e.g. ``questions/2/answer``;
  a ``FieldError.path`` for that field is the same string, so the page can put
  the message next to the field.
* ``parse_form`` never drops what the worker typed: invalid text stays in the
  answer (truncated only at ``HARD_TEXT_CAP``) and ``validate_answer`` reports it.
* Task types whose HIT holds several items (``items_per_hit``) answer with
  ``{"items": [{"external_id": <item's external_id>, ...per-item answer...}]}``,
  one entry per item in the HIT's order; ``aggregate`` accepts either those
  full answers or the per-item entries.
* ``next_items`` returns dicts ``{"external_id": str, "data": dict}``. The id is
  derived from the source item's external id, the position of the output in
  the answer and a digest of the produced content (``derived_external_id``):
  stable when the mapping is re-run, unique within one answer, and equal for
  two answers only when they produced the very same content at the same
  position from the same item (the caller treats that as a duplicate). ``data``
  is validated by the next stage's task type (``validate_item``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import re
import string
import unicodedata
from collections.abc import Callable, Hashable, Iterable, Mapping, Sized
from dataclasses import dataclass, field
from typing import Any, ClassVar

import jsonschema
import jsonschema_rs
from jsonschema.exceptions import best_match

from campaigns.tasktypes.answer_match import model_answer_matches, stated_answer

# Longest text a worker may submit in one field; validate_answer reports more.
MAX_TEXT_LENGTH = 2000
# parse_form keeps at most this much of one field, whatever was posted.
HARD_TEXT_CAP = 20000
# Longest Item.external_id the database accepts.
MAX_EXTERNAL_ID_LENGTH = 200
# Keys of an answer entry holding the worker's free text (strings, lists of strings,
# or lists of objects with such keys), as the review rules' duplicate, ROUGE and paste
# checks read it by default. Span texts of entity links are copies, not writing.
TEXT_FIELDS = ("question", "questions", "rephrasing", "paraphrases", "justification")
# Keys of an answer entry or a gold value holding a categorical answer.
LABEL_KEYS = ("choice", "label", "verdict")
# Sentence-id overlap with the gold selection counted as right, unless a rule says.
DEFAULT_SENTENCE_THRESHOLD = 0.5


@dataclass(frozen=True)
class FieldError:
    """A validation problem, addressed by a JSON-pointer-like path."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


@functools.lru_cache(maxsize=256)
def _compiled_text(schema_text: str) -> tuple[Any, jsonschema.Draft202012Validator]:
    schema = json.loads(schema_text)
    return jsonschema_rs.Draft202012Validator(schema), jsonschema.Draft202012Validator(schema)


# Compiled validators of the schemas task types declare (class attributes, so the same
# object each call): found by identity without serialising the schema every row.
_BY_IDENTITY: dict[int, tuple[dict[str, Any], tuple[Any, jsonschema.Draft202012Validator]]] = {}


def _compiled(schema: dict[str, Any]) -> tuple[Any, jsonschema.Draft202012Validator]:
    hit = _BY_IDENTITY.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    compiled = _compiled_text(json.dumps(schema, sort_keys=True))
    if len(_BY_IDENTITY) < 1024:
        _BY_IDENTITY[id(schema)] = (schema, compiled)
    return compiled


def schema_errors(schema: dict[str, Any], instance: Any) -> list[FieldError]:
    """All jsonschema violations of ``instance``, most relevant first, readable.

    A compiled Rust validator answers the common case (valid) in microseconds, which
    keeps a 200,000-row upload fast; Python's ``jsonschema`` words the errors.
    """
    fast, validator = _compiled(schema)
    try:
        if fast.is_valid(instance):
            return []
    except (ValueError, TypeError):  # not JSON data: let the Python validator say why
        pass
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.path))
    out = []
    for error in errors:
        leaf = best_match([error]) or error
        path = "/".join(str(p) for p in leaf.absolute_path)
        out.append(FieldError(path=path, message=leaf.message))
    return out


# Settings any stage may carry whatever its task type, read by the rooms above it: the
# protocol arm and graded round (workforce), the expected minutes (platform rules, wage),
# whether graders may see their own work, the outputs per assignment and the recipe's
# converted prices (payments), the qualification a quiz grants, the platforms' keywords
# and tasks per participant.
STAGE_WIDE_CONFIG_KEYS = frozenset(
    {
        "arm",
        "round",
        "estimated_minutes",
        "exclude_own_work",
        "expected_outputs_per_assignment",
        "priced_in",
        "grants",
        "graders",
        "keywords",
        "max_tasks_per_participant",
        # Prolific: a reward raised to its minimum (recipes) and where an estimate came from.
        "reward_raised",
        "estimated_from",
        # Nangia et al.'s validation: hand-offs held for the requester, shuffled arms, and
        # the 10-way subset (work.publishing, validation.ten_way_subset).
        "hold_handoff",
        "shuffle",
        "ten_way",
        # Answers a model may have written, flagged (issue 38): {"endpoint": id,
        # "threshold": 0..1}; checked by ``llm_flag_config_errors``, used by
        # campaigns.assist.flags.
        "llm_flag",
        # Model in the loop (issue 38): the writing stage puts each question to a model
        # (``adversarial_config``), on task types that write adversarially.
        "adversarial",
    }
)

LLM_FLAG_KEY = "llm_flag"


def llm_flag_config_errors(value: Any, *, writes_free_text: bool) -> list[FieldError]:
    """Problems with a stage's ``llm_flag`` setting: ``{"endpoint": <model endpoint id>,
    "threshold": <0..1, optional>}``, only on task types whose answers hold free text."""
    if not writes_free_text:
        return [FieldError(LLM_FLAG_KEY, "this task type's answers hold no free text to flag")]
    if not isinstance(value, Mapping):
        return [FieldError(LLM_FLAG_KEY, "must be an object {endpoint, threshold}")]
    errors = []
    unknown = sorted(set(value) - {"endpoint", "threshold"})
    if unknown:
        errors.append(FieldError(LLM_FLAG_KEY, f"unknown keys {', '.join(map(str, unknown))}"))
    endpoint = value.get("endpoint")
    if isinstance(endpoint, bool) or not isinstance(endpoint, int) or endpoint < 1:
        errors.append(FieldError(f"{LLM_FLAG_KEY}/endpoint", "must be a model endpoint id"))
    threshold = value.get("threshold", 0.6)
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not 0 < threshold <= 1
    ):
        errors.append(FieldError(f"{LLM_FLAG_KEY}/threshold", "must be a number in (0, 1]"))
    return errors


# ``config["adversarial"]``: the model endpoint asked, the tries per item, and whether
# the app judges the model's answer where the task type can (``auto``) or the worker
# always does (``worker``).
ADVERSARIAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["endpoint"],
    "properties": {
        "endpoint": {"type": "integer", "minimum": 1},
        "max_tries": {"type": "integer", "minimum": 1, "maximum": 20},
        "judge": {"enum": ["auto", "worker"]},
    },
}
ADVERSARIAL_DEFAULTS: dict[str, Any] = {"max_tries": 3, "judge": "auto"}


def adversarial_config(config: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The stage's ``config["adversarial"]`` with its defaults; None when it is off."""
    raw = (config or {}).get("adversarial")
    if not isinstance(raw, Mapping) or not raw:
        return None
    return {**ADVERSARIAL_DEFAULTS, **raw}


def unknown_config_keys(schema: dict[str, Any], config: Any) -> list[FieldError]:
    """The top-level keys of ``config`` that ``schema`` does not list, one error each
    naming the key and the known ones. Schemas that say themselves what other keys may
    be (``additionalProperties``) or list none are left to ``schema_errors``."""
    known = schema.get("properties")
    if not isinstance(config, dict) or not known or "additionalProperties" in schema:
        return []
    listed = ", ".join(sorted(known))
    return [
        FieldError(path=str(key), message=f"unknown setting {str(key)[:60]!r} (known: {listed})")
        for key in config
        if key not in known and key not in STAGE_WIDE_CONFIG_KEYS
    ]


# --- Reading forms ---------------------------------------------------------------


def form_text(form: Mapping[str, Any], name: str) -> str:
    """The text posted under ``name``: newlines normalised, outer blanks removed, capped."""
    value = form.get(name)
    if value is None:
        return ""
    text = str(value).replace("\r\n", "\n").replace("\r", "\n").strip()
    return text[:HARD_TEXT_CAP]


def form_list(form: Mapping[str, Any], name: str) -> list[str]:
    """All values posted under ``name`` (checkboxes, multi-selects), capped like text."""
    getlist = getattr(form, "getlist", None)
    if getlist is not None:
        values = list(getlist(name))
    else:
        raw = form.get(name)
        values = [] if raw is None else list(raw) if isinstance(raw, list | tuple) else [raw]
    return [str(v).strip()[:HARD_TEXT_CAP] for v in values if str(v).strip()]


def form_bool(form: Mapping[str, Any], name: str) -> bool:
    """A checkbox: ticked when posted with any of the usual truthy values."""
    return str(form.get(name) or "").strip().lower() in {"1", "on", "true", "yes"}


def form_indices(form: Mapping[str, Any], prefix: str) -> list[int]:
    """The row numbers ``j`` for which some field ``<prefix>/<j>/...`` was posted."""
    pattern = re.compile(re.escape(prefix) + r"/(\d{1,4})(?:/|$)")
    found = {int(m.group(1)) for key in form if (m := pattern.match(str(key)))}
    return sorted(found)


def parse_int_or_text(text: str) -> int | str | None:
    """An integer when ``text`` is one, else the text itself (kept for the error message)."""
    if text == "":
        return None
    try:
        return int(text)
    except ValueError:
        return text


def parse_number_or_text(text: str) -> int | float | str | None:
    """A number from what a worker typed ("1,234", "3.5", a minus sign), else the text itself."""
    if text == "":
        return None
    cleaned = text.replace(",", "").replace("\u2212", "-").replace(" ", "")
    try:
        return int(cleaned)
    except ValueError:
        pass
    try:
        number = float(cleaned)
    except ValueError:
        return text
    if number != number or number in (float("inf"), float("-inf")):
        return text
    return number


# --- Checking text ---------------------------------------------------------------


def text_errors(
    path: str,
    text: Any,
    *,
    required: bool = True,
    max_length: int = MAX_TEXT_LENGTH,
    what: str = "This field",
) -> list[FieldError]:
    """Missing or overlong text at ``path`` (empty list when fine)."""
    if not isinstance(text, str):
        return [FieldError(path, f"{what} must be text.")]
    if required and not text.strip():
        return [FieldError(path, f"{what} is required.")]
    if len(text) > max_length:
        return [
            FieldError(path, f"{what} is too long ({len(text)} characters; at most {max_length}).")
        ]
    return []


_PUNCTUATION = str.maketrans(
    dict.fromkeys(
        string.punctuation + "\u00bf\u00a1\u201c\u201d\u2018\u2019\u00ab\u00bb\u2013\u2014\u2026",
        " ",
    )
)

# Function words that do not change what a question asks. Question words (why,
# how, which, ...) and negations are deliberately *not* here: changing them
# changes the question.
STOP_WORDS = frozenset(
    {
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "about",
        "as",
        "into",
        "onto",
        "over",
        "under",
        "than",
        "then",
        "and",
        "or",
        "but",
        "so",
        "if",
        "that",
        "this",
        "these",
        "those",
        "there",
        "here",
        "it",
        "its",
        "it's",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "do",
        "does",
        "did",
        "done",
        "has",
        "have",
        "had",
        "having",
        "will",
        "would",
        "shall",
        "should",
        "can",
        "could",
        "may",
        "might",
        "must",
        "i",
        "you",
        "he",
        "she",
        "we",
        "they",
        "me",
        "him",
        "her",
        "us",
        "them",
        "my",
        "your",
        "his",
        "our",
        "their",
        "s",
        "some",
        "any",
        "just",
        "very",
        "really",
        "also",
        "ever",
        "even",
        "one",
        "ones",
        "such",
    }
)


def normalise_text(text: str) -> str:
    """Case-, accent-width-, punctuation- and whitespace-insensitive form of ``text``."""
    folded = unicodedata.normalize("NFKC", text).casefold().translate(_PUNCTUATION)
    return " ".join(folded.split())


def content_tokens(text: str) -> set[str]:
    """The set of non-stop-word tokens of ``text`` (after ``normalise_text``)."""
    return {t for t in normalise_text(text).split() if t not in STOP_WORDS}


def token_set_similarity(a: str, b: str) -> float:
    """Jaccard similarity of the content-token sets of ``a`` and ``b`` (0..1).

    Word order and stop words are ignored, so "Why did Rome fall?" and "Rome,
    why did it fall?" score 1.0. When one side has no content words, all tokens
    are compared instead.
    """
    ta, tb = content_tokens(a), content_tokens(b)
    if not ta or not tb:
        ta, tb = set(normalise_text(a).split()), set(normalise_text(b).split())
    if not ta and not tb:
        return 1.0
    return len(ta & tb) / len(ta | tb)


def trivial_variant_reason(candidate: str, original: str, *, max_similarity: float) -> str | None:
    """Why ``candidate`` is only a trivial variant of ``original``, or None if it is not.

    Trivial: equal after ``normalise_text`` (case, punctuation, whitespace), or a
    content-token-set similarity (``token_set_similarity``) at or above
    ``max_similarity`` - which catches stop-word and word-order changes.
    """
    if normalise_text(candidate) == normalise_text(original):
        return "It only differs from the original in case, punctuation or spacing."
    similarity = token_set_similarity(candidate, original)
    if similarity >= max_similarity:
        return (
            "It uses almost the same words as the original (only small words or the word "
            "order changed); please rephrase it in your own words."
        )
    return None


def count_errors(path: str, texts: Sized, *, wanted: int, what: str) -> list[FieldError]:
    """ "Write exactly ``wanted`` ``what``." at ``path`` when ``texts`` has another length."""
    if len(texts) == wanted:
        return []
    return [FieldError(path, f"Write exactly {wanted} {what}.")]


def duplicate_errors(texts: list[tuple[str, str]], *, what: str) -> list[FieldError]:
    """Errors for each (path, text) whose normalised text already appeared earlier."""
    seen: dict[str, str] = {}
    errors = []
    for path, text in texts:
        key = normalise_text(text)
        if not key:
            continue
        if key in seen:
            errors.append(FieldError(path, f"This {what} repeats an earlier one."))
        else:
            seen[key] = path
    return errors


# --- Items, answers and hand-off ---------------------------------------------------


# ``json.dumps(content, sort_keys=True, ensure_ascii=False)`` without building an encoder
# per call (an export derives an id per row, several times).
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False)


def derived_external_id(source: str, tag: str, content: Any) -> str:
    """External id of an item produced from item ``source`` at position ``tag``.

    ``<source>/<tag>-<10 hex digits of the content's SHA-1>``; a long source is
    shortened to a prefix plus its own digest so the id fits the database column.
    """
    return derived_external_id_of_json(source, tag, _CANONICAL_JSON.encode(content))


def derived_external_id_of_json(source: str, tag: str, canonical: str) -> str:
    """``derived_external_id`` of the content whose canonical JSON text (sorted keys,
    no ASCII escaping, default separators) is ``canonical``: for a caller that writes
    that text faster than ``json`` does for its own values."""
    digest = hashlib.sha1(canonical.encode(), usedforsecurity=False).hexdigest()[:10]
    suffix = f"/{tag}-{digest}"
    if len(source) + len(suffix) > MAX_EXTERNAL_ID_LENGTH:
        source_digest = hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()[:10]
        keep = MAX_EXTERNAL_ID_LENGTH - len(suffix) - len(source_digest) - 1
        source = f"{source[:keep]}~{source_digest}"
    return source + suffix


def question_items(
    items: list[dict[str, Any]],
    answer: Mapping[str, Any],
    *,
    tag: str,
    content: Callable[[Any], Any],
    data: Callable[[Any], dict[str, Any]],
) -> list[dict[str, Any]]:
    """One next-stage item per entry of ``answer["questions"]`` of the first of ``items``
    (none without it): ``data(question)`` as its data, its external id derived from the
    source's at ``<tag><n>`` (n from 1) with ``content(question)``."""
    if not items:
        return []
    source_id = str(items[0].get("external_id", ""))
    return [
        {
            "external_id": derived_external_id(source_id, f"{tag}{i + 1}", content(question)),
            "data": data(question),
        }
        for i, question in enumerate(answer.get("questions", []))
    ]


def item_entries(answer: Any) -> list[dict[str, Any]]:
    """The per-item entries of a multi-item answer (``answer["items"]``), else []."""
    if isinstance(answer, Mapping) and isinstance(answer.get("items"), list):
        return [e for e in answer["items"] if isinstance(e, dict)]
    return []


def answer_for_item(answer: Any, item: Mapping[str, Any]) -> dict[str, Any] | None:
    """One item's entry in ``answer``: a full multi-item answer or already an entry."""
    if not isinstance(answer, Mapping):
        return None
    if "items" not in answer:
        return dict(answer)
    for entry in item_entries(answer):
        if entry.get("external_id") == item.get("external_id"):
            return entry
    return None


def item_entry_errors(answer: Any, items: list[dict[str, Any]]) -> list[FieldError]:
    """Structure problems of a multi-item answer: one entry per item, in order."""
    entries = answer.get("items") if isinstance(answer, Mapping) else None
    if not isinstance(entries, list):
        return [FieldError("items", "The answer must hold one entry per item.")]
    if len(entries) != len(items):
        return [
            FieldError("items", f"Expected answers for {len(items)} item(s), got {len(entries)}.")
        ]
    errors = []
    for i, (entry, item) in enumerate(zip(entries, items, strict=True)):
        if not isinstance(entry, Mapping):
            errors.append(FieldError(f"items/{i}", "Each entry must be an object."))
        elif entry.get("external_id") != item.get("external_id"):
            errors.append(
                FieldError(f"items/{i}/external_id", "This answer belongs to another item.")
            )
    return errors


# --- Rendering -----------------------------------------------------------------------


@dataclass
class Field:
    """One form control as a template sees it: name (= answer path), id, value, error."""

    name: str
    value: Any = ""
    error: str = ""

    # Read several times per field by the templates: worked out once (``name`` is not
    # changed after the field is made).
    @functools.cached_property
    def id(self) -> str:
        return "tt-" + re.sub(r"[^A-Za-z0-9_-]", "-", self.name)

    @property
    def error_id(self) -> str:
        return self.id + "-error"

    def __str__(self) -> str:
        return "" if self.value is None else str(self.value)


@dataclass
class FormView:
    """Builds ``Field``s and remembers which error paths a field will show.

    ``general_errors`` are the remaining ones (paths like ``questions`` or ""),
    which the template prints above the fields.
    """

    errors: Mapping[str, str]
    preview: bool = False
    _shown: set[str] = field(default_factory=set)

    def field(self, name: str, value: Any = "") -> Field:
        self._shown.add(name)
        return Field(name=name, value="" if value is None else value, error=self.error(name))

    def error(self, path: str) -> str:
        self._shown.add(path)
        return str(self.errors.get(path, "") or "")

    def general_errors(self) -> list[str]:
        return [str(m) for p, m in self.errors.items() if p not in self._shown and m]


def get_path(data: Any, *keys: Any, default: Any = None) -> Any:
    """``data[k1][k2]...`` through dicts and lists, or ``default`` when missing."""
    for key in keys:
        if isinstance(data, Mapping):
            data = data.get(key, default)
        elif isinstance(data, list) and isinstance(key, int) and 0 <= key < len(data):
            data = data[key]
        else:
            return default
    return data


def count_setting(maximum: int, description: str) -> dict[str, Any]:
    """The config schema of a count a stage sets, from 1 to ``maximum``."""
    return {"type": "integer", "minimum": 1, "maximum": maximum, "description": description}


def object_schema(properties: dict[str, Any], *, required: list[str]) -> dict[str, Any]:
    """The schema of an object with ``properties``, requiring ``required`` (an item's
    data, an entry of a list)."""
    return {"type": "object", "required": required, "properties": properties}


def object_list_schema(properties: dict[str, Any], *, required: list[str]) -> dict[str, Any]:
    """The schema of a list of objects with ``properties``, each requiring ``required``."""
    return {"type": "array", "items": object_schema(properties, required=required)}


def answer_list_schema(
    key: str, properties: dict[str, Any], *, required: list[str], **more: Any
) -> dict[str, Any]:
    """The schema of an answer ``{key: [{...properties}], ...more}`` (``key`` required):
    a list of questions, pairs or item entries, and ``more`` optional properties."""
    return object_schema(
        {key: object_list_schema(properties, required=required), **more}, required=[key]
    )


def per_item_answer_schema(
    properties: dict[str, Any], *, required: list[str] | None = None
) -> dict[str, Any]:
    """The answer schema of a task type answering item by item:
    ``{"items": [{"external_id": ..., **properties}]}``, each entry requiring
    ``external_id`` and ``required`` (all of ``properties`` when not given)."""
    return answer_list_schema(
        "items",
        {"external_id": {"type": "string"}, **properties},
        required=["external_id", *(list(properties) if required is None else required)],
    )


def label_text(value: Any) -> str | None:
    """A categorical value as the text compared (2 and "2" agree); None for none or ""."""
    return None if value is None or value == "" else str(value)


def gold_match_choice(label: Any, gold: Any) -> bool:
    """A categorical label equals the gold label (compared as text: 2 == "2"); a gold
    value may be bare (``2``) or an entry (``{"choice": 2}``)."""
    if isinstance(gold, Mapping):
        gold = next((gold[k] for k in LABEL_KEYS if k in gold), None)
    return label is not None and gold is not None and str(label) == str(gold)


# The shapes a task type's hooks take: a HIT's items, a stage config.
Items = list[dict[str, Any]]
Config = dict[str, Any]
Rng = random.Random
# The POST fields of a simulated worker (``TaskType.simulate_form``).
SimulatedForm = dict[str, list[str]]


class TaskType:
    """Base class. Subclasses set the class attributes and override the hooks."""

    name: ClassVar[str]
    label: ClassVar[str]
    description: ClassVar[str] = ""
    input_schema: ClassVar[dict[str, Any]] = {"type": "object"}
    config_schema: ClassVar[dict[str, Any]] = {"type": "object"}
    answer_schema: ClassVar[dict[str, Any]] = {"type": "object"}
    # The stage-link ``handoff`` dict this task type's ``next_items`` understands.
    handoff_schema: ClassVar[dict[str, Any]] = {"type": "object", "additionalProperties": False}
    # ``handoff`` keys holding the id of another stage of the campaign that some
    # produced items go to (an item's ``route`` names the key) instead of the next stage.
    handoff_stage_keys: ClassVar[tuple[str, ...]] = ()
    # Values used when the stage config leaves a key out.
    config_defaults: ClassVar[dict[str, Any]] = {}
    # One valid item's data for upload templates, when rules beyond the input schema
    # (offsets into a text, ...) make a generated one invalid; None: generated.
    example_item: ClassVar[dict[str, Any] | None] = None
    # Template included inside the worker page's <form>. Context: ``items`` (list of
    # {"id", "external_id", "data"}), ``config`` (stage config), ``answer`` (the
    # worker's answer so far, to refill the form after an error), ``errors``
    # ({path: message}), ``stage``, ``preview`` (True before accept: read-only).
    # Templates get their precomputed fields from ``view`` via ``{% tasktype_view %}``.
    # By default ``tasktypes/<name>.html`` (set for each subclass naming itself).
    template_name: ClassVar[str] = ""

    # What other rooms need to know of a task type (they never compare its name);
    # what its answers mean is said by ``label_of``, ``is_no_answer`` and
    # ``gold_correct`` below, and which keys hold written text by ``text_fields``.
    text_fields: ClassVar[tuple[str, ...]] = TEXT_FIELDS
    # Answers select sentences of a text (WhyQA): the answer-agreement measures apply.
    selects_sentences: ClassVar[bool] = False
    # Which part of a released dataset its approved work is, for the exports that
    # gather stages by it: "qa_pairs", "answer_links", "question_links" and
    # "translations" (Mintaka), "paraphrases" (GraphQuestions); "" for none.
    dataset_part: ClassVar[str] = ""
    # Spans linked to Wikidata: candidates prefetched, agreement on link sets (linking).
    links_entities: ClassVar[bool] = False
    # A quiz scored against its key when stored, gating stages; paid as a quiz.
    is_quiz: ClassVar[bool] = False
    # Workers judge others' work: by default never allocated work holding their own.
    judges_others_work: ClassVar[bool] = False
    # Takes canonical questions generated from a knowledge base (GraphQuestions).
    takes_generated_questions: ClassVar[bool] = False
    # Writes examples that graded rounds rank with a rubric (Nangia et al.'s writing).
    graded_by_rubric: ClassVar[bool] = False
    # Answers hold free text (``text_fields``) a language model could have written: a
    # stage may ask for the LLM flag (config ``llm_flag``, campaigns.assist.flags).
    writes_free_text: ClassVar[bool] = False
    # Model in the loop: its stage may put each written question to a model
    # (``config["adversarial"]``; ``adversarial_question``, ``model_answer_judge``).
    writes_adversarially: ClassVar[bool] = False
    # The built-in BM25 baseline, which answers with a sentence of the item's passage,
    # can answer its adversarial questions; where not (no passage, or options to choose
    # from), the option needs a model endpoint of kind ``openai`` (design refuses it).
    adversarial_baseline_fits: ClassVar[bool] = True
    # Confirms the fools an adversarial writing stage claimed: its items carry the try
    # (``fool_verdict`` reads one validator's answer).
    verifies_fools: ClassVar[bool] = False
    # Writes questions, listed under the answer's ``questions``: the config key of how
    # many a worker writes per task (``questions_count_errors``). The adversarial option
    # needs it at 1 (each try puts one question to the model and the worker's claim is
    # per HIT). "" for none.
    questions_key: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__ and "template_name" not in cls.__dict__:
            cls.template_name = f"tasktypes/{cls.name}.html"

    def validate_item(self, data: Any) -> list[FieldError]:
        """Problems with one item's data (empty list when valid)."""
        return schema_errors(self.input_schema, data)

    def validate_config(self, config: Any) -> list[FieldError]:
        """Problems with a stage's task-type config (empty list when valid). A key the
        schema does not list is refused by name: a misspelt setting must not be stored
        and silently ignored."""
        errors = (
            unknown_config_keys(self.config_schema, config)
            + schema_errors(self.config_schema, config)
            + self.adversarial_errors(config)
        )
        if isinstance(config, Mapping) and LLM_FLAG_KEY in config:
            errors += llm_flag_config_errors(
                config[LLM_FLAG_KEY], writes_free_text=self.writes_free_text
            )
        return errors

    def model_task(self, *, data: Mapping[str, Any], config: Mapping[str, Any]) -> tuple[str, Any]:
        """The same task put to a model for one item, as ``(question, context)`` for
        ``campaigns.assist.calls.model_call_request``: by default the task's description
        with the item's texts, on the item's passage (``passage``, ``context`` or
        ``text``), else on those texts."""
        texts = {k: v.strip() for k, v in data.items() if isinstance(v, str) and v.strip()}
        question = "\n".join(
            [self.description or self.label, *(f"{k}: {v}" for k, v in texts.items())]
        )
        for key in ("passage", "context", "text"):
            if texts.get(key):
                return question, texts[key]
        return question, list(texts.values()) or [self.label]

    def adversarial_errors(self, config: Any) -> list[FieldError]:
        """Problems with the stage's ``adversarial`` option: refused on a task type that
        does not write adversarially, checked against ``ADVERSARIAL_SCHEMA`` otherwise, and
        with ``questions_key`` at 1 where the task type names one."""
        if not isinstance(config, Mapping) or config.get("adversarial") in (None, {}):
            return []
        if not self.writes_adversarially:
            return [
                FieldError(
                    "adversarial",
                    "this task type cannot put its questions to a model (no adversarial option)",
                )
            ]
        errors = [
            FieldError(f"adversarial/{e.path}".rstrip("/"), e.message)
            for e in schema_errors(ADVERSARIAL_SCHEMA, config["adversarial"])
        ]
        key = self.questions_key
        if errors or not key or adversarial_config(config) is None:
            return errors
        if self.effective_config(config).get(key) != 1:
            errors.append(
                FieldError(
                    "adversarial",
                    "the adversarial option puts one question to the model per task: "
                    f"set {key} to 1",
                )
            )
        return errors

    def questions_count_errors(self, questions: Sized, cfg: Config) -> list[FieldError]:
        """The answer's ``questions`` against how many the stage asks for
        (``questions_key``)."""
        return count_errors(
            "questions", questions, wanted=cfg[self.questions_key], what="questions"
        )

    # --- Model in the loop (adversarial writing) ----------------------------------------

    def adversarial_question(
        self, *, entry: Mapping[str, Any], data: Mapping[str, Any]
    ) -> tuple[str, Any]:
        """The question to put to the model for one item's entry, and its context (a
        text or a list of sentences)."""
        return str(entry.get("question", "")), ""

    def adversarial_entry(
        self, *, entry: Mapping[str, Any], data: Mapping[str, Any]
    ) -> dict[str, Any]:
        """What a try records of the worker's entry for one item (``AdversarialTry.entry``,
        which ``model_answer_judge`` reads): by default the entry without its external
        id; a task type writing several questions per item records the one asked."""
        return {k: v for k, v in entry.items() if k != "external_id"}

    def model_answer_judge(
        self, *, entry: Mapping[str, Any], data: Mapping[str, Any], model_answer: str
    ) -> bool | None:
        """Whether ``model_answer`` is the answer the worker gave in ``entry`` (True: the
        model got it right; False: the model was fooled); None when the answer type does
        not allow the app to judge, and the worker marks it. By default the entry's typed
        answer, where it states one (``answer`` with ``answer_type`` entity, number, date
        or option: ``answer_match.stated_answer``)."""
        stated = stated_answer(entry, data)
        return None if stated is None else model_answer_matches(stated, model_answer)

    def fool_routes(self, *, handoff: Mapping[str, Any]) -> frozenset[str | None]:
        """The routes of the hand-off ``handoff`` on which ``next_items`` hands claimed
        fools to a ``verifies_fools`` stage: None for the next stage, else a stage key
        (``handoff_stage_keys``); empty for a task type that hands on no fools."""
        return frozenset()

    def fool_verdict(self, entry: Mapping[str, Any] | None) -> bool | None:
        """One validator's answer on a claimed fool: True confirmed, False not, None no
        verdict (``verifies_fools`` task types)."""
        return None

    def validate_answer(
        self, *, answer: Any, items: list[dict[str, Any]], config: dict[str, Any]
    ) -> list[FieldError]:
        """Problems with a worker's answer to a HIT holding ``items``: its schema first,
        then, on a well-formed answer, the task type's own ``answer_errors``."""
        cfg = self.effective_config(config)
        return schema_errors(self.answer_schema, answer) or self.answer_errors(answer, items, cfg)

    def answer_errors(self, answer: Any, items: Items, cfg: Config) -> list[FieldError]:
        """``validate_answer``'s own checks of an answer its schema accepts; ``cfg`` is
        the stage config with its defaults."""
        return []

    def parse_form(
        self, *, form: Mapping[str, Any], items: list[dict[str, Any]], config: dict[str, Any]
    ) -> dict[str, Any]:
        """Turn the posted form (a QueryDict-like mapping) into an answer.

        Must keep every piece of text the worker typed, even when it is invalid,
        so the page can come back filled after an error.
        """
        raise NotImplementedError

    def detaches_answers(self, *, config: Mapping[str, Any]) -> bool:
        """Whether answers are stored apart from the worker's identity.

        True for a stage marked ``anonymous`` (e.g. a demographics survey): the
        answer goes to ``DetachedAnswer``, which names neither the worker nor the
        assignment, and the assignment keeps only ``{"detached": true}``.
        """
        return bool(config.get("anonymous"))

    def exclusive_key(self, *, item: dict[str, Any]) -> str | None:
        """Items with the same key may be worked on by a worker only once per stage."""
        return None

    def aggregate(self, *, answers: list[dict[str, Any]], item: dict[str, Any]) -> Any:
        """Combine several workers' answers on one item (None: nothing to combine)."""
        return None

    def next_items(
        self, *, answer: dict[str, Any], items: list[dict[str, Any]], handoff: dict[str, Any]
    ) -> Iterable[dict[str, Any]]:
        """Items for the next stage made from one accepted answer (none by default).

        Each is ``{"external_id": str, "data": dict}``; see the module docstring.
        """
        return ()

    # --- What an answer means (agreement, consensus, gold: ``validation``) -------------

    def label_of(
        self, entry: Mapping[str, Any] | None, *, dimension: str = "answerable"
    ) -> Hashable | None:
        """The one categorical value of an answer ``entry`` (one item's part of an answer)
        that agreement and consensus compare, or None when it holds none. By default its
        ``choice``, ``label`` or ``verdict``, as text; ``dimension`` names the part of a
        multi-part answer to read (a rubric's), where a task type has several."""
        return self.entry_label(entry, dimension) if isinstance(entry, Mapping) else None

    def entry_label(self, entry: Mapping[str, Any], dimension: str) -> Hashable | None:
        """``label_of`` an entry that is there."""
        return label_text(next((entry[k] for k in LABEL_KEYS if entry.get(k) is not None), None))

    def is_no_answer(self, entry: Mapping[str, Any] | None) -> bool | None:
        """Whether ``entry`` says "no answer", for task types whose workers may say so;
        None for the others (and for no entry)."""
        return None

    def gold_correct(
        self,
        entry: Mapping[str, Any] | None,
        gold: Any,
        *,
        sentence_threshold: float = DEFAULT_SENTENCE_THRESHOLD,
        dimension: str = "answerable",
    ) -> bool | None:
        """Whether ``entry`` matches the item's ``gold`` answer; None when it cannot be
        told (no entry, no gold, no categorical value). By default the ``label_of`` the
        entry equals the gold label (``gold_match_choice``). ``sentence_threshold`` is
        for task types whose answers are compared by overlap."""
        if gold is None or not isinstance(entry, Mapping):
            return None
        return self.gold_match(entry, gold, sentence_threshold, dimension)

    def gold_match(
        self, entry: Mapping[str, Any], gold: Any, threshold: float, dim: str
    ) -> bool | None:
        """``gold_correct`` for an entry and a gold value that are there."""
        label = self.entry_label(entry, dim)
        if label is None and not any(k in entry for k in (*LABEL_KEYS, dim)):
            return None
        return gold_match_choice(label, gold)

    # Whether ``items_from_article`` makes items (the page offers an article upload).
    takes_articles: ClassVar[bool] = False

    def items_from_article(
        self, *, article: Mapping[str, Any], questions: list[str]
    ) -> list[dict[str, Any]] | None:
        """Item rows (``{"external_id", ...data}``) for this task type from a parsed
        article (``campaigns.tasktypes.articles.article_parse``) and optional
        questions; None when the task type does not take articles."""
        return None

    # --- Helpers added for the concrete task types ----------------------------------

    def validate_handoff(self, handoff: Any) -> list[FieldError]:
        """Problems with the stage link's ``handoff`` dict (empty list when valid)."""
        return schema_errors(self.handoff_schema, handoff)

    def effective_config(self, config: Mapping[str, Any] | None) -> dict[str, Any]:
        """The stage config with ``config_defaults`` filled in."""
        return {**self.config_defaults, **(config or {})}

    def instruction_numbers(self, config: Mapping[str, Any] | None) -> dict[str, float]:
        """The counts a stage's instructions may name as ``{name}``
        (``campaigns.tasktypes.instructions``): the effective config's numbers."""
        return {
            key: value
            for key, value in self.effective_config(config).items()
            if isinstance(value, int | float) and not isinstance(value, bool)
        }

    def view(
        self,
        *,
        items: list[dict[str, Any]],
        config: dict[str, Any],
        answer: Any,
        errors: Mapping[str, str],
        preview: bool,
    ) -> dict[str, Any]:
        """What the template needs, precomputed: fields with names, values and errors.

        The task type's ``page`` builds it with a ``FormView`` over ``errors``; the
        errors no field showed come last, as ``general_errors``."""
        form = FormView(errors=errors, preview=preview)
        page = self.page(form, items, self.effective_config(config), answer)
        return {**page, "general_errors": form.general_errors()}

    def page(self, form: FormView, items: Items, cfg: Config, answer: Any) -> dict[str, Any]:
        """``view``'s own part for a HIT holding ``items``: fields made with ``form``
        (``form.field(path, value)``; ``form.errors`` and ``form.preview`` as given),
        ``cfg`` the stage config with its defaults, ``answer`` the answer so far."""
        return {}

    # --- Simulated workers (``campaigns.simulate``) ---------------------------------

    def simulate_form(
        self,
        *,
        items: list[dict[str, Any]],
        config: dict[str, Any],
        profile: str,
        rng: random.Random,
    ) -> dict[str, list[str]]:
        """The POST fields a simulated worker of ``profile`` sends for a HIT holding ``items``.

        Field names are exactly those of the task type's template and ``parse_form``;
        every value is a list (repeated fields, like a browser's checkboxes). Profiles
        (``SIMULATION_PROFILES``): ``good`` answers validly and sensibly from the item
        data, ``sloppy`` is mostly valid but careless and sometimes invalid,
        ``spammer`` sends random or copied text that is often invalid. Everything
        random comes from ``rng``, so one seed gives one answer. The task type's
        ``simulate`` writes them, given the stage config with its defaults.
        """
        simulation_profile_check(profile)
        return self.simulate(items, self.effective_config(config), profile, rng)

    def simulate(self, items: Items, cfg: Config, profile: str, rng: Rng) -> SimulatedForm:
        """``simulate_form``'s answer for a checked ``profile`` and ``cfg`` (the stage
        config with its defaults)."""
        raise NotImplementedError(
            f"Task type {self.name!r} has no simulate_form(), so the crowd simulator "
            "cannot work on its stages; add one to its module (see "
            "TaskType.simulate_form in campaigns/tasktypes/base.py)."
        )


# --- Helpers for simulate_form ---------------------------------------------------------

SIMULATION_PROFILES = ("good", "sloppy", "spammer")

# Phrases whose content words appear in no question, added until a rephrasing is
# no longer a trivial variant of its original.
_SIM_PHRASES = (
    "in plain words",
    "out of curiosity",
    "if you happen to know",
    "to put it simply",
    "generally speaking",
    "according to reliable sources",
    "as far as anyone can tell",
    "in a nutshell",
    "speaking broadly",
    "for my homework",
    "strictly speaking",
    "from what historians record",
    "by common agreement",
    "quite honestly",
    "as documented somewhere",
    "roughly explained",
)
SIM_NOISE_WORDS = (
    "asdf",
    "good",
    "ok",
    "nice",
    "yes",
    "idk",
    "test",
    "lorem ipsum",
    "qwerty",
    "no idea",
)


def simulation_profile_check(profile: str) -> str:
    """``profile`` when it is one of ``SIMULATION_PROFILES``; ``ValueError`` otherwise."""
    if profile not in SIMULATION_PROFILES:
        known = ", ".join(SIMULATION_PROFILES)
        raise ValueError(f"Unknown simulation profile {profile!r}; profiles are {known}.")
    return profile


def simulated_qid(text: str) -> str:
    """A plausible Wikidata id for ``text``: the same for every simulated worker, so
    good workers agree with one another (the simulator knows no real Wikidata)."""
    digest = hashlib.sha1(normalise_text(text).encode(), usedforsecurity=False).hexdigest()
    return f"Q{int(digest[:8], 16) % 9_999_999 + 1}"


def simulated_rephrasing(
    text: str, *, rng: random.Random, max_similarity: float, avoid: Iterable[str] = ()
) -> str:
    """A question asking what ``text`` asks, worded apart enough to pass
    ``trivial_variant_reason`` against ``text`` and every text in ``avoid``.

    Keeps every word of the original (names stay mentioned) and adds phrases;
    gives up, returning its last attempt, when the phrases run out.
    """
    core = text.strip().rstrip("?").strip()
    core = core[:1].lower() + core[1:]
    phrases = list(_SIM_PHRASES)
    rng.shuffle(phrases)
    others = [text, *avoid]
    chosen: list[str] = []
    candidate = f"{core}?"
    for phrase in phrases:
        chosen.append(phrase)
        lead = ", ".join(chosen)
        candidate = f"{lead[:1].upper()}{lead[1:]}: {core}?"
        if all(
            trivial_variant_reason(candidate, other, max_similarity=max_similarity) is None
            for other in others
        ):
            break
    return candidate
