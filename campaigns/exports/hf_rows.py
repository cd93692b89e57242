"""What the ``hf`` export holds: the dataset's shape (rows, their features, their
split) for a campaign.

Two shapes:

* **Mintaka** (a campaign from a recipe whose export is ``mintaka``): one row per QA
  pair in Mintaka's schema (``campaigns.exports.mintaka``), with the features the
  released ``mintaka_*.json`` files load with in ``datasets`` (``translations`` a
  struct of Mintaka's eight languages, ``questionEntity`` a list of JSON objects,
  ``answer`` a JSON object, whose ``answer`` mixes entities, numbers, booleans and text).
* **Examples** (every other campaign): one row per accepted example, the rows of the
  ``jsonl`` export (``campaigns.exports.provenance``, whose lineage it reuses), item
  data and answers as JSON text straight from the database.

Rows are read a chunk at a time (keyset pages) and each is put in ``train``, ``dev`` or
``test`` by a seeded shuffle of the examples' positions cut at the ratios
(``campaigns.exports.mintaka.split_codes``): the same seed and data give the same
split, with exact sizes. The first pass keeps only each row's integer key in an array
and a byte for its split (some 9 bytes a row, not a dict of ids), and the rows are
matched to them in key order (``in_splits``). ``datasets`` and ``pyarrow`` are imported
only when features are built, never when this module is.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import connection

from campaigns.exports.common import first_items, keyset_sql_pages, keyset_tuples
from campaigns.exports.mintaka import in_splits, keyed_examples, pair_id_index, split_codes
from campaigns.exports.model_loop import call_columns, model_calls_by_assignment
from campaigns.exports.provenance import _lineages
from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    HITItem,
    Item,
    Stage,
    Worker,
)
from campaigns.recipes import RECIPES

# Mintaka's languages, in the order of the released files' ``translations``.
MINTAKA_LANGUAGES = ("ar", "de", "ja", "hi", "pt", "es", "it", "fr")
NO_TRANSLATIONS = dict.fromkeys(MINTAKA_LANGUAGES)  # shared by the rows: only read


@dataclass(frozen=True)
class DatasetShape:
    """One way of turning a campaign into dataset rows."""

    name: str  # "mintaka" or "examples"
    description: str
    # () -> the datasets.Features of a row (imports datasets when called)
    features: Callable[[], Any]
    # campaign -> (the rows' keys, ascending, in an array (for the split), and what
    # ``rows`` needs of that reading: Mintaka's repeated pairs)
    ids: Callable[[Campaign], tuple[array[int], Any]]
    # (campaign, reveal, ids' second value) -> (key, row) pairs by ascending key, rows
    # encoded for Arrow
    rows: Callable[[Campaign, bool, Any], Iterator[tuple[int, dict[str, Any]]]]


# --- Mintaka ------------------------------------------------------------------------


def mintaka_features() -> Any:
    """The features ``datasets`` gives the released Mintaka JSON files."""
    from datasets import Features, Json, List, Value

    return Features(
        {
            "id": Value("string"),
            "question": Value("string"),
            "translations": {lang: Value("string") for lang in MINTAKA_LANGUAGES},
            "questionEntity": List(Json()),
            "answer": Json(),
            "category": Value("string"),
            "complexityType": Value("string"),
        }
    )


def _mintaka_ids(campaign: Campaign) -> tuple[array[int], Any]:
    index = pair_id_index(campaign)
    return index.keys, index.repeats


# ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``, one encoder for all.
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _mintaka_rows(
    campaign: Campaign, reveal: bool, repeats: Any
) -> Iterator[tuple[int, dict[str, Any]]]:
    # Mintaka's rows name no worker: ``reveal`` changes nothing here.
    for key, example in keyed_examples(campaign=campaign, repeats=repeats):
        given = example.get("translations")
        translations = (
            (
                {
                    lang: (str(given[lang]) if given.get(lang) is not None else None)
                    for lang in MINTAKA_LANGUAGES
                }
                if given
                else NO_TRANSLATIONS
            )
            if isinstance(given, dict)
            else None
        )
        yield (
            key,
            {
                "id": example["id"],
                "question": example["question"],
                "translations": translations,
                "questionEntity": [_dumps(e) for e in example["questionEntity"]],
                "answer": _dumps(example["answer"]),
                "category": example["category"],
                "complexityType": example["complexityType"],
            },
        )


# --- Accepted examples --------------------------------------------------------------


def examples_features() -> Any:
    """One accepted example: who did what on which item, and where the item came from."""
    from datasets import Features, Json, List, Value

    return Features(
        {
            "assignment": Value("int64"),
            "stage": Value("string"),
            "task_type": Value("string"),
            "item_external_id": Value("string"),
            "item_data": Json(),
            "worker": Value("string"),
            "answers": Json(),
            "submitted_at": Value("timestamp[us, tz=UTC]"),
            "decided_at": Value("timestamp[us, tz=UTC]"),
            "decision_source": Value("string"),
            "lineage": List(
                {"stage": Value("int64"), "assignment": Value("int64"), "worker": Value("string")}
            ),
            "model_calls": List(
                {
                    name: Value("int64") if name == "try" else Value("string")
                    for name in call_columns()
                }
            ),
            "llm_flag": Json(),
        }
    )


def _examples_ids(campaign: Campaign) -> tuple[array[int], Any]:
    queryset = Assignment.objects.filter(
        hit__stage__campaign=campaign, status=AssignmentStatus.APPROVED
    ).order_by("pk")
    return array("q", queryset.values_list("pk", flat=True).iterator(chunk_size=20000)), None


# One page of accepted examples, keyset-paged by assignment id: JSON columns come as
# the database's JSON text (no decoding and re-encoding in Python), the item is the
# HIT's first. Plain SQL on PostgreSQL: the ORM's per-row conversions cost more than
# the export; ``_portable_examples_pages`` reads the same rows through the ORM on any
# database (the embedded SQLite default), JSON encoded in Python.
EXAMPLES_PAGE_SQL = """
SELECT a.id, s.name, s.task_type, w.pseudonym, w.external_id, a.answers::text,
       a.submitted_at, a.decided_at, a.decision_source, it.external_id, it.data::text,
       it.source_assignment_id, a.llm_flag::text
