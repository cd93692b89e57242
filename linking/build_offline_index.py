"""Build the bundled offline candidate index from Mintaka's JSON files.

    python -m linking.build_offline_index [MINTAKA_DIR_OR_FILE ...] [--output PATH]

Default input ``../shared/data/mintaka/`` (every ``*.json`` in it), default output
``linking/data/mintaka_entities.jsonl``. Takes the question entities of type
``entity`` and the answer entities that carry a Wikidata id, with their labels;
a question entity's mention, when it differs from the label, becomes an alias
("2021 Olympic games" for Q181278 "2020 Summer Olympics"). Mintaka has no
Wikidata descriptions, so each item gets one from where Mintaka uses it: the
topics of its questions and one of them, quoted ("Movies · answer to “Which
film won …?”"), enough to tell the film Titanic from the ship. Output is sorted
by id number, so rebuilding gives the same file. Mintaka is CC BY 4.0 (see
``linking/data/LICENSE.md``).
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
    uses: dict[str, dict[str, Any]] = {}

    def add(qid: Any, label: Any, alias: str = "", *, question: dict[str, Any], role: str) -> None:
        if not is_qid(qid) or not label:
            return
        use = uses.setdefault(qid, {"topics": [], "example": ""})
        topic = TOPICS.get(str(question.get("category") or ""), str(question.get("category") or ""))
        if topic and topic not in use["topics"]:
            use["topics"].append(topic)
        if not use["example"] and question.get("question"):
            use["example"] = f"{role} “{_shortened(str(question['question']))}”"
        item = items.setdefault(qid, {"id": qid, "label": str(label), "aliases": []})
        known = {fold(item["label"])} | {fold(a) for a in item["aliases"]}
        if alias and fold(alias) not in known:
            item["aliases"].append(alias)

    for question in questions:
        for entity in question.get("questionEntity") or []:
            if entity.get("entityType") == "entity":
                add(
                    entity.get("name"),
                    entity.get("label"),
                    str(entity.get("mention") or ""),
                    question=question,
                    role="named in",
                )
        for answer in (question.get("answer") or {}).get("answer") or []:
            if isinstance(answer, dict):
                add(answer.get("name"), answer.get("label"), question=question, role="answer to")
    return [
        {
            **item,
            "aliases": sorted(item["aliases"]),
            "description": _description(uses.get(item["id"], {})),
        }
        for item in sorted(items.values(), key=lambda i: int(i["id"][1:]))
    ]


# Mintaka's categories as a reader says them.
TOPICS = {"videogames": "video games"}
EXAMPLE_LENGTH = 90


def _shortened(text: str) -> str:
    return text if len(text) <= EXAMPLE_LENGTH else text[: EXAMPLE_LENGTH - 1].rstrip() + "…"


def _description(use: dict[str, Any]) -> str:
    """ "Movies, history · answer to “…”" from an item's uses; "" when it has none."""
    topics = ", ".join(use.get("topics") or [])
    parts = [topics[:1].upper() + topics[1:]] if topics else []
    if use.get("example"):
        parts.append(str(use["example"]))
    return " · ".join(parts)


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
