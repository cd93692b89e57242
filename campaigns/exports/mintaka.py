"""The ``mintaka`` export: Mintaka's JSON schema (Sen et al., 2022), one object per QA
pair written, accepted and linked in the campaign, with a train/dev/test split.

An example is one QA pair of an approved ``question_writing`` assignment. Its id is the
external id the pair was handed on under (``derived_external_id``), so the answer
linking item of the pair has that id and the question linking item is derived from it:
the entities come from those items' agreed links (``linking.EntityLinkResolution``),
matched by id, a chunk of pairs at a time.
"""

from __future__ import annotations

import json
import random
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from hashlib import blake2b
from json.encoder import encode_basestring as _json_string  # as json.dumps(ensure_ascii=False)
from typing import Any

from django.db import connection
from django.db.models import Q
from django.db.models.expressions import RawSQL

from campaigns.exports.common import (
    CHUNK,
    IN_BATCH,
    Tally,
    first_items,
    keyset_sql_pages,
    keyset_tuples,
)
from campaigns.exports.mintaka_values import (
    answer_dates,
    answer_number,
    numeric,
    question_value,
)
from campaigns.exports.model_loop import llm_flags_by_assignment, model_calls_by_assignment
from campaigns.models import HIT, Assignment, AssignmentStatus, Campaign, HITItem, Item, Stage
from campaigns.tasktypes import task_type_names
from campaigns.tasktypes.answer_types import AnswerType
from campaigns.tasktypes.base import answer_for_item, derived_external_id_of_json
from campaigns.tasktypes.question_writing import (
    NUMERIC_TYPES as NUMERIC_CELLS,
)
from campaigns.tasktypes.question_writing import (
    detect_answer_type,
    linked_answer_text,
    yes_no_value,
)
from linking.client import candidate_source
from linking.models import EntityLinkResolution, ResolutionStatus
from linking.spans import VALUE_KINDS

SPLITS = ("train", "dev", "test")
DEFAULT_RATIOS = (Decimal("0.7"), Decimal("0.1"), Decimal("0.2"))  # Mintaka: 14k/2k/4k of 20k
AGREED = (ResolutionStatus.RESOLVED, ResolutionStatus.DECIDED)
MINTAKA_TYPES = {
    AnswerType.ENTITY: "entity",
    AnswerType.BOOLEAN: "boolean",
    AnswerType.NUMERIC: "numerical",
    AnswerType.DATE: "date",
    AnswerType.STRING: "string",
}


def parse_ratios(text: str) -> tuple[Decimal, Decimal, Decimal]:
    """``"0.7,0.1,0.2"`` as three non-negative ratios summing to 1 (ValueError if not)."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        ratios = tuple(Decimal(p) for p in parts)
    except ArithmeticError:
        raise ValueError("Ratios are three numbers such as 0.7,0.1,0.2.") from None
    if not all(r.is_finite() for r in ratios):
        raise ValueError("Ratios are finite numbers such as 0.7,0.1,0.2 (not NaN or Infinity).")
    if len(ratios) != 3 or any(r < 0 for r in ratios) or sum(ratios) != 1:
        raise ValueError("Give three non-negative ratios (train, dev, test) that sum to 1.")
    return ratios[0], ratios[1], ratios[2]


# One page of approved writing assignments with the first item of their HIT (by
# position), PostgreSQL's fast path: the answers as the database's JSON text (decoded
# here, without the ORM's per-row conversions), the item's external id, and its topic
# and complexity type as text with their JSON type (NULL when the key is missing). An
# assignment whose HIT has no item is left out. ``_portable_pages`` reads the same rows
# through the ORM on any database (the embedded SQLite default).
PAIRS_PAGE_SQL = """
SELECT a.id, a.answers::text, it.external_id,
       it.data ->> 'topic', jsonb_typeof(it.data -> 'topic'),
       it.data ->> 'complexity_type', jsonb_typeof(it.data -> 'complexity_type')
