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
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal
from json.encoder import encode_basestring as _json_string  # as json.dumps(ensure_ascii=False)
from typing import Any

from django.db.models.expressions import RawSQL

from campaigns.exports.common import CHUNK, Tally, keyset_sql_pages
from campaigns.exports.mintaka_values import (
    answer_dates,
    answer_number,
    numeric,
    question_value,
)
from campaigns.models import HIT, Assignment, AssignmentStatus, Campaign, HITItem, Item, Stage
from campaigns.tasktypes import task_type_name_of, task_type_names
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
# position): the answers as the database's JSON text (decoded here, without the ORM's
# per-row conversions), the item's external id, and its topic and complexity type as
# text with their JSON type (NULL when the key is missing). An assignment whose HIT has
# no item is left out.
PAIRS_PAGE_SQL = """
SELECT a.id, a.answers::text, it.external_id,
       it.data ->> 'topic', jsonb_typeof(it.data -> 'topic'),
       it.data ->> 'complexity_type', jsonb_typeof(it.data -> 'complexity_type')
FROM {assignment} a
JOIN {hit} h ON h.id = a.hit_id
JOIN {stage} s ON s.id = h.stage_id
JOIN LATERAL (
    SELECT hi.item_id FROM {hititem} hi WHERE hi.hit_id = a.hit_id
    ORDER BY hi.position, hi.id LIMIT 1
) first_item ON TRUE
JOIN {item} it ON it.id = first_item.item_id
WHERE s.campaign_id = %s AND s.task_type = %s AND a.status = %s AND a.id > %s
ORDER BY a.id
LIMIT %s
"""


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


def _pages(campaign: Campaign) -> Iterator[list[tuple[Any, ...]]]:
    """``PAIRS_PAGE_SQL``'s rows, a page of ``CHUNK`` writing assignments at a time."""
    sql = PAIRS_PAGE_SQL.format(
        assignment=Assignment._meta.db_table,
        hit=HIT._meta.db_table,
        stage=Stage._meta.db_table,
        hititem=HITItem._meta.db_table,
        item=Item._meta.db_table,
    )
    yield from keyset_sql_pages(
        sql,
        [campaign.pk, task_type_name_of(dataset_part="qa_pairs"), AssignmentStatus.APPROVED],
        chunk=CHUNK,
    )


def pair_ids(campaign: Campaign) -> list[str]:
    """The ids of the approved QA pairs in ``_pairs``' order, without the rest of them
    (the split is drawn over all ids before the first row is written)."""
    ids = []
    for page in _pages(campaign):
        for _, answers_text, external_id, *_cell in page:
            source = str(external_id)
            answers = _json_or(answers_text, None)
            for i, pair in enumerate((answers or {}).get("questions", [])):
                question, answer = str(pair.get("question", "")), str(pair.get("answer", ""))
                ids.append(_pair_id(source, i + 1, question, answer))
    return ids


def _pairs(campaign: Campaign) -> Iterator[list[dict[str, Any]]]:
    """Approved QA pairs, a chunk of writing assignments at a time."""
    for page in _pages(campaign):
        chunk = []
        for _, answers_text, external_id, topic, topic_kind, ctype, ctype_kind in page:
            answers = _json_or(answers_text, None)
            source = str(external_id)
            category = _json_value(topic, topic_kind, "")
            complexity_type = _json_value(ctype, ctype_kind, "generic")
            for i, pair in enumerate((answers or {}).get("questions", [])):
                question, answer = str(pair.get("question", "")), str(pair.get("answer", ""))
                chunk.append(
                    {
                        "id": _pair_id(source, i + 1, question, answer),
                        "question": question,
                        "answer": answer,
                        "pair": pair,
                        "category": category,
                        "complexityType": complexity_type,
                    }
                )
        if chunk:
            yield chunk


def _text_array(ids: Iterable[str]) -> RawSQL:
    """``ids`` as one array parameter for an ``__in`` lookup, not one parameter per id
    (a chunk has tens of thousands of ids: Django prepares each parameter by itself)."""
    return RawSQL("SELECT unnest(%s::text[])", [list(ids)])


