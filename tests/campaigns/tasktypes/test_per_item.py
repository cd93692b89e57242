"""PerItemTask: what the task types answered item by item share."""

from __future__ import annotations

from typing import Any, ClassVar

from campaigns.tasktypes.base import FieldError, per_item_answer_schema
from campaigns.tasktypes.per_item import PerItemTask, item_entries_of
from tests.campaigns.tasktypes.helpers import item, paths, qd


class Shout(PerItemTask):
    """Write each item's word in capitals."""

    name = "test_shout"
    label = "Shout (tests only)"
    answer_schema: ClassVar[dict[str, Any]] = per_item_answer_schema({"word": {"type": "string"}})
    config_defaults: ClassVar[dict[str, Any]] = {"min_length": 2}

    def entry_from_form(self, form, at, cfg):
        return {"word": form.get(f"{at}/word", "")}

    def entry_errors(self, entry, data, at, cfg):
        if entry["word"] != data["word"].upper() or len(entry["word"]) < cfg["min_length"]:
            return [FieldError(f"{at}/word", "Shout the word.")]
        return []

    def row(self, form, data, at, entry, cfg):
        return {"word": data["word"], "field": form.field(f"{at}/word", entry.get("word"))}


ITEMS = [item("a", {"word": "hey"}), item("b", {"word": "ho"}, pk=2)]


def test_the_form_is_read_item_by_item():
    answer = Shout().parse_form(form=qd({"items/0/word": "HEY"}), items=ITEMS, config={})
    assert answer == {
        "items": [{"external_id": "a", "word": "HEY"}, {"external_id": "b", "word": ""}]
    }


def test_entries_are_checked_only_once_the_structure_holds():
    shout = Shout()
    short = {"items": [{"external_id": "a", "word": "HEY"}]}
    assert paths(shout.validate_answer(answer=short, items=ITEMS, config={})) == {"items"}
    swapped = {"items": [{"external_id": "b", "word": "HO"}, {"external_id": "a", "word": "HEY"}]}
    assert paths(shout.validate_answer(answer=swapped, items=ITEMS, config={})) == {
        "items/0/external_id",
        "items/1/external_id",
    }
    answer = {"items": [{"external_id": "a", "word": "HEY"}, {"external_id": "b", "word": "ho"}]}
    assert paths(shout.validate_answer(answer=answer, items=ITEMS, config={})) == {"items/1/word"}
    answer["items"][1]["word"] = "HO"
    assert shout.validate_answer(answer=answer, items=ITEMS, config={}) == []
    assert paths(shout.validate_answer(answer=answer, items=ITEMS, config={"min_length": 3})) == {
        "items/1/word"
    }


def test_the_page_numbers_the_rows_and_leaves_unshown_errors_general():
    answer = {"items": [{"external_id": "a", "word": "HEY"}]}
    errors = {"items/1/word": "Shout the word.", "items": "Something else."}
    view = Shout().view(items=ITEMS, config={}, answer=answer, errors=errors, preview=False)
    assert [(r["number"], r["word"], r["field"].value) for r in view["items"]] == [
        (1, "hey", "HEY"),
        (2, "ho", ""),
    ]
    assert view["items"][1]["field"].error == "Shout the word."
    assert view["general_errors"] == ["Something else."]


def test_an_items_entries_are_gathered_from_the_answers_holding_one():
    answers = [
        {"items": [{"external_id": "a", "word": "HEY"}]},
        {"items": [{"external_id": "b", "word": "HO"}]},
        {"items": [{"external_id": "a", "word": "HEY!"}]},
    ]
    assert [e["word"] for e in item_entries_of(answers, ITEMS[0])] == ["HEY", "HEY!"]
