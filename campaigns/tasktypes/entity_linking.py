"""Entity linking in an answer (``answer_entity_linking``) or a question
(``question_entity_linking``), Mintaka-style.

Item data::

    {"question": str, "answer": str (answer linking only),
     "proposed_spans"?: [{"start": int, "end": int, "text": str, "kind"?: str}], ...}

Offsets are Python string indices (code points) into the *linked text*: the
answer for answer linking, the question for question linking. Other keys (for
example those ``question_writing`` hands off: complexity_type, answer_type, ...)
are kept. Without proposed spans, answer linking proposes the whole answer.

Answer (one entry per item)::

    {"items": [{"external_id": str,
                "links": [{"start": int, "end": int, "text": str,
                           "qid": "Q42" | None, "none": bool}]}]}

Each link has a Wikidata id (``Q\\d+``) or ``none: true`` ("not in Wikidata",
NIL, stored with its span); spans lie within the text, match it at those offsets
and do not overlap. An id that Wikidata redirects (a merged item) is stored as its
target, the id given kept in ``redirected_from`` (``linking.selectors.qid_targets``:
the offline index or the live client, cache first).

``linking.services.stage_prefetch`` adds to the items of a published stage
``proposed_spans`` when missing, ``prefilled_links`` (spans whose exact text was
linked with agreement elsewhere in the campaign) and ``seen``; the page starts
with the pre-filled ids, and with JavaScript each row searches Wikidata as the
worker types (``/work/suggest/``).
Form rows ``items/<i>/spans/<j>/{start,end,text,qid,none,skip}``: one per proposed
span plus those added by selecting words (JS); a row with neither id nor "not in
Wikidata", or with ``skip`` ("not an entity"), is left out of the answer.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any, ClassVar

from campaigns.tasktypes import base as tt
from campaigns.tasktypes.per_item import Entry, PerItemTask
from campaigns.tasktypes.question_writing import yes_no_value

QID_PATTERN = r"^Q[1-9][0-9]*$"
# Span kinds that are values, not entities (``linking.spans.VALUE_KINDS``): Mintaka
# keeps them as typed values, no one links them to Wikidata (§4.3, release).
_VALUE_KINDS = frozenset({"date", "time", "ordinal", "cardinal", "quantity", "money", "percent"})
_SPAN_SCHEMA = tt.object_schema(
    {
        "start": {"type": "integer", "minimum": 0},
        "end": {"type": "integer", "minimum": 0},
        "text": {"type": "string"},
        "kind": {"type": "string"},
    },
    required=["start", "end", "text"],
)


def normalise_qid(text: str) -> str:
    """``Q42`` from "q42", " Q42 " or a Wikidata URL ending in /Q42; other text unchanged."""
    candidate = text.strip().rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    if candidate[:1] in {"q", "Q"} and candidate[1:].isdigit():
        return "Q" + candidate[1:]
    return text.strip()


# Replaces redirected Wikidata ids (merged items) in link entries by their targets.
# Linking registers it at start-up (``linking.subscriptions.subscribe``): the task type may
# not import linking, which sits above it.
RedirectResolver = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
_redirect_resolvers: list[RedirectResolver] = []


def redirect_resolver_register(resolver: RedirectResolver) -> None:
    """Make ``resolver`` resolve redirected ids in stored answers (once)."""
    if resolver not in _redirect_resolvers:
        _redirect_resolvers.append(resolver)


def _redirects_resolved(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``entries`` with redirected ids replaced by their targets (one batched lookup)."""
    for resolver in _redirect_resolvers:
        entries = resolver(entries)
    return entries


def _link_key(link: Mapping[str, Any]) -> tuple[int, int, str]:
    return (link["start"], link["end"], "NONE" if link.get("none") else str(link.get("qid")))


def link_key(link: Mapping[str, Any]) -> tuple[Any, Any, str]:
    """A link as (start, end, qid or "NONE"), as answers are compared (missing offsets
    tolerated: a gold value typed by hand)."""
    return (
        link.get("start"),
        link.get("end"),
        "NONE" if link.get("none") else str(link.get("qid")),
    )


def link_set(entry: Mapping[str, Any] | Sequence[Any] | None) -> frozenset[tuple[Any, Any, str]]:
    """The set of links of an entry (or of a bare list of links)."""
    links = entry.get("links", []) if isinstance(entry, Mapping) else entry or []
    return frozenset(link_key(link) for link in links if isinstance(link, Mapping))


