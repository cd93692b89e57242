"""Task types answered item by item: rephrasing, translation, paraphrasing, validation.

Their answer holds one entry per item of the HIT, in order (``per_item_answer_schema``)::

    {"items": [{"external_id": <the item's external_id>, ...the entry...}]}

and their form names the fields of item ``i`` ``items/<i>/...``. ``PerItemTask`` does
what is the same for all of them: it reads the form item by item, checks the answer's
structure before its entries, lays out the page's rows and gathers an item's entries
from several answers. A subclass says what one entry is:

- ``entry_from_form(form, at, cfg)``: the entry (without ``external_id``) from the
  fields under ``at`` (``items/<i>``);
- ``entry_errors(entry, data, at, cfg)``: what is wrong with it, for the item's data;
- ``row(form, data, at, entry, cfg)``: what the page shows of the item (``number``,
  the item's 1-based position, is added), the fields made with ``form``;
- ``rows_key``: the name the template gives the list of rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from campaigns.tasktypes.base import (
    Config,
    FieldError,
    FormView,
    Items,
    TaskType,
    answer_for_item,
    get_path,
    item_entry_errors,
)

Entry = dict[str, Any]


class PerItemTask(TaskType):
    """A task type answering each item of the HIT by itself (see the module)."""

    # The template's name for the list of rows ``page`` makes.
    rows_key: ClassVar[str] = "items"

    def entry_from_form(self, form: Mapping[str, Any], at: str, cfg: Config) -> Entry:
        """One item's entry (without ``external_id``) from the fields under ``at``."""
        raise NotImplementedError

    def entry_errors(self, entry: Entry, data: Entry, at: str, cfg: Config) -> list[FieldError]:
        """Problems with one well-formed entry for an item holding ``data``."""
        return []

    def row(self, form: FormView, data: Entry, at: str, entry: Entry, cfg: Config) -> Entry:
        """What the page shows of one item (``entry``: the answer so far, or {})."""
        return {}

    def parse_form(
        self, *, form: Mapping[str, Any], items: list[dict[str, Any]], config: dict[str, Any]
    ) -> dict[str, Any]:
        cfg = self.effective_config(config)
        return {
            "items": [
                {
                    "external_id": item["external_id"],
                    **self.entry_from_form(form, f"items/{i}", cfg),
                }
                for i, item in enumerate(items)
            ]
        }

    def answer_errors(self, answer: Any, items: Items, cfg: Config) -> list[FieldError]:
        """The answer's structure first (one entry per item, in order); then each
        entry (``entry_errors``)."""
        errors = item_entry_errors(answer, items)
        if errors:
            return errors
        for i, (entry, item) in enumerate(zip(answer["items"], items, strict=True)):
            errors += self.entry_errors(entry, item["data"], f"items/{i}", cfg)
        return errors

    def page(self, form: FormView, items: Items, cfg: Config, answer: Any) -> dict[str, Any]:
        rows = []
        for i, item in enumerate(items):
            entry = get_path(answer, "items", i, default={})
            entry = entry if isinstance(entry, dict) else {}
            at = f"items/{i}"
            rows.append({"number": i + 1, **self.row(form, item.get("data", {}), at, entry, cfg)})
        return {self.rows_key: rows}


def item_entries_of(answers: list[dict[str, Any]], item: Mapping[str, Any]) -> list[Entry]:
    """The entries several answers hold for ``item`` (answers without one left out)."""
    return [e for e in (answer_for_item(a, item) for a in answers) if e is not None]
