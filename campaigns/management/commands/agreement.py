"""Agreement and majority vote over a long CSV of labels.

    manage.py agreement labels.csv
    manage.py agreement labels.csv --level ordinal --discard-label invalid

The CSV has a header with ``item_id,annotator_id,label`` (other columns are
ignored; a UTF-8 byte-order mark is fine) and one label per row. A missing
label is a missing row. Prints JSON: ``krippendorff_alpha``,
``percent_agreement``, ``items``, ``annotators``, ``labels`` (each label with
its count), ``majority_items`` (item → label) and ``discarded_items`` (item →
reason: ``tie`` when no label has a majority, ``discard_label`` when the
majority went to ``--discard-label``). Alpha is ``null`` when undefined (no
item with two labels, or a single value in use).
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from validation.aggregation import TIES, majority_vote
from validation.agreement import LEVELS, krippendorff_alpha, percent_agreement
from validation.labels import LabelTable

COLUMNS = ("item_id", "annotator_id", "label")
MAX_REPORTED_ERRORS = 20


def _number(text: str) -> int | float | None:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def read_label_csv(path: Path, *, numeric: bool) -> tuple[list[str], list[str], list[Any]]:
    """Columns (items, annotators, labels) of the CSV; ``CommandError`` listing bad rows.

    With ``numeric`` the labels must be numbers. An annotator labelling an item
    twice is an error naming both lines.
    """
    items: list[str] = []
    annotators: list[str] = []
    labels: list[Any] = []
    errors: list[str] = []
    seen: dict[tuple[str, str], int] = {}
    try:
        handle = path.open(encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise CommandError(f"Cannot read {path}: {exc.strerror}") from exc
    with handle:
        reader = csv.reader(handle)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise CommandError(f"{path} is empty; expected a header {','.join(COLUMNS)}") from None
        except (csv.Error, UnicodeDecodeError) as exc:
            raise CommandError(f"{path}: line 1: {exc}") from exc
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise CommandError(
                f"{path}: line 1: the header needs the columns {', '.join(COLUMNS)}; "
                f"missing {', '.join(missing)} (found {', '.join(header) or 'nothing'})"
            )
        position = {c: header.index(c) for c in COLUMNS}
        try:
            for row in reader:
                line = reader.line_num
                if not any(cell.strip() for cell in row):
                    continue
                if len(row) != len(header):
                    errors.append(f"line {line}: {len(row)} fields, the header has {len(header)}")
                    continue
                item, annotator, label = (row[position[c]].strip() for c in COLUMNS)
                problems = [
                    f"{c} is empty"
                    for c, v in zip(COLUMNS, (item, annotator, label), strict=True)
                    if not v
                ]
                value: Any = label
                if label and numeric:
                    value = _number(label)
                    if value is None:
                        problems.append(f"label {label!r} is not a number")
                if (item, annotator) in seen and item and annotator:
                    problems.append(
                        f"annotator {annotator!r} already labelled item {item!r} "
                        f"on line {seen[(item, annotator)]}"
                    )
                if problems:
                    errors.append(f"line {line}: " + "; ".join(problems))
                    continue
                seen[(item, annotator)] = line
                items.append(item)
                annotators.append(annotator)
                labels.append(value)
        except (csv.Error, UnicodeDecodeError) as exc:
            errors.append(f"line {reader.line_num}: {exc}")
    if errors:
        shown = errors[:MAX_REPORTED_ERRORS]
        more = len(errors) - len(shown)
        raise CommandError(
            f"{path}: {len(errors)} bad row(s):\n  "
            + "\n  ".join(shown)
            + (f"\n  … and {more} more" if more else "")
        )
    return items, annotators, labels


class Command(BaseCommand):
    help = "Krippendorff's alpha, percent agreement and majority vote over a long CSV of labels."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path, help="CSV with item_id,annotator_id,label")
        parser.add_argument("--level", choices=LEVELS, default="nominal")
        parser.add_argument(
            "--discard-label",
            action="append",
            default=[],
            metavar="LABEL",
            help='Discard items whose majority is this label (e.g. "invalid"); repeatable.',
        )
        parser.add_argument(
            "--ties", choices=TIES, default="none", help="Majority vote ties (default: none)."
        )
        parser.add_argument("--seed", type=int, default=0, help="For --ties random.")
        parser.add_argument(
            "--label-order",
            help="Comma-separated labels, lowest first: ordinal level with non-numeric labels.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        level = options["level"]
        order = (
            [s.strip() for s in options["label_order"].split(",")]
            if options["label_order"]
            else None
        )
        numeric = level == "interval" or (level == "ordinal" and order is None)
        discard: list[Any] = list(options["discard_label"])
        if numeric:
            bad = [d for d in discard if _number(d) is None]
            if bad:
                raise CommandError(f"--discard-label {bad[0]!r}: labels are numbers at this level")
            discard = [_number(d) for d in discard]
        items, annotators, labels = read_label_csv(options["file"], numeric=numeric)
        try:
            table = LabelTable.from_columns(items, annotators, labels, label_order=order)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        vote = majority_vote(
            table, ties=options["ties"], seed=options["seed"], discard_labels=discard
        )
        label_counts = Counter(labels)
        result = {
            "level": level,
            "krippendorff_alpha": krippendorff_alpha(table, level=level),
            "percent_agreement": percent_agreement(table),
            "items": len(table.items),
            "annotators": len(table.annotators),
            "annotations": len(table),
            "labels": {str(label): label_counts[label] for label in table.labels},
            "majority_items": {str(k): v for k, v in vote.labels.items()},
            "discarded_items": {str(k): v for k, v in vote.discarded.items()},
        }
        self.stdout.write(json.dumps(result, indent=2, ensure_ascii=False))
