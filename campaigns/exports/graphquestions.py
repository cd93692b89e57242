"""The ``graphquestions`` export: one JSON line per accepted paraphrase, with the
canonical question, its graph query, SPARQL, answers and characteristics, and a
train/test split grouped by graph query.

Su et al. (2016) §7.2: GraphQuestions is split evenly into training and testing,
"all the paraphrases of the same graph query are in the same set". The split here
shuffles the queries (the paraphrasing items) with ``seed`` and cuts them at
``ratio`` (default one half): no query is in two splits, and the same seed and data
give the same split.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from campaigns.exports.common import Tally, keyset_rows
from campaigns.exports.model_loop import llm_flags_by_assignment, model_calls_by_assignment
from campaigns.models import Assignment, AssignmentStatus, Campaign, HITItem, Item
from campaigns.tasktypes import task_type_names
from campaigns.tasktypes.base import answer_for_item

SPLITS = ("train", "test")
DEFAULT_RATIO = Decimal("0.5")


def graph_query_split(
    *, campaign: Campaign, ratio: Decimal = DEFAULT_RATIO, seed: int = 0
) -> dict[str, str]:
    """Paraphrasing item (graph query) id -> "train" or "test": the queries shuffled
    with ``seed``, the first ``ratio`` of them (rounded down) train, the rest test."""
    ids = sorted(
        Item.objects.filter(
            stage__campaign=campaign,
            stage__task_type__in=task_type_names(dataset_part="paraphrases"),
        ).values_list("external_id", flat=True)
    )
    random.Random(seed).shuffle(ids)
    n_train = int(len(ids) * ratio)
    return {qid: "train" if rank < n_train else "test" for rank, qid in enumerate(ids)}


def _rows(campaign: Campaign, split_of: dict[str, str]) -> Iterator[dict[str, Any]]:
    queryset = Assignment.objects.filter(
        hit__stage__campaign=campaign,
        hit__stage__task_type__in=task_type_names(dataset_part="paraphrases"),
        status=AssignmentStatus.APPROVED,
    )
    for chunk in keyset_rows(queryset, ("hit_id", "answers")):
        items: dict[int, list[dict[str, Any]]] = {}
        for link in HITItem.objects.filter(hit_id__in={r["hit_id"] for r in chunk}).values(
            "hit_id", "item__external_id", "item__data"
        ):
            items.setdefault(link["hit_id"], []).append(
                {"external_id": link["item__external_id"], "data": link["item__data"] or {}}
            )
        ids = [r["id"] for r in chunk]
        calls, flags = model_calls_by_assignment(ids), llm_flags_by_assignment(ids)
        for row in chunk:
            extra: dict[str, Any] = {}
            if calls.get(row["id"]) or flags.get(row["id"]) is not None:
                # Only where a model was in the loop: GraphQuestions' fields otherwise.
                extra = {"model_calls": calls.get(row["id"], []), "llm_flag": flags.get(row["id"])}
            for item in items.get(row["hit_id"], []):
                entry = answer_for_item(row["answers"] or {}, item) or {}
                data = item["data"]
                for text in entry.get("paraphrases", []):
                    yield {
                        "question": text,
                        "canonical_question": data.get("canonical_question", ""),
                        "graph_query_id": item["external_id"],
                        "split": split_of.get(item["external_id"], "test"),
                        "answer": data.get("answer", []),
                        "sparql": data.get("sparql", ""),
                        "graph_query": data.get("graph_query"),
                        "characteristics": data.get("characteristics", {}),
                        "entities": data.get("entities", []),
                        **extra,
                    }


def graphquestions_stream(
    *,
    campaign: Campaign,
    split: str = "all",
    ratio: Decimal | str = DEFAULT_RATIO,
    seed: int = 0,
    tally: Tally | None = None,
    **_: Any,
) -> Iterator[str]:
    """JSON Lines of the accepted paraphrases (``split`` "all", "train" or "test")."""
    if split not in ("all", *SPLITS):
        raise ValueError(f"Unknown split {split!r}; use all, train or test.")
    try:
        share = Decimal(str(ratio))
    except ArithmeticError:
        raise ValueError("The ratio is the training share, e.g. 0.5.") from None
    if not 0 <= share <= 1:
        raise ValueError("The ratio is the training share, between 0 and 1.")
    tally = tally or Tally()
    split_of = graph_query_split(campaign=campaign, ratio=share, seed=int(seed))
    for row in _rows(campaign, split_of):
        if split != "all" and row["split"] != split:
            continue
        tally.rows += 1
        yield json.dumps(row, ensure_ascii=False) + "\n"
