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
from typing import Any

from django.db.models.expressions import RawSQL

from campaigns.exports.common import Tally, keyset_rows
from campaigns.models import Assignment, AssignmentStatus, Campaign, HITItem
from campaigns.tasktypes.base import derived_external_id
from linking.answer_types import AnswerType, detect_answer_type
from linking.models import EntityLinkResolution, ResolutionStatus

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
_YES = {"yes", "true", "y"}


def parse_ratios(text: str) -> tuple[Decimal, Decimal, Decimal]:
    """``"0.7,0.1,0.2"`` as three non-negative ratios summing to 1 (ValueError if not)."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        ratios = tuple(Decimal(p) for p in parts)
    except ArithmeticError:
        raise ValueError("Ratios are three numbers such as 0.7,0.1,0.2.") from None
    if len(ratios) != 3 or any(r < 0 for r in ratios) or sum(ratios) != 1:
        raise ValueError("Give three non-negative ratios (train, dev, test) that sum to 1.")
    return ratios[0], ratios[1], ratios[2]


def _pairs(campaign: Campaign) -> Iterator[list[dict[str, Any]]]:
    """Approved QA pairs, a chunk of writing assignments at a time."""
    queryset = Assignment.objects.filter(
        hit__stage__campaign=campaign,
        hit__stage__task_type="question_writing",
        status=AssignmentStatus.APPROVED,
    )
    for rows in keyset_rows(queryset, ("hit_id", "answers")):
        cells: dict[int, Any] = {}
        for link in (
            HITItem.objects.filter(hit_id__in={r["hit_id"] for r in rows})
            .order_by("hit_id", "position")
            .values("hit_id", "item__external_id", "item__data")
        ):
            cells.setdefault(link["hit_id"], link)
        chunk = []
        for r in rows:
            cell = cells.get(r["hit_id"])
            if cell is None:
                continue
            data = cell["item__data"] or {}
            for i, pair in enumerate((r["answers"] or {}).get("questions", [])):
                question, answer = str(pair.get("question", "")), str(pair.get("answer", ""))
                chunk.append(
                    {
                        "id": derived_external_id(
                            str(cell["item__external_id"]), f"q{i + 1}", [question, answer]
                        ),
                        "question": question,
                        "answer": answer,
                        "pair": pair,
                        "category": data.get("topic", ""),
                        "complexityType": data.get("complexity_type", "generic"),
                    }
                )
        if chunk:
            yield chunk


def _links(campaign: Campaign, task_type: str, ids: Iterable[str]) -> dict[str, list[Any]]:
    return {
        r["item__external_id"]: r["links"] or []
        for r in EntityLinkResolution.objects.filter(
            item__stage__campaign=campaign,
            item__stage__task_type=task_type,
            # One array parameter, not one per id: a chunk has tens of thousands of ids.
            item__external_id__in=RawSQL("SELECT unnest(%s::text[])", [list(ids)]),
            status__in=AGREED,
        ).values("item__external_id", "links")
    }


def _labels(qids: set[str]) -> dict[str, str]:
    """Wikidata labels of ``qids`` from the linking candidate source (the offline index
    or the cached Wikidata client); an id it cannot name keeps its mention."""
    if not qids:
        return {}
    from linking.client import candidate_source

    try:
        entities = candidate_source(background=True).get_entities(sorted(qids))
    except Exception:  # labels are a courtesy: without them the export goes on
        return {}
    return {qid: e["label"] for qid, e in entities.items() if e is not None and e["label"]}


def _answer_values(kind: AnswerType, pair: dict[str, Any], answer: str) -> list[Any] | None:
    if kind == AnswerType.BOOLEAN:
        return [answer.strip(" .!").casefold() in _YES]
    if kind == AnswerType.NUMERIC:
        value = pair.get("numeric_value")
        return [value if value is not None else answer]
    if kind in (AnswerType.DATE, AnswerType.STRING):
        return [answer]
    return None


def mintaka_examples(*, campaign: Campaign) -> Iterator[dict[str, Any]]:
    """The campaign's examples in Mintaka's schema, in the order they were written."""
    for chunk in _pairs(campaign):
        ids = [p["id"] for p in chunk]
        question_ids = {
            p["id"]: derived_external_id(
                p["id"], "q", {"question": p["question"], "answer": p["answer"]}
            )
            for p in chunk
        }
        answer_links = _links(campaign, "answer_entity_linking", ids)
        question_links = _links(campaign, "question_entity_linking", [*ids, *question_ids.values()])
        qids = {
            str(link["qid"])
            for links in (*answer_links.values(), *question_links.values())
            for link in links
            if link.get("qid") and not link.get("none")
        }
        labels = _labels(qids)
        for p in chunk:
            kind = detect_answer_type(p["answer"], question=p["question"])
            answer: dict[str, Any] = {
                "answerType": MINTAKA_TYPES[kind],
                "answer": _answer_values(kind, p["pair"], p["answer"]),
                "mention": p["answer"],
            }
            if kind == AnswerType.ENTITY and p["id"] in answer_links:
                answer["answer"] = [
                    {"name": link["qid"], "label": labels.get(link["qid"], link.get("text", ""))}
                    for link in answer_links[p["id"]]
                    if link.get("qid") and not link.get("none")
                ]
            if p["complexityType"] == "count" and p["pair"].get("numeric_value") is not None:
                answer["answerNum"] = p["pair"]["numeric_value"]
            links = question_links.get(question_ids[p["id"]], question_links.get(p["id"], []))
            example: dict[str, Any] = {
                "id": p["id"],
                "question": p["question"],
                "questionEntity": [
                    {
                        "name": link["qid"],
                        "entityType": "entity",
                        "label": labels.get(link["qid"], link.get("text", "")),
                        "mention": link.get("text", ""),
                        "span": [link["start"], link["end"]],
                    }
                    for link in links
                    if link.get("qid") and not link.get("none")
                ],
                "answer": answer,
                "category": p["category"],
                "complexityType": p["complexityType"],
            }
            if isinstance(p["pair"].get("translations"), dict):
                example["translations"] = p["pair"]["translations"]
            yield example


def split_of(
    *, campaign: Campaign, ratios: Sequence[Decimal] = DEFAULT_RATIOS, seed: int = 0
) -> dict[str, str]:
    """Example id -> split name: the ids shuffled with ``seed``, then cut at the
    ratios (train and dev rounded down, test takes the rest): the same seed and data
    give the same split, and the sizes are exact (20,000 at 0.7/0.1/0.2: 14,000 /
    2,000 / 4,000)."""
    ids = [p["id"] for chunk in _pairs(campaign) for p in chunk]
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
    ratios: Sequence[Decimal] = DEFAULT_RATIOS,
    seed: int = 0,
    tally: Tally | None = None,
    **_: Any,
) -> Iterator[str]:
    """A JSON array of the campaign's examples (``split`` "all") or of one split
    ("train", "dev", "test" at ``ratios`` and ``seed``), yielded as it is read."""
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