def gold_match_links(entry: Mapping[str, Any], gold: Any) -> bool:
    """The entry's links are exactly the gold links (``{"links": [...]}`` or a list)."""
    gold_links = gold.get("links", []) if isinstance(gold, Mapping) else gold
    return link_set(entry) == link_set(gold_links if isinstance(gold_links, list) else [])


class _EntityLinking(PerItemTask):
    """Shared behaviour; subclasses say which text is linked."""

    links_entities = True

    text_key: ClassVar[str]
    config_schema: ClassVar[dict] = {
        "type": "object",
        "properties": {
            "max_links": tt.count_setting(100, "Most entities a worker may link in one text."),
            "min_links": {
                "type": "integer",
                "minimum": 0,
                "maximum": 100,
                "description": "Fewest entities a worker must link before submitting.",
            },
            "allow_not_in_wikidata": {
                "type": "boolean",
                "description": "Let workers mark an entity that has no Wikidata item.",
            },
        },
    }
    config_defaults: ClassVar[dict[str, Any]] = {
        "max_links": 20,
        "min_links": 0,
        "allow_not_in_wikidata": True,
    }
    answer_schema: ClassVar[dict] = tt.per_item_answer_schema(
        {
            "links": tt.object_list_schema(
                {
                    "start": {"type": ["integer", "string"]},
                    "end": {"type": ["integer", "string"]},
                    "text": {"type": "string"},
                    "qid": {"type": ["string", "null"]},
                    "none": {"type": "boolean"},
                    "redirected_from": {"type": "string"},
                },
                required=["start", "end", "text"],
            )
        }
    )

    def entry_label(self, entry: Mapping[str, Any], dimension: str) -> Hashable | None:
        """The whole set of links, as JSON text: equal sets agree."""
        return json.dumps(sorted(link_set(entry), key=str))

    def gold_match(self, entry: Mapping[str, Any], gold: Any, threshold: float, dim: str) -> bool:
        """The entry's links are exactly the gold links."""
        return gold_match_links(entry, gold)

    def linked_text(self, data: Mapping[str, Any]) -> str:
        return str(data.get(self.text_key, ""))

    def proposed_spans(self, data: Mapping[str, Any]) -> list[dict[str, Any]]:
        return list(data.get("proposed_spans") or [])

    def validate_item(self, data: Any) -> list[tt.FieldError]:
        errors = tt.schema_errors(self.input_schema, data)
        if errors:
            return errors
        text = self.linked_text(data)
        for j, span in enumerate(data.get("proposed_spans") or []):
            if not 0 <= span["start"] < span["end"] <= len(text):
                errors.append(tt.FieldError(f"proposed_spans/{j}", "The span is outside the text."))
            elif text[span["start"] : span["end"]] != span["text"]:
                errors.append(
                    tt.FieldError(
                        f"proposed_spans/{j}/text", "The text does not match the offsets."
                    )
                )
        return errors

    def entry_from_form(self, form: Mapping[str, Any], at: str, cfg: tt.Config) -> Entry:
        links = []
        for j in tt.form_indices(form, f"{at}/spans"):
            row = f"{at}/spans/{j}"
            qid_text = tt.form_text(form, f"{row}/qid")
            none = tt.form_bool(form, f"{row}/none")
            if tt.form_bool(form, f"{row}/skip"):
                continue  # marked "not an entity" on the page
            if not qid_text and not none:
                continue  # "no entity here": nothing was typed or ticked
            links.append(
                {
                    "start": tt.parse_int_or_text(tt.form_text(form, f"{row}/start")),
                    "end": tt.parse_int_or_text(tt.form_text(form, f"{row}/end")),
                    "text": tt.form_text(form, f"{row}/text"),
                    "qid": normalise_qid(qid_text) if qid_text else None,
                    "none": none,
                }
            )
        return {"links": links}

    def parse_form(
        self, *, form: Mapping[str, Any], items: list[dict[str, Any]], config: dict[str, Any]
    ) -> dict[str, Any]:
        """The entries of ``entry_from_form``, redirected ids resolved in one lookup."""
        entries = super().parse_form(form=form, items=items, config=config)["items"]
        return {"items": _redirects_resolved(entries)}

    def entry_errors(
        self, entry: Entry, data: Entry, at: str, cfg: tt.Config
    ) -> list[tt.FieldError]:
        return self._links_errors(f"{at}/links", entry["links"], data, cfg)

    def _links_errors(
        self, base: str, links: list[dict[str, Any]], data: dict[str, Any], cfg: dict[str, Any]
    ) -> list[tt.FieldError]:
        text = self.linked_text(data)
        errors: list[tt.FieldError] = []
        if len(links) > cfg["max_links"]:
            errors.append(tt.FieldError(base, f"Link at most {cfg['max_links']} spans."))
        if len(links) < cfg["min_links"]:
            errors.append(tt.FieldError(base, f"Link at least {cfg['min_links']} span(s)."))
        spans_ok = []
        for k, link in enumerate(links):
            path = f"{base}/{k}"
            start, end = link["start"], link["end"]
            qid, none = link.get("qid"), bool(link.get("none"))
            if not isinstance(start, int) or not isinstance(end, int):
                errors.append(tt.FieldError(f"{path}/text", "The span's position is missing."))
            elif not 0 <= start < end <= len(text):
                errors.append(tt.FieldError(f"{path}/text", "The span is outside the text."))
            elif text[start:end] != link["text"]:
                errors.append(tt.FieldError(f"{path}/text", "The span does not match the text."))
            else:
                spans_ok.append((start, end, k, link["text"]))
            if qid and none:
                errors.append(
                    tt.FieldError(
                        f"{path}/qid", 'Give a Wikidata id or tick "not in Wikidata", not both.'
                    )
                )
            elif none and not cfg["allow_not_in_wikidata"]:
                errors.append(tt.FieldError(f"{path}/qid", "Give a Wikidata id."))
            elif not qid and not none:
                errors.append(
                    tt.FieldError(f"{path}/qid", 'Give a Wikidata id or tick "not in Wikidata".')
                )
            elif qid and not re.match(QID_PATTERN, qid):
                errors.append(tt.FieldError(f"{path}/qid", "A Wikidata id looks like Q42."))
        spans_ok.sort()
        reach, widest = -1, ""
        for start, end, k, words in spans_ok:
            if start < reach:
                errors.append(
                    tt.FieldError(
                        f"{base}/{k}/text",
                        f"“{words}” overlaps “{widest}”: link only one of them"
                        " (mark the other “not an entity”).",
                    )
                )
            if end > reach:
                reach, widest = end, words
        return errors

    def aggregate(self, *, answers: list[dict[str, Any]], item: dict[str, Any]) -> dict[str, Any]:
        """Agreement on the sets of (span, qid) links.

        Returns ``{"answers": n, "unanimous": bool (all sets equal),
        "pairwise_agreement": mean Jaccard over pairs (1.0 for fewer than 2),
        "votes": [{"start", "end", "text", "qid", "none", "votes"}] most-voted first,
        "majority": the links more than half of the workers gave}``. A "not in
        Wikidata" link counts as its own value.
        """
        sets: list[set[tuple[int, int, str]]] = []
        examples: dict[tuple[int, int, str], dict[str, Any]] = {}
        for answer in answers:
            entry = tt.answer_for_item(answer, item)
            if entry is None:
                continue
            keys = set()
            for link in entry.get("links", []):
                key = _link_key(link)
                keys.add(key)
                examples.setdefault(key, link)
            sets.append(keys)
        counts: Counter[tuple[int, int, str]] = Counter(k for s in sets for k in s)
        pairs = list(combinations(sets, 2))
        jaccard = [len(a & b) / len(a | b) if a | b else 1.0 for a, b in pairs]
        votes = [
            {
                "start": key[0],
                "end": key[1],
                "text": examples[key].get("text", ""),
                "qid": None if key[2] == "NONE" else key[2],
                "none": key[2] == "NONE",
                "votes": n,
            }
            for key, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        ]
        return {
            "answers": len(sets),
            "unanimous": len(sets) > 0 and all(s == sets[0] for s in sets),
            "pairwise_agreement": sum(jaccard) / len(jaccard) if jaccard else 1.0,
            "votes": votes,
            "majority": [v for v in votes if v["votes"] * 2 > len(sets)],
        }

    def page(
        self, form: tt.FormView, items: tt.Items, cfg: tt.Config, answer: Any
    ) -> dict[str, Any]:
        blocks = []
        for i, item in enumerate(items):
            data = item.get("data", {})
            answered = tt.get_path(answer, "items", i, "links")
            # A fresh page starts from the links agreed elsewhere in the campaign.
            prefilled = [] if answered is not None else list(data.get("prefilled_links") or [])
            links = answered or prefilled
            seen_spans = {(lk.get("start"), lk.get("end")) for lk in prefilled}
            by_span: dict[tuple[Any, Any], tuple[int | None, dict[str, Any]]] = {
                (lk.get("start"), lk.get("end")): (k, lk) for k, lk in enumerate(links)
            }
            rows = []
            used: set[int] = set()
            spans = [*self.proposed_spans(data)]
            for link in links:
                if not any(
                    (s["start"], s["end"]) == (link.get("start"), link.get("end")) for s in spans
                ):
                    spans.append({**link, "kind": "added"})
            for j, span in enumerate(spans):
                k, link = by_span.get((span["start"], span["end"]), (None, {}))
                if k is not None:
                    used.add(k)
                path = f"items/{i}/links/{k}" if k is not None else None
                rows.append(
                    {
                        "number": j + 1,
                        "start": span["start"],
                        "end": span["end"],
                        "text": span.get("text", ""),
                        "kind": span.get("kind", ""),
                        "seen": (span["start"], span["end"]) in seen_spans,
                        "qid": form.field(f"items/{i}/spans/{j}/qid", link.get("qid")),
                        "none": form.field(f"items/{i}/spans/{j}/none", bool(link.get("none"))),
                        "prefix": f"items/{i}/spans/{j}",
                        "error": " ".join(
                            m for m in (form.error(f"{path}/text"), form.error(f"{path}/qid")) if m
                        )
                        if path
                        else "",
                    }
                )
            blocks.append(
                {
                    "index": i,
                    "question": data.get("question", ""),
                    "answer": data.get("answer", ""),
                    "text": self.linked_text(data),
                    "rows": rows,
                    "next_row": len(rows),
                    "links_error": form.error(f"items/{i}/links"),
                }
            )
        return {
            "items": blocks,
            "text_label": "answer" if self.text_key == "answer" else "question",
            "allow_not_in_wikidata": cfg["allow_not_in_wikidata"],
        }

    def next_items(
        self, *, answer: dict[str, Any], items: list[dict[str, Any]], handoff: dict[str, Any]
    ) -> Iterable[dict[str, Any]]:
        """Each linked span (a Wikidata id, not "not in Wikidata") of each item becomes
        an ``entity_link_validation`` item: ``{"question", "answer"?, "text", "start",
        "end", "qid", "span_in"}``, its id ``<item id>/l<k>-<digest>``.

        With ``{"target": "question_entity_linking"}`` (answer linking only: Mintaka's
        order, answers first, then questions) each item becomes one question-linking
        item ``{"question", "answer"}`` instead, its id ``<item id>/q-<digest>``; every
        annotator of the item produces the same one, so it is made once.
        """
        by_id = {str(item.get("external_id", "")): item for item in items}
        if handoff.get("target") == "question_entity_linking":
            return self._question_items(answer=answer, by_id=by_id)
        out = []
        for entry in answer.get("items", []):
            if not isinstance(entry, Mapping):
                continue
            source = by_id.get(str(entry.get("external_id", "")))
            if source is None:
                continue
            data = source.get("data", {})
            for k, link in enumerate(entry.get("links", [])):
                if link.get("none") or not link.get("qid"):
                    continue
                produced: dict[str, Any] = {
                    "question": str(data.get("question", "")),
                    "text": link["text"],
                    "start": link["start"],
                    "end": link["end"],
                    "qid": link["qid"],
                    "span_in": self.text_key,
                }
                if self.text_key == "answer":
                    produced["answer"] = str(data.get("answer", ""))
                content = [link["start"], link["end"], link["text"], link["qid"]]
                out.append(
                    {
                        "external_id": tt.derived_external_id(
                            str(source.get("external_id", "")), f"l{k + 1}", content
                        ),
                        "data": produced,
                    }
                )
        return out

    def _question_items(
        self, *, answer: dict[str, Any], by_id: Mapping[str, dict[str, Any]]
    ) -> list[dict[str, Any]]:
        out = []
        for entry in answer.get("items", []):
            source = (
                by_id.get(str(entry.get("external_id", ""))) if isinstance(entry, Mapping) else None
            )
            if source is None:
                continue
            data = source.get("data", {})
            produced = {
                "question": str(data.get("question", "")),
                "answer": str(data.get("answer", "")),
            }
            source_id = str(source.get("external_id", ""))
            out.append(
                {"external_id": tt.derived_external_id(source_id, "q", produced), "data": produced}
            )
        return out

    def simulate(
        self, items: tt.Items, cfg: tt.Config, profile: str, rng: tt.Rng
    ) -> tt.SimulatedForm:
        """One row per proposed span, as the page posts it (start, end, text, and the id
        typed or "not in Wikidata" ticked). Good workers link every span that names
        something to its plausible id (``simulated_qid``) and skip numbers and yes/no;
        sloppy ones skip, tick "not in Wikidata" or mistype ids; spammers type Q1
        everywhere or junk."""
        form: dict[str, list[str]] = {}
        for i, item in enumerate(items):
            spans = self.proposed_spans(item.get("data", {}))[: cfg["max_links"]]
            linkable = [
                s
                for s in spans
                if yes_no_value(s["text"]) is None
                and s.get("kind") not in _VALUE_KINDS
                and not s["text"].replace(",", "").replace(".", "").strip().isdigit()
            ]
            if len(linkable) < cfg["min_links"]:
                linkable = spans
            linkable = _non_overlapping(linkable)
            for j, span in enumerate(spans):
                row = f"items/{i}/spans/{j}"
                form[f"{row}/start"] = [str(span["start"])]
                form[f"{row}/end"] = [str(span["end"])]
                form[f"{row}/text"] = [span["text"]]
                qid, none = (tt.simulated_qid(span["text"]) if span in linkable else ""), False
                if profile == "sloppy":
                    roll = rng.random()
                    if roll < 0.1:
                        qid = ""
                    elif roll < 0.2 and cfg["allow_not_in_wikidata"]:
                        qid, none = "", True
                    elif roll < 0.3:
                        qid = f"Q{rng.randint(1, 999_999)}"
                    elif roll < 0.38:
                        qid = rng.choice(["q-" + qid[1:], span["text"]])
                elif profile == "spammer":
                    qid = rng.choice(["Q1", "Q1", "asdf", f"Q{rng.randint(1, 99)}"])
                    none = rng.random() < 0.2
                form[f"{row}/qid"] = [qid]
                if none:
                    form[f"{row}/none"] = ["1"]
        return form