def _links(campaign: Campaign, part: str, ids: Iterable[str]) -> dict[str, list[Any]]:
    return {
        r["item__external_id"]: r["links"] or []
        for r in EntityLinkResolution.objects.filter(
            item__stage__campaign=campaign,
            item__stage__task_type__in=task_type_names(dataset_part=part),
            item__external_id__in=_text_array(ids),
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
    for row in Item.objects.filter(
        stage__campaign=campaign,
        stage__task_type__in=task_type_names(dataset_part="question_links"),
        external_id__in=_text_array(ids),
    ).values("external_id", "data"):
        spans = (row["data"] or {}).get("proposed_spans") or []
        out[row["external_id"]] = [s for s in spans if s.get("kind") in VALUE_KINDS]
    return out


def _translations(campaign: Campaign, ids: Iterable[str]) -> dict[str, dict[str, str]]:
    """Accepted translations of each example (Mintaka §4.4): example id -> {code: text},
    from the approved answers of the campaign's translation stage."""
    items: dict[str, dict[str, Any]] = {
        row["external_id"]: dict(row)
        for row in Item.objects.filter(
            stage__campaign=campaign,
            stage__task_type__in=task_type_names(dataset_part="translations"),
            # ``data -> 'source_id'`` equal to one of the ids as a JSON string.
            data__source_id__in=RawSQL("SELECT to_jsonb(unnest(%s::text[]))", [list(ids)]),
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


def mintaka_examples(*, campaign: Campaign) -> Iterator[dict[str, Any]]:
    """The campaign's examples in Mintaka's schema, in the order they were written,
    field by field and in the release's key order: id, question, translations,
    questionEntity, answer, category, complexityType."""
    for chunk in _pairs(campaign):
        ids = [p["id"] for p in chunk]
        mentions = [
            linked_answer_text(p["pair"], complexity_type=p["complexityType"]) for p in chunk
        ]
        question_ids = {
            p["id"]: _question_id(p["id"], p["question"], mention)
            for p, mention in zip(chunk, mentions, strict=True)
        }
        answer_links = _links(campaign, "answer_links", ids)
        question_links = _links(campaign, "question_links", [*ids, *question_ids.values()])
        values = _question_values(campaign, question_ids.values())
        translations = _translations(campaign, ids)
        qids = {
            str(link["qid"])
            for links in (*answer_links.values(), *question_links.values())
            for link in links
            if link.get("qid") and not link.get("none")
        }
        labels = _labels(qids)
        for p, mention in zip(chunk, mentions, strict=True):
            qid_key = question_ids[p["id"]]
            links = question_links.get(qid_key, question_links.get(p["id"], []))
            yield {
                "id": p["id"],
                "question": p["question"],
                "translations": translations.get(p["id"], {}),
                "questionEntity": _question_entities(links, values.get(qid_key, []), labels),
                "answer": _answer(p, mention, answer_links.get(p["id"]), labels),
                "category": p["category"],
                "complexityType": p["complexityType"],
            }


def split_of(
    *, campaign: Campaign, ratios: Sequence[Decimal] = DEFAULT_RATIOS, seed: int = 0
) -> dict[str, str]:
    """Example id -> split name: the ids shuffled with ``seed``, then cut at the
    ratios (train and dev rounded down, test takes the rest): the same seed and data
    give the same split, and the sizes are exact (20,000 at 0.7/0.1/0.2: 14,000 /
    2,000 / 4,000)."""
    ids = pair_ids(campaign)
    order = list(range(len(ids)))
    random.Random(seed).shuffle(order)
    n_train = int(len(ids) * ratios[0])
    n_dev = int(len(ids) * ratios[1])
    out = {}
    for rank, index in enumerate(order):
        out[ids[index]] = "train" if rank < n_train else "dev" if rank < n_train + n_dev else "test"
    return out


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
    membership = split_of(campaign=campaign, ratios=ratios, seed=seed) if split != "all" else None
    yield "["
    for example in mintaka_examples(campaign=campaign):
        if membership is not None and membership.get(example["id"]) != split:
            continue
        yield (",\n " if tally.rows else "\n ") + json.dumps(example, ensure_ascii=False)
        tally.rows += 1
    yield "\n]\n" if tally.rows else "]\n"