FROM {assignment} a
JOIN {hit} h ON h.id = a.hit_id
JOIN LATERAL (
    SELECT hi.item_id FROM {hititem} hi WHERE hi.hit_id = a.hit_id
    ORDER BY hi.position, hi.id LIMIT 1
) first_item ON TRUE
JOIN {item} it ON it.id = first_item.item_id
WHERE h.stage_id = ANY(%s) AND a.status = %s AND a.id > %s
ORDER BY a.id
LIMIT %s
"""
# A page row, whatever the database: (assignment id, answers, the HIT's first item's
# external id, its topic, its complexity type).
PageRow = tuple[int, Any, str, Any, Any]


def _json_or(text: str | None, default: Any) -> Any:
    return default if text is None else json.loads(text)


def _json_value(text: str | None, kind: str | None, default: Any) -> Any:
    """The value of a JSON field read as ``->>`` text and its ``jsonb_typeof``:
    ``default`` when the key is missing, a string as it is, anything else decoded."""
    if kind is None:
        return default
    if kind == "string":
        return text
    return None if kind == "null" else json.loads(str(text))


def _cell(data: Any, key: str, default: Any) -> Any:
    """``data[key]`` of an item's data as decoded by the ORM, ``default`` when the key
    is missing or the data is no JSON object (as ``->>`` reads it on PostgreSQL)."""
    return data.get(key, default) if isinstance(data, dict) else default


def _pair_id(source: str, index: int, question: str, answer: str) -> str:
    """``derived_external_id(source, f"q{index}", [question, answer])``: the JSON text
    of two strings written directly (the export derives it for every pair, twice)."""
    canonical = f"[{_json_string(question)}, {_json_string(answer)}]"
    return derived_external_id_of_json(source, f"q{index}", canonical)


def _question_id(example_id: str, question: str, mention: str) -> str:
    """Id of the question linking item of an example: ``derived_external_id(example_id,
    "q", {"question": question, "answer": mention})``, its JSON text written directly."""
    canonical = f'{{"answer": {_json_string(mention)}, "question": {_json_string(question)}}}'
    return derived_external_id_of_json(example_id, "q", canonical)


def _writing_stages(campaign: Campaign) -> list[int]:
    """The campaign's question writing stages (whose approved pairs are the examples)."""
    return list(
        Stage.objects.filter(
            campaign=campaign, task_type__in=task_type_names(dataset_part="qa_pairs")
        ).values_list("pk", flat=True)
    )


def _pg_pages(stages: list[int]) -> Iterator[list[PageRow]]:
    sql = PAIRS_PAGE_SQL.format(
        assignment=Assignment._meta.db_table,
        hit=HIT._meta.db_table,
        hititem=HITItem._meta.db_table,
        item=Item._meta.db_table,
    )
    for page in keyset_sql_pages(sql, [stages, AssignmentStatus.APPROVED], chunk=CHUNK):
        yield [
            (
                pk,
                _json_or(answers_text, None),
                external_id,
                _json_value(topic, topic_kind, ""),
                _json_value(ctype, ctype_kind, "generic"),
            )
            for pk, answers_text, external_id, topic, topic_kind, ctype, ctype_kind in page
        ]


def _portable_pages(stages: list[int]) -> Iterator[list[PageRow]]:
    """``_pg_pages``' rows through the ORM, on any database."""
    for page in keyset_tuples(
        Assignment.objects.filter(hit__stage_id__in=stages, status=AssignmentStatus.APPROVED),
        ("hit_id", "answers"),
    ):
        firsts = first_items(
            sorted({hit_id for _, hit_id, _ in page}), "item__external_id", "item__data"
        )
        yield [
            (pk, answers, firsts[hit_id][0], *_cells(firsts[hit_id][1]))
            for pk, hit_id, answers in page
            if hit_id in firsts
        ]


def _cells(data: Any) -> tuple[Any, Any]:
    return _cell(data, "topic", ""), _cell(data, "complexity_type", "generic")


def _pages(campaign: Campaign) -> Iterator[list[PageRow]]:
    """The approved writing assignments with their pair's cell, a page of ``CHUNK``
    at a time: raw SQL on PostgreSQL, the ORM elsewhere (the same rows)."""
    stages = _writing_stages(campaign)
    if not stages:
        return iter(())
    if connection.vendor == "postgresql":
        return _pg_pages(stages)
    return _portable_pages(stages)