def _non_overlapping(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a careful worker links when proposals overlap ("Tom Hanks and Meg Ryan",
    "Tom Hanks", "Meg Ryan"): the narrowest spans first, none overlapping another."""
    chosen: list[dict[str, Any]] = []
    for span in sorted(spans, key=lambda s: (s["end"] - s["start"], s["start"])):
        if all(span["end"] <= c["start"] or span["start"] >= c["end"] for c in chosen):
            chosen.append(span)
    return chosen


# The shared base, for callers that need ``proposed_spans`` (linking.services).
EntityLinkingTaskType = _EntityLinking


class AnswerEntityLinking(_EntityLinking):
    name = "answer_entity_linking"
    dataset_part = "answer_links"
    label = "Link the entities in an answer"
    description = "Link each entity named in the answer to its Wikidata item."
    text_key = "answer"
    handoff_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"target": {"enum": ["entity_link_validation", "question_entity_linking"]}},
    }
    input_schema: ClassVar[dict] = tt.object_schema(
        {
            "question": {"type": "string", "minLength": 1},
            "answer": {"type": "string", "minLength": 1},
            "proposed_spans": {"type": "array", "items": _SPAN_SCHEMA},
        },
        required=["question", "answer"],
    )

    def proposed_spans(self, data: Mapping[str, Any]) -> list[dict[str, Any]]:
        spans = list(data.get("proposed_spans") or [])
        text = self.linked_text(data)
        if not spans and text:
            return [{"start": 0, "end": len(text), "text": text, "kind": "answer"}]
        return spans


class QuestionEntityLinking(_EntityLinking):
    name = "question_entity_linking"
    dataset_part = "question_links"
    label = "Link the entities in a question"
    description = "Link each entity named in the question to its Wikidata item."
    text_key = "question"
    input_schema: ClassVar[dict] = tt.object_schema(
        {
            "question": {"type": "string", "minLength": 1},
            "proposed_spans": {"type": "array", "items": _SPAN_SCHEMA},
        },
        required=["question"],
    )
