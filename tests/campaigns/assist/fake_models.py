"""A fake model that rephrases, for the LLM flag's tests and benchmark: given to
``FakeOpenAI(answer=paraphrase_answer)``, it answers a rephrase prompt
("… keeping its meaning: <question>") the way a language model would, in other words
(synonyms, another frame), deterministically."""

from __future__ import annotations

import re
from typing import Any

_SYNONYMS = {
    "which": "what",
    "who": "which person",
    "river": "waterway",
    "flows": "runs",
    "flow": "run",
    "through": "across",
    "city": "town",
    "painted": "created the painting on",
    "ceiling": "roof",
    "century": "hundred years",
    "early": "first part of the",
    "wrote": "was the author of",
    "novel": "book",
    "largest": "biggest",
    "country": "nation",
    "capital": "seat of government",
    "founded": "established",
    "built": "constructed",
    "first": "earliest",
    "mountain": "peak",
    "highest": "tallest",
    "language": "tongue",
    "spoken": "used",
    "invented": "came up with",
    "discovered": "found",
    "year": "date",
    "born": "brought into the world",
    "won": "took home",
    "team": "side",
    "played": "performed",
    "lake": "body of water",
    "sea": "ocean",
    "into": "out into",
    "then": "afterwards",
}
_FRAME = "Could you tell me {}?"


def paraphrase(question: str) -> str:
    """``question`` reworded: each known word by its synonym, in a polite frame."""
    core = question.strip().rstrip("?").strip()
    words = [_SYNONYMS.get(w.lower(), w) for w in core.split()]
    return _FRAME.format(" ".join(words))


def paraphrase_answer(messages: list[dict[str, Any]]) -> str:
    """The fake's answer to a chat: the rephrasing the prompt asks for, else "I don't know"."""
    text = " ".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
    found = re.search(r"keeping its meaning: (.+?\?)", text)
    return paraphrase(found.group(1)) if found else "I don't know"
