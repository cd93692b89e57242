"""Build the bundled offline candidate index from Mintaka's JSON files.

    python -m linking.build_offline_index [MINTAKA_DIR_OR_FILE ...] [--output PATH]

Default input ``../shared/data/mintaka/`` (every ``*.json`` in it), default output
``linking/data/mintaka_entities.jsonl``. Takes the question entities of type
``entity`` and the answer entities that carry a Wikidata id, with their labels;
a question entity's mention, when it differs from the label, becomes an alias
("2021 Olympic games" for Q181278 "2020 Summer Olympics"). Mintaka has no
descriptions: they are left empty. Output is sorted by id number, so rebuilding
gives the same file. Mintaka is CC BY 4.0 (see ``linking/data/LICENSE.md``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from linking.offline import BUNDLED_INDEX, fold
from linking.types import is_qid

DEFAULT_SOURCE = Path(__file__).resolve().parents[2] / "shared" / "data" / "mintaka"


def mintaka_records(questions: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Index records (id, label, aliases, description) from Mintaka questions."""
    items: dict[str, dict[str, Any]] = {}

    def add(qid: Any, label: Any, alias: str = "") -> None:
        if not is_qid(qid) or not label:
            return
        item = items.setdefault(qid, {"id": qid, "label": str(label), "aliases": []})
        known = {fold(item["label"])} | {fold(a) for a in item["aliases"]}
        if alias and fold(alias) not in known:
            item["aliases"].append(alias)

    for question in questions:
        for entity in question.get("questionEntity") or []:
            if entity.get("entityType") == "entity":
                add(entity.get("name"), entity.get("label"), str(entity.get("mention") or ""))
        for answer in (question.get("answer") or {}).get("answer") or []:
            if isinstance(answer, dict):
                add(answer.get("name"), answer.get("label"))
    return [
        {**item, "aliases": sorted(item["aliases"]), "description": ""}
        for item in sorted(items.values(), key=lambda i: int(i["id"][1:]))
    ]


def _questions(sources: list[Path]) -> Iterable[dict[str, Any]]:
    for source in sources:
        files = sorted(source.glob("*.json")) if source.is_dir() else [source]
        for path in files:
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, list):
                yield from data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="*", type=Path, default=[DEFAULT_SOURCE])
    parser.add_argument("--output", type=Path, default=BUNDLED_INDEX)
    args = parser.parse_args(argv)
    records = mintaka_records(_questions(args.sources))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with open(args.output, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
    sys.stderr.write(f"{len(records)} items written to {args.output}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