def _questions(answers: Any) -> list[tuple[int, str, str, dict[str, Any]]]:
    """(position from 0, question, answer, pair) of each pair of a writing answer."""
    pairs = answers.get("questions") if isinstance(answers, dict) else None
    return [
        (i, str(pair.get("question", "")), str(pair.get("answer", "")), pair)
        for i, pair in enumerate(pairs if isinstance(pairs, list) else [])
        if isinstance(pair, dict)
    ]


def duplicate_suffix(base: str, n: int) -> str:
    """The id of the ``n``-th (2, 3, ...) example whose pair id is ``base``: two
    workers who wrote the same pair for the same cell give two examples, the first
    (by assignment) under the pair id, the others under ``<pair id>~<n>``."""
    return f"{base}~{n}"


# A pair's key: its writing assignment's id and its position in the answer, as one
# integer ordered as the export reads the pairs (by assignment, then position).
KEY_SHIFT = 16


def pair_key(assignment_id: int, position: int) -> int:
    return (assignment_id << KEY_SHIFT) | position


def _digest(source: str, position: int, question: str, answer: str) -> int:
    """64 bits of what makes a pair's id (its cell, position, question and answer): two
    pairs with one id have one digest; two different ids share one with odds of about
    n^2 / 2^65 (a millionth at 4 million pairs)."""
    text = f"{source}\x1f{position}\x1f{question}\x1f{answer}"
    return int.from_bytes(blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)


@dataclass(frozen=True)
class PairIndex:
    """The pairs in the export's order, compactly: ``keys`` (``pair_key``, ascending),
    and ``repeats``: the key of each pair whose id an earlier pair already has, with
    its number (2, 3, ...; its id gets ``duplicate_suffix``). Eight bytes a pair."""

    keys: array[int]
    repeats: dict[int, int]


def _repeats(keys: array[int], digests: array[int]) -> dict[int, int]:
    """Key -> n of every pair that repeats an earlier pair's id (the n-th of them). The
    digests are sorted as one numpy array (8 bytes a pair, not a set of objects);
    only when some repeat is the whole list walked again."""
    import numpy as np

    if not digests:
        return {}
    ordered = np.sort(np.frombuffer(digests, dtype=np.int64))
    repeated = set(ordered[1:][ordered[1:] == ordered[:-1]].tolist())
    del ordered
    if not repeated:
        return {}
    seen: dict[int, int] = {}
    out: dict[int, int] = {}
    for key, digest in zip(keys, digests, strict=True):
        if digest in repeated:
            seen[digest] = n = seen.get(digest, 0) + 1
            if n > 1:
                out[key] = n
    return out


def pair_id_index(campaign: Campaign) -> PairIndex:
    """Every approved QA pair's key in ``_pairs``' order and the repeated ones."""
    keys: array[int] = array("q")
    digests: array[int] = array("q")
    for page in _pages(campaign):
        for pk, answers, external_id, *_cell in page:
            source = str(external_id)
            for i, question, answer, _ in _questions(answers):
                keys.append(pair_key(pk, i))
                digests.append(_digest(source, i, question, answer))
    return PairIndex(keys, _repeats(keys, digests))


def _example_id(base: str, key: int, repeats: dict[int, int]) -> str:
    n = repeats.get(key)
    return base if n is None else duplicate_suffix(base, n)


def pair_ids(campaign: Campaign) -> list[str]:
    """The example ids of the approved QA pairs in ``_pairs``' order (unique)."""
    repeats = pair_id_index(campaign).repeats
    return [p["id"] for chunk in _pairs(campaign, repeats) for p in chunk]


def _pairs(campaign: Campaign, repeats: dict[int, int]) -> Iterator[list[dict[str, Any]]]:
    """Approved QA pairs, a chunk of writing assignments at a time. ``base`` is the
    pair id its linking items were derived from; ``id`` the example's (unique) id."""
    for page in _pages(campaign):
        chunk = []
        for pk, answers, external_id, category, complexity_type in page:
            source = str(external_id)
            for i, question, answer, pair in _questions(answers):
                base = _pair_id(source, i + 1, question, answer)
                key = pair_key(pk, i)
                chunk.append(
                    {
                        "key": key,
                        "assignment": pk,
                        "id": _example_id(base, key, repeats),
                        "base": base,
                        "question": question,
                        "answer": answer,
                        "pair": pair,
                        "category": category,
                        "complexityType": complexity_type,
                    }
                )
        if chunk:
            yield chunk


