"""The Mintaka export's rows read a page at a time: ids written without ``json.dumps``
equal ``derived_external_id``'s; the pair's cell (topic, complexity type) read as the
JSON it holds; a HIT's first item by position; translations and question values found
by the ids passed as one array parameter. Each read is checked on both paths: raw SQL
(PostgreSQL's) and the ORM's (every other database: the embedded SQLite default), which
give the same rows; a pair two workers wrote alike is two examples with unique ids."""

from __future__ import annotations

import json

import pytest

from campaigns.design.services import stage_add
from campaigns.exports import common, hf_rows, mintaka
from campaigns.exports.hf_rows import dataset_rows, dataset_shape
from campaigns.exports.mintaka import (
    DEFAULT_RATIOS,
    SPLITS,
    _pair_id,
    _question_id,
    _question_values,
    _translations,
    duplicate_suffix,
    in_splits,
    mintaka_examples,
    mintaka_stream,
    pair_ids,
    split_codes,
)
from campaigns.models import Assignment, AssignmentStatus, HITItem, Item, ItemSource
from campaigns.tasktypes.base import derived_external_id
from campaigns.work.decisions import assignment_approve
from tests.helpers import local_pipeline, submitted_assignment
from tests.validation.db_helpers import hits, make_stage, submit, worker


class NotPostgres:
    vendor = "sqlite"


@pytest.fixture(params=["postgresql", "portable"])
def path(request, monkeypatch):
    """Each read on PostgreSQL's raw SQL path and on the portable ORM path (which the
    embedded SQLite default takes), the latter with an id batch of 1 so that every
    lookup is split."""
    if request.param == "portable":
        for module in (mintaka, hf_rows):
            monkeypatch.setattr(module, "connection", NotPostgres())
        for module in (mintaka, common):
            monkeypatch.setattr(module, "IN_BATCH", 1)
    return request.param


TRICKY = [
    "Which river is longer?",
    'He said "yes" \\ no',
    "Zürich \u2013 São Paulo 東京 \u2028 \U0001f30d",
    "tab\tnew\nline\x01\x1f\x7f",
    "",
    "x" * 300,
]


@pytest.mark.parametrize("question", TRICKY)
@pytest.mark.parametrize("answer", ["The Nile", 'a "quoted" \\ answer', "\u00e9\n"])
def test_pair_and_question_ids_equal_derived_external_id(question, answer):
    for source in ("cell-1", "c" * 195):  # a long source is shortened with its digest
        assert _pair_id(source, 3, question, answer) == derived_external_id(
            source, "q3", [question, answer]
        )
        example_id = derived_external_id(source, "q1", [question, answer])
        assert _question_id(example_id, question, answer) == derived_external_id(
            example_id, "q", {"question": question, "answer": answer}
        )


@pytest.mark.django_db
def test_cells_are_read_as_the_json_they_hold(requester, path):
    campaign, writing, _ = local_pipeline(requester, slug="cells", topics=("a", "b", "c", "d"))
    cells = {
        "cell-0": {"topic": "rivers", "complexity_type": "count"},
        "cell-1": {"topic": 7},  # not text; no complexity type: "generic"
        "cell-2": {"topic": None, "complexity_type": "yesno"},
        "cell-3": {},
    }
    for n in range(4):
        written = submitted_assignment(writing, question=f"Which river number {n} is longer?")
        assignment_approve(assignment=written, decided_by=requester, source="requester")
    for external_id, data in cells.items():  # the export reads the cells as they are now
        Item.objects.filter(stage=writing, external_id=external_id).update(data=data)

    examples = list(mintaka_examples(campaign=campaign))

    by_cell = {e["id"].split("/")[0]: e for e in examples}
    assert {k: (e["category"], e["complexityType"]) for k, e in by_cell.items()} == {
        "cell-0": ("rivers", "count"),
        "cell-1": (7, "generic"),
        "cell-2": (None, "yesno"),
        "cell-3": ("", "generic"),
    }
    for e in examples:
        cell = e["id"].split("/")[0]
        assert e["id"] == derived_external_id(cell, "q1", [e["question"], "The Nile"])


@pytest.mark.django_db
def test_first_item_of_the_hit_by_position(requester, path):
    campaign, writing, _ = local_pipeline(requester, slug="first-item", topics=("a",))
    written = submitted_assignment(writing)
    assignment_approve(assignment=written, decided_by=requester, source="requester")
    extra = Item.objects.create(
        stage=writing, external_id="before", data={"topic": "z"}, source=ItemSource.UPLOADED
    )
    HITItem.objects.filter(hit=written.hit).update(position=2)
    HITItem.objects.create(hit=written.hit, item=extra, position=1)

    (example,) = mintaka_examples(campaign=campaign)

    assert example["id"].startswith("before/q1-")
    assert example["category"] == "z"


@pytest.mark.django_db
def test_translations_are_matched_by_the_example_id_as_json_text(path):
    sources = ["ex-1", 5, "ex-3"]  # the number 5 is no match for the id "5"
    stage = make_stage(
        items=3,
        task_type="translation",
        data=lambda n: {"source_id": sources[n], "language": ("de", "fr", "it")[n]},
        per_hit=1,
    )
    for n, hit in enumerate(hits(stage)):
        submit(hit, worker(f"t{n}"), {"translation": f"T{n}"}, status=AssignmentStatus.APPROVED)

    assert _translations(stage.campaign, ["ex-1", "5", "ex-3", "ex-9"]) == {
        "ex-1": {"de": "T0"},
        "ex-3": {"it": "T2"},
    }


