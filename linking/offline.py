"""An offline candidate index with the live client's interface (``CandidateSource``).

Built from a JSON-lines file, one item a line::

    {"id": "Q42", "label": "Douglas Adams", "aliases": ["Douglas Noël Adams"],
     "description": "English writer", "instance_of": ["Q5"], "redirect_to"?: "Q..."}

Search ranks, for the normalised query (case folded, accents removed,
punctuation as spaces): exact label, exact alias, label prefix, alias prefix,
then every query word a prefix of some word of the label or an alias; ties by
shorter name, then lower id number (older, usually better known items). Used when
``WIKIDATA_OFFLINE`` is set (the embedded default and tests); the file is
``WIKIDATA_OFFLINE_INDEX`` (default: the bundled ``linking/data/mintaka_entities.jsonl``).
"""

from __future__ import annotations

import bisect
import json
import re
import unicodedata
from collections import defaultdict
from pathlib import Path
from typing import Any

from linking.types import (
    Candidate,
    Entity,
    SearchPage,
    check_qids,
    check_search_args,
)

BUNDLED_INDEX = Path(__file__).parent / "data" / "mintaka_entities.jsonl"
_NON_WORD = re.compile(r"[^\w]+")


def fold(text: str) -> str:
    """Case folded, accents removed, punctuation turned into single spaces."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(_NON_WORD.sub(" ", stripped).split())


class OfflineIndex:
    """In-memory index over a JSON-lines file; read-only after loading, so thread-safe."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self._items: dict[str, dict[str, Any]] = {}
        self._redirects: dict[str, str] = {}
        names: list[tuple[str, int, str, str]] = []  # (folded name, is_alias, id, name)
        self._words: dict[str, set[str]] = defaultdict(set)
        for record in records:
            qid = str(record["id"])
            if record.get("redirect_to"):
                self._redirects[qid] = str(record["redirect_to"])
                continue
            item: dict[str, Any] = {
                "id": qid,
                "label": str(record.get("label") or ""),
                "description": str(record.get("description") or ""),
                "aliases": [str(a) for a in record.get("aliases") or []],
                "instance_of": [str(i) for i in record.get("instance_of") or []],
            }
            self._items[qid] = item
            label, aliases = item["label"], item["aliases"]
            for is_alias, name in [(0, label)] + [(1, a) for a in aliases]:
                folded = fold(name)
                if not folded:
                    continue
                names.append((folded, is_alias, qid, name))
                for word in folded.split():
                    self._words[word].add(qid)
        names.sort()
        self._names = names
        self._keys = [n[0] for n in names]
        self._sorted_words = sorted(self._words)

    @classmethod
    def from_file(cls, path: str | Path = BUNDLED_INDEX) -> OfflineIndex:
        """Load an index file (JSON lines; blank lines ignored)."""
        with open(path, encoding="utf-8") as handle:
            records = [json.loads(line) for line in handle if line.strip()]
        return cls(records)

    def __len__(self) -> int:
        return len(self._items)

    def search(
        self, text: str, *, language: str = "en", limit: int = 10, continue_: int = 0
    ) -> SearchPage:
        """Ranked hits for ``text`` (prefix and word-prefix match), ``limit`` from
        offset ``continue_``; ``language`` is accepted for interface parity (the
        index holds one language)."""
        check_search_args(text, limit, continue_)
        query = fold(text)
        if not query:
            return SearchPage()
        best: dict[str, tuple[tuple[int, int, int], str, int]] = {}

        def offer(qid: str, rank: int, name: str, is_alias: int) -> None:
            key = (rank, len(name), int(qid[1:]))
            if qid not in best or key < best[qid][0]:
                best[qid] = (key, name, is_alias)

        start = bisect.bisect_left(self._keys, query)
        for folded, is_alias, qid, name in self._names[start:]:
            if not folded.startswith(query):
                break
            exact = folded == query
            offer(qid, (0 if exact else 2) + is_alias, name, is_alias)
        for qid in self._word_prefix_matches(query.split()):
            item = self._items[qid]
            for is_alias, name in [(0, item["label"])] + [(1, a) for a in item["aliases"]]:
                if _all_words_prefix(query.split(), fold(name).split()):
                    offer(qid, 4 + is_alias, name, is_alias)
        ranked = sorted(best.items(), key=lambda kv: kv[1][0])
        window = ranked[continue_ : continue_ + limit]
        hits = [self._candidate(qid, name, is_alias) for qid, (_, name, is_alias) in window]
        more = continue_ + limit < len(ranked)
        return SearchPage(hits=hits, next_offset=continue_ + limit if more else None)

    def get_entities(self, ids: list[str], *, language: str = "en") -> dict[str, Entity | None]:
        """Items by requested id, None for ids not in the index; redirects resolved."""
        wanted = list(dict.fromkeys(ids))
        check_qids(wanted)
        out: dict[str, Entity | None] = {}
        for qid in wanted:
            target = self._redirects.get(qid, qid)
            item = self._items.get(target)
            out[qid] = (
                None
                if item is None
                else Entity(
                    id=target,
                    label=item["label"],
                    description=item["description"],
                    aliases=list(item["aliases"]),
                    instance_of=list(item["instance_of"]),
                    redirected_from=qid if target != qid else None,
                )
            )
        return out

    def _word_prefix_matches(self, words: list[str]) -> set[str]:
        found: set[str] | None = None
        for word in words:
            ids: set[str] = set()
            i = bisect.bisect_left(self._sorted_words, word)
            while i < len(self._sorted_words) and self._sorted_words[i].startswith(word):
                ids |= self._words[self._sorted_words[i]]
                i += 1
            found = ids if found is None else found & ids
            if not found:
                return set()
        return found or set()

    def _candidate(self, qid: str, name: str, is_alias: int) -> Candidate:
        item = self._items[qid]
        return Candidate(
            id=qid,
            label=item["label"],
            description=item["description"],
            match={"type": "alias" if is_alias else "label", "language": "en", "text": name},
            aliases=[name] if is_alias else [],
            url=f"http://www.wikidata.org/entity/{qid}",
        )


def _all_words_prefix(query: list[str], words: list[str]) -> bool:
    return all(any(w.startswith(q) for w in words) for q in query)