def _id_lookups(field: str, ids: Iterable[str]) -> list[Q]:
    """``field__in=ids`` as few lookups as the database allows: on PostgreSQL one, the
    ids as one array parameter (a chunk has tens of thousands of ids: Django prepares
    each parameter by itself); elsewhere one per ``IN_BATCH`` ids."""
    wanted = list(ids)
    if connection.vendor == "postgresql":
        return [Q(**{f"{field}__in": RawSQL("SELECT unnest(%s::text[])", [wanted])})]
    return [
        Q(**{f"{field}__in": wanted[start : start + IN_BATCH]})
        for start in range(0, len(wanted), IN_BATCH)
    ]


def _links(campaign: Campaign, part: str, ids: Iterable[str]) -> dict[str, list[Any]]:
    return {
        r["item__external_id"]: r["links"] or []
        for lookup in _id_lookups("item__external_id", ids)
        for r in EntityLinkResolution.objects.filter(
            lookup,
            item__stage__campaign=campaign,
            item__stage__task_type__in=task_type_names(dataset_part=part),
            status__in=AGREED,
        ).values("item__external_id", "links")
    }


def _labels(qids: set[str]) -> dict[str, str]:
    """Wikidata labels of ``qids`` from the linking candidate source (the offline index
    or the cached Wikidata client); an id it cannot name keeps its mention."""
    if not qids:
        return {}
    try:
        entities = candidate_source(background=True).get_entities(sorted(qids))
    except Exception:  # labels are a courtesy: without them the export goes on
        return {}
    return {qid: e["label"] for qid, e in entities.items() if e is not None and e["label"]}