@pytest.mark.django_db
def test_question_values_are_matched_by_id(requester, path):
    campaign, _writing, _ = local_pipeline(requester, slug="by-id", topics=("a",))
    linking = stage_add(campaign=campaign, name="Questions", task_type="question_entity_linking")
    span = {"start": 0, "end": 4, "text": "1942", "kind": "date"}
    for external_id in ("q-1", "q-2"):
        Item.objects.create(
            stage=linking,
            external_id=external_id,
            data={"proposed_spans": [span, {**span, "kind": "person"}]},
            source=ItemSource.UPLOADED,
        )

    assert _question_values(campaign, ["q-1", "q-9"]) == {"q-1": [span]}


@pytest.mark.django_db
def test_both_paths_give_the_same_examples_and_dataset_rows(linked, monkeypatch):
    """The linked example of ``linked`` through both paths: the same Mintaka rows,
    split and Hugging Face rows."""
    campaign = linked[0]

    def read() -> tuple[str, list[tuple[str, dict]]]:
        text = "".join(mintaka_stream(campaign=campaign))
        shape = dataset_shape(campaign=campaign)
        rows = list(dataset_rows(campaign=campaign, ratios=DEFAULT_RATIOS, seed=3, shape=shape))
        return text, rows

    on_postgresql = read()
    for module in (mintaka, hf_rows):
        monkeypatch.setattr(module, "connection", NotPostgres())
    portable = read()

    assert portable == on_postgresql
    (example,) = json.loads(on_postgresql[0])
    assert example["answer"]["answer"][0]["name"] == "Q3392"  # the links were found
    assert [e["name"] for e in example["questionEntity"] if e["name"]] == ["Q3392", "Q3783"]


@pytest.mark.django_db
def test_examples_rows_are_the_same_on_both_paths(linked, monkeypatch):
    """The accepted-examples shape (every recipe but Mintaka's): the same rows, the
    JSON columns equal as JSON (PostgreSQL writes its own JSON text)."""
    campaign = linked[0]
    shape = hf_rows.EXAMPLES_SHAPE

    def read() -> list[tuple[str, dict]]:
        rows = list(dataset_rows(campaign=campaign, ratios=DEFAULT_RATIOS, seed=1, shape=shape))
        for _, row in rows:
            row["answers"] = json.loads(row["answers"])
            row["item_data"] = json.loads(row["item_data"])
        return rows

    on_postgresql = read()
    for module in (mintaka, hf_rows):
        monkeypatch.setattr(module, "connection", NotPostgres())
    monkeypatch.setattr(common, "IN_BATCH", 1)

    assert read() == on_postgresql
    assert (
        len(on_postgresql)
        == Assignment.objects.filter(
            hit__stage__campaign=campaign, status=AssignmentStatus.APPROVED
        ).count()
    )


@pytest.mark.django_db
def test_a_pair_written_twice_is_two_examples_with_unique_ids(linked, path):
    """Two workers who write the same pair for the same cell: two examples, the first
    under the pair id (its links), the second under ``<pair id>~2``, linked alike."""
    campaign, _writing, written, example_id = linked
    twin = Assignment.objects.get(pk=written.pk)
    twin.pk = None
    twin.worker = worker("twin-writer")
    twin.save()

    examples = list(mintaka_examples(campaign=campaign))

    assert [e["id"] for e in examples] == [example_id, duplicate_suffix(example_id, 2)]
    assert pair_ids(campaign) == [e["id"] for e in examples]
    one, two = examples
    assert {k: v for k, v in one.items() if k != "id"} == {
        k: v for k, v in two.items() if k != "id"
    }
    split = "".join(mintaka_stream(campaign=campaign, split="test", ratios="0,0,1"))
    assert sorted(e["id"] for e in json.loads(split)) == sorted(e["id"] for e in examples)


@pytest.mark.parametrize("n", [0, 1, 7, 1000])
@pytest.mark.parametrize("seed", [0, 3])
def test_split_codes_are_the_shuffle_of_the_positions_cut_at_the_ratios(n, seed):
    """A byte per example, as a list of positions shuffled and cut gives them (the
    split every export made before): exact sizes, the same for the same seed."""
    import random

    order = list(range(n))
    random.Random(seed).shuffle(order)
    n_train, n_dev = int(n * DEFAULT_RATIOS[0]), int(n * DEFAULT_RATIOS[1])
    expected = [""] * n
    for rank, index in enumerate(order):
        expected[index] = "train" if rank < n_train else "dev" if rank < n_train + n_dev else "test"

    codes = split_codes(n, ratios=DEFAULT_RATIOS, seed=seed)

    assert [SPLITS[c] for c in codes] == expected


def test_rows_are_matched_to_their_keys_in_order():
    """A row whose key was not read (approved later) waits; a key without a row
    (removed since) is passed over."""
    keys, codes = [10, 20, 30, 40], bytearray([0, 1, 2, 0])
    rows = [(10, "a"), (15, "late"), (30, "c"), (40, "d"), (50, "later")]
    assert list(in_splits(keys, codes, rows)) == [("train", "a"), ("test", "c"), ("train", "d")]