FROM {assignment} a
JOIN {hit} h ON h.id = a.hit_id
JOIN {stage} s ON s.id = h.stage_id
JOIN {worker} w ON w.id = a.worker_id
LEFT JOIN LATERAL (
    SELECT hi.item_id FROM {hititem} hi WHERE hi.hit_id = a.hit_id
    ORDER BY hi.position, hi.id LIMIT 1
) first_item ON TRUE
LEFT JOIN {item} it ON it.id = first_item.item_id
WHERE s.campaign_id = %s AND a.status = %s AND a.id > %s
ORDER BY a.id
LIMIT %s
"""
EXAMPLES_PAGE = 10_000


def _pg_examples_pages(campaign: Campaign) -> Iterator[list[tuple[Any, ...]]]:
    sql = EXAMPLES_PAGE_SQL.format(
        assignment=Assignment._meta.db_table,
        hit=HIT._meta.db_table,
        stage=Stage._meta.db_table,
        worker=Worker._meta.db_table,
        hititem=HITItem._meta.db_table,
        item=Item._meta.db_table,
    )
    params = [campaign.pk, AssignmentStatus.APPROVED]
    yield from keyset_sql_pages(sql, params, chunk=EXAMPLES_PAGE)


def _json_text(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def _portable_examples_pages(campaign: Campaign) -> Iterator[list[tuple[Any, ...]]]:
    """``EXAMPLES_PAGE_SQL``'s rows through the ORM, on any database."""
    for page in keyset_tuples(
        Assignment.objects.filter(hit__stage__campaign=campaign, status=AssignmentStatus.APPROVED),
        (
            "hit__stage__name",
            "hit__stage__task_type",
            "worker__pseudonym",
            "worker__external_id",
            "answers",
            "submitted_at",
            "decided_at",
            "decision_source",
            "hit_id",
            "llm_flag",
        ),
        chunk=EXAMPLES_PAGE,
    ):
        firsts = first_items(
            sorted({r[9] for r in page}),
            "item__external_id",
            "item__data",
            "item__source_assignment_id",
        )
        none = (None, None, None)
        yield [
            (
                *r[:5],
                _json_text(r[5]),
                *r[6:9],
                item[0],
                _json_text(item[1]),
                item[2],
                _json_text(r[10]),
            )
            for r in page
            for item in [firsts.get(r[9], none)]
        ]


def _examples_rows(
    campaign: Campaign, reveal: bool, _: Any
) -> Iterator[tuple[int, dict[str, Any]]]:
    pages = (
        _pg_examples_pages(campaign)
        if connection.vendor == "postgresql"
        else _portable_examples_pages(campaign)
    )
    for page in pages:
        lineages = _lineages({r[0]: r[11] for r in page if r[11] is not None}, reveal)
        calls = model_calls_by_assignment(r[0] for r in page)
        for r in page:
            yield (
                r[0],
                {
                    "assignment": r[0],
                    "stage": r[1],
                    "task_type": r[2],
                    "item_external_id": r[9],
                    "item_data": r[10],
                    "worker": r[4] if reveal else r[3],
                    "answers": r[5],
                    "submitted_at": r[6],
                    "decided_at": r[7],
                    "decision_source": r[8],
                    "lineage": lineages.get(r[0], []),
                    "model_calls": calls.get(r[0], []),
                    "llm_flag": r[12],
                },
            )


MINTAKA_SHAPE = DatasetShape(
    name="mintaka",
    description="One row per question in Mintaka's schema (Sen et al., 2022).",
    features=mintaka_features,
    ids=_mintaka_ids,
    rows=_mintaka_rows,
)
EXAMPLES_SHAPE = DatasetShape(
    name="examples",
    description="One row per accepted example (an approved assignment) with its lineage.",
    features=examples_features,
    ids=_examples_ids,
    rows=_examples_rows,
)


def dataset_shape(*, campaign: Campaign) -> DatasetShape:
    """Mintaka's shape for a campaign from a recipe exported in Mintaka's schema, the
    accepted examples otherwise."""
    recipe = RECIPES.get(campaign.recipe)
    if recipe is not None and recipe.export_format == MINTAKA_SHAPE.name:
        return MINTAKA_SHAPE
    return EXAMPLES_SHAPE


def dataset_rows(
    *,
    campaign: Campaign,
    ratios: Sequence[Decimal],
    seed: int,
    reveal: bool = False,
    shape: DatasetShape | None = None,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(split, row)`` for every row of the campaign's dataset, in id order, read a
    chunk at a time."""
    shape = shape or dataset_shape(campaign=campaign)
    keys, context = shape.ids(campaign)
    codes = split_codes(len(keys), ratios=ratios, seed=seed)
    # A row approved after the keys were read waits for the next export.
    yield from in_splits(keys, codes, shape.rows(campaign, reveal, context))