def _question_values(campaign: Campaign, ids: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """The value spans (dates, ordinals, numbers, money, ...) proposed in each question
    linking item: the release lists them in ``questionEntity`` with their value."""
    out: dict[str, list[dict[str, Any]]] = {}
    rows = (
        row
        for lookup in _id_lookups("external_id", ids)
        for row in Item.objects.filter(
            lookup,
            stage__campaign=campaign,
            stage__task_type__in=task_type_names(dataset_part="question_links"),
        ).values("external_id", "data")
    )
    for row in rows:
        spans = (row["data"] or {}).get("proposed_spans") or []
        out[row["external_id"]] = [s for s in spans if s.get("kind") in VALUE_KINDS]
    return out


def _translations(campaign: Campaign, ids: Iterable[str]) -> dict[str, dict[str, str]]:
    """Accepted translations of each example (Mintaka §4.4): example id -> {code: text},
    from the approved answers of the campaign's translation stage."""
    wanted = list(ids)
    if connection.vendor == "postgresql":
        # ``data -> 'source_id'`` equal to one of the ids as a JSON string.
        lookups = [Q(data__source_id__in=RawSQL("SELECT to_jsonb(unnest(%s::text[]))", [wanted]))]
    else:
        lookups = [
            Q(data__source_id__in=wanted[start : start + IN_BATCH])
            for start in range(0, len(wanted), IN_BATCH)
        ]
    items: dict[str, dict[str, Any]] = {
        row["external_id"]: dict(row)
        for lookup in lookups
        for row in Item.objects.filter(
            lookup,
            stage__campaign=campaign,
            stage__task_type__in=task_type_names(dataset_part="translations"),
        ).values("id", "external_id", "data")
    }
    if not items:
        return {}
    out: dict[str, dict[str, str]] = {}
    hits: dict[int, list[dict[str, Any]]] = {}
    for link in HITItem.objects.filter(item_id__in=[r["id"] for r in items.values()]).values(
        "hit_id", "item__external_id"
    ):
        hits.setdefault(link["hit_id"], []).append(items[link["item__external_id"]])
    for hit_id, answers in (
        Assignment.objects.filter(hit_id__in=list(hits), status=AssignmentStatus.APPROVED)
        .order_by("submitted_at", "id")
        .values_list("hit_id", "answers")
    ):
        for item in hits[hit_id]:
            entry = answer_for_item(answers or {}, item)
            data = item["data"] or {}
            if entry and entry.get("translation"):
                out.setdefault(data["source_id"], {}).setdefault(
                    str(data.get("language")), str(entry["translation"])
                )
    return out


def _answer(
    p: dict[str, Any], mention: str, links: list[Any] | None, labels: dict[str, str]
) -> dict[str, Any]:
    """The ``answer`` object as released: answerType, answer, ``mention`` (the pair's
    ``linked_answer_text``: the counted entities for a count question), answerNum for
    count and superlative (§4.1)."""
    pair, ctype = p["pair"], p["complexityType"]
    kind = detect_answer_type(
        question=p["question"],
        answer=p["answer"],
        complexity_type=ctype,
        counted_entities=pair.get("counted_entities") or (),
    )
    values: list[Any] | None
    if kind == "boolean":
        values = [yes_no_value(p["answer"]) is True]
    elif kind == "numeric":
        number = numeric(pair.get("numeric_value")) if ctype == "count" else None
        values = [number if number is not None else answer_number(mention)]
    elif kind == "date":
        values = answer_dates(mention)
    elif kind == "string":
        values = [mention]
    else:
        entities = [
            {"name": link["qid"], "label": labels.get(link["qid"], link.get("text", ""))}
            for link in links or []
            if link.get("qid") and not link.get("none")
        ]
        values = entities or None
    answer: dict[str, Any] = {
        "answerType": MINTAKA_TYPES[AnswerType(kind)],
        "answer": values,
        "mention": mention,
    }
    number = numeric(pair.get("numeric_value"))
    if ctype in NUMERIC_CELLS and number is not None:
        answer["answerNum"] = number
    return answer


def _question_entities(
    links: list[Any], values: list[dict[str, Any]], labels: dict[str, str]
) -> list[dict[str, Any]]:
    """``questionEntity`` as released: linked entities (``name`` null and ``label``
    null when not in Wikidata), then the value spans not inside a linked one, each
    with its value as ``name`` and no label."""
    entities = [
        {
            "name": None if link.get("none") else link["qid"],
            "entityType": "entity",
            "label": None if link.get("none") else labels.get(link["qid"], link.get("text", "")),
            "mention": link.get("text", ""),
            "span": [link["start"], link["end"]],
        }
        for link in sorted(links, key=lambda lk: (lk["start"], lk["end"]))
        if link.get("qid") or link.get("none")
    ]
    taken = [(e["span"][0], e["span"][1]) for e in entities]
    for span in sorted(values, key=lambda s: s["start"]):
        if any(span["start"] < end and start < span["end"] for start, end in taken):
            continue
        entities.append(
            {
                "name": question_value(span["kind"], span["text"]),
                "entityType": span["kind"],
                "mention": span["text"],
                "span": [span["start"], span["end"]],
            }
        )
        taken.append((span["start"], span["end"]))
    return entities


def mintaka_examples(
    *, campaign: Campaign, repeats: dict[int, int] | None = None
) -> Iterator[dict[str, Any]]:
    """The campaign's examples in Mintaka's schema, in the order they were written,
    field by field and in the release's key order: id, question, translations,
    questionEntity, answer, category, complexityType. Ids are unique: a pair written
    twice is two examples (``duplicate_suffix``), linked alike; ``repeats`` is
    ``pair_id_index(...).repeats`` when the caller has it (read here otherwise)."""
    for _, example in keyed_examples(campaign=campaign, repeats=repeats):
        yield example


def keyed_examples(
    *, campaign: Campaign, repeats: dict[int, int] | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``mintaka_examples`` with each example's ``pair_key``."""
    if repeats is None:
        repeats = pair_id_index(campaign).repeats
    for chunk in _pairs(campaign, repeats):
        bases = list(dict.fromkeys(p["base"] for p in chunk))
        mentions = [
            linked_answer_text(p["pair"], complexity_type=p["complexityType"]) for p in chunk
        ]
        question_ids = {
            p["base"]: _question_id(p["base"], p["question"], mention)
            for p, mention in zip(chunk, mentions, strict=True)
        }
        answer_links = _links(campaign, "answer_links", bases)
        question_links = _links(campaign, "question_links", [*bases, *question_ids.values()])
        values = _question_values(campaign, question_ids.values())
        translations = _translations(campaign, bases)
        qids = {
            str(link["qid"])
            for links in (*answer_links.values(), *question_links.values())
            for link in links
            if link.get("qid") and not link.get("none")
        }
        labels = _labels(qids)
        writers = [p["assignment"] for p in chunk]
        calls, flags = model_calls_by_assignment(writers), llm_flags_by_assignment(writers)
        for p, mention in zip(chunk, mentions, strict=True):
            base = p["base"]
            qid_key = question_ids[base]
            links = question_links.get(qid_key, question_links.get(base, []))
            example = {
                "id": p["id"],
                "question": p["question"],
                "translations": translations.get(base, {}),
                "questionEntity": _question_entities(links, values.get(qid_key, []), labels),
                "answer": _answer(p, mention, answer_links.get(base), labels),
                "category": p["category"],
                "complexityType": p["complexityType"],
            }
            writer = p["assignment"]
            if calls.get(writer) or flags.get(writer) is not None:
                # Only where a model was in the loop: Mintaka's own schema otherwise.
                example["modelInTheLoop"] = {
                    "modelCalls": calls.get(writer, []),
                    "llmFlag": flags.get(writer),
                }
            yield (p["key"], example)


def split_codes(n: int, *, ratios: Sequence[Decimal], seed: int) -> bytearray:
    """The split of each of ``n`` examples in export order, as an index into ``SPLITS``:
    positions shuffled with ``seed``, then cut at the ratios (train and dev rounded
    down, test takes the rest): the same seed and data give the same split, and the
    sizes are exact (20,000 at 0.7/0.1/0.2: 14,000 / 2,000 / 4,000). One byte an
    example (the shuffle runs over an array of positions, not a list)."""
    order = array("q", range(n))
    random.Random(seed).shuffle(order)
    n_train = int(n * ratios[0])
    n_dev = int(n * ratios[1])
    codes = bytearray(b"\x02") * n
    for index in order[:n_train]:
        codes[index] = 0
    for index in order[n_train : n_train + n_dev]:
        codes[index] = 1
    return codes


def in_splits(
    keys: Sequence[int], codes: bytearray, rows: Iterable[tuple[int, Any]]
) -> Iterator[tuple[str, Any]]:
    """``(split, row)`` of each ``(key, row)`` whose key is in ``keys`` (both ascending):
    a row added after the keys were read waits for the next export."""
    position, n = 0, len(keys)
    for key, row in rows:
        while position < n and keys[position] < key:
            position += 1
        if position < n and keys[position] == key:
            yield SPLITS[codes[position]], row
            position += 1


def split_of(
    *, campaign: Campaign, ratios: Sequence[Decimal] = DEFAULT_RATIOS, seed: int = 0
) -> dict[str, str]:
    """Example id -> split name (``split_codes`` over the examples in export order)."""
    ids = pair_ids(campaign)
    codes = split_codes(len(ids), ratios=ratios, seed=seed)
    return {example_id: SPLITS[code] for example_id, code in zip(ids, codes, strict=True)}


def mintaka_stream(
    *,
    campaign: Campaign,
    split: str = "all",
    ratios: Sequence[Decimal] | str = DEFAULT_RATIOS,
    seed: int = 0,
    tally: Tally | None = None,
    **_: Any,
) -> Iterator[str]:
    """A JSON array of the campaign's examples (``split`` "all") or of one split
    ("train", "dev", "test" at ``ratios`` and ``seed``), yielded as it is read.
    ``ratios`` may be given as text (``"0.7,0.1,0.2"``, as a background job keeps it)."""
    if isinstance(ratios, str):
        ratios = parse_ratios(ratios)
    if split not in ("all", *SPLITS):
        raise ValueError(f"Unknown split {split!r}; use all, train, dev or test.")
    tally = tally or Tally()
    index = pair_id_index(campaign)
    examples = keyed_examples(campaign=campaign, repeats=index.repeats)
    if split == "all":
        chosen: Iterator[dict[str, Any]] = (example for _, example in examples)
    else:
        codes = split_codes(len(index.keys), ratios=ratios, seed=seed)
        chosen = (e for name, e in in_splits(index.keys, codes, examples) if name == split)
    yield "["
    for example in chosen:
        yield (",\n " if tally.rows else "\n ") + json.dumps(example, ensure_ascii=False)
        tally.rows += 1
    yield "\n]\n" if tally.rows else "]\n"
