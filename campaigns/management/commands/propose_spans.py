"""Propose entity spans for every question of a dataset file.

    manage.py propose_spans --input mintaka_dev.json --format mintaka --output OUT.jsonl \
        [--batch-size 256] [--processes 1]

Writes one JSON line per question: ``{"id", "question", "spans": [{"start", "end",
"text", "kind"}]}`` (kinds: ``entity`` or a value kind: date, time, ordinal,
cardinal, quantity, money, percent). ``--format jsonl`` reads one
``{"id", "question"}`` object per line instead of Mintaka's JSON list.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from linking.spans import propose_spans_batch
from qaportal.progress import ProgressBar


class Command(BaseCommand):
    help = "Propose the spans to link (spaCy entities and capitalised noun chunks) per question."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--input", required=True, type=Path, help="The dataset file.")
        parser.add_argument(
            "--format", choices=["mintaka", "jsonl"], default="mintaka", help="Input format."
        )
        parser.add_argument("--output", required=True, type=Path, help="Where to write JSONL.")
        parser.add_argument("--batch-size", type=int, default=256, help="nlp.pipe batch (256).")
        parser.add_argument("--processes", type=int, default=1, help="nlp.pipe processes (1).")

    def handle(self, *args: Any, **options: Any) -> None:
        questions = list(_read(options["input"], options["format"]))
        texts = (q["question"] for q in questions)
        batches = propose_spans_batch(
            texts, batch_size=options["batch_size"], n_process=options["processes"]
        )
        count = 0
        bar = ProgressBar(
            label="propose spans",
            total=len(questions),
            unit="questions",
            stream=options.get("stderr"),
        )
        with open(options["output"], "w", encoding="utf-8") as out, bar:
            for question, spans in zip(questions, batches, strict=True):
                record = {
                    "id": question["id"],
                    "question": question["question"],
                    "spans": [s.as_dict() for s in spans],
                }
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                count += 1
                bar.update(count)
        self.stdout.write(f"{count} questions written to {options['output']}")


def _read(path: Path, fmt: str) -> Iterator[dict[str, str]]:
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"Cannot read {path}: {exc}") from exc
    try:
        rows = (
            json.loads(raw)
            if fmt == "mintaka"
            else [json.loads(line) for line in raw.splitlines() if line.strip()]
        )
    except json.JSONDecodeError as exc:
        raise CommandError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(rows, list):
        raise CommandError(f"{path}: expected a list of questions")
    for n, row in enumerate(rows, 1):
        if not isinstance(row, dict) or not isinstance(row.get("question"), str):
            raise CommandError(f"{path}: question {n} has no 'question' text")
        yield {"id": str(row.get("id", n)), "question": row["question"]}
