"""Answers a model may have written: pure functions (issue 38, item 3).

``text_similarity`` measures how close a worker's text is to what a model answered to
the same task: the larger of the ROUGE-L F-measure over normalised words and the Dice
coefficient of character trigrams (which survives light edits, reordered clauses and
changed punctuation that ROUGE-L punishes). ``telemetry_signals`` reads the page
telemetry recorded with the answer (``campaigns.work.submission.telemetry_sanitise``):
the share of the text pasted, the share not typed, and focus losses. ``llm_flag``
combines them into a flag with its evidence, the JSON stored on the assignment
(``Assignment.llm_flag``).

The flag is a reason to look, never a verdict: the review rule ``llm_flag`` can only
hold an answer for a person (``validation.rules``).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

DEFAULT_THRESHOLD = 0.6
# Weights of the text's similarity and of the page telemetry in the combined score.
SIMILARITY_WEIGHT = 0.7
TELEMETRY_WEIGHT = 0.3
# A text this close to the model's is flagged whatever the telemetry says.
SIMILARITY_ALONE = 0.9
# Below this many characters a text is too short to say anything.
MIN_CHARS = 12
NGRAM = 3

_WORD = re.compile(r"\w+", re.UNICODE)


def normalise(text: str) -> str:
    """Lower case, accents folded, punctuation and runs of blanks made one space."""
    folded = unicodedata.normalize("NFKD", text or "")
    folded = "".join(c for c in folded if not unicodedata.combining(c)).lower()
    return " ".join(_WORD.findall(folded))


def _lcs(a: Sequence[str], b: Sequence[str]) -> int:
    if not a or not b:
        return 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, 1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F1 of the normalised words of ``candidate`` against ``reference``."""
    a, b = normalise(candidate).split(), normalise(reference).split()
    hits = _lcs(a, b)
    if not hits:
        return 0.0
    precision, recall = hits / len(a), hits / len(b)
    return 2 * precision * recall / (precision + recall)


def _grams(text: str, n: int) -> Counter[str]:
    padded = f" {text} "
    return Counter(padded[i : i + n] for i in range(max(0, len(padded) - n + 1)))


def char_ngram_dice(a: str, b: str, *, n: int = NGRAM) -> float:
    """Dice coefficient of the character ``n``-gram multisets of the normalised texts."""
    ga, gb = _grams(normalise(a), n), _grams(normalise(b), n)
    total = sum(ga.values()) + sum(gb.values())
    if not total or not normalise(a) or not normalise(b):
        return 0.0
    return 2 * sum((ga & gb).values()) / total


def text_similarity(worker_text: str, model_text: str) -> dict[str, float]:
    """``{"rouge_l", "char_ngram", "similarity"}``: the two measures and their maximum,
    each in [0, 1] (1: the same words in the same order)."""
    r = rouge_l(worker_text, model_text)
    c = char_ngram_dice(worker_text, model_text)
    return {"rouge_l": round(r, 4), "char_ngram": round(c, 4), "similarity": round(max(r, c), 4)}


def telemetry_signals(telemetry: Any, *, chars: int) -> dict[str, Any]:
    """What the page telemetry says of a text of ``chars`` characters.

    ``paste_share``: pasted characters over the text's (capped at 1); ``untyped_share``:
    1 - keystrokes over characters (capped to [0, 1]); ``focus_losses``; and
    ``telemetry_score``, the larger of the two shares, raised by 0.1 when the worker left
    the page (capped at 1). All None when the page sent no telemetry.
    """
    data: Mapping[str, Any] = telemetry if isinstance(telemetry, Mapping) else {}
    pastes = data.get("pastes")
    keystrokes = data.get("keystrokes")
    focus = data.get("focus_losses")
    if not data or chars <= 0:
        return {
            "paste_share": None,
            "untyped_share": None,
            "focus_losses": None,
            "telemetry_score": None,
        }
    pasted = sum(int(p.get("length") or 0) for p in (pastes or []) if isinstance(p, Mapping))
    paste_share = min(1.0, pasted / chars) if isinstance(pastes, list) else None
    untyped = (
        max(0.0, min(1.0, 1 - keystrokes / chars))
        if isinstance(keystrokes, int) and not isinstance(keystrokes, bool)
        else None
    )
    focus_losses = focus if isinstance(focus, int) and not isinstance(focus, bool) else None
    shares = [s for s in (paste_share, untyped) if s is not None]
    score = None
    if shares:
        score = min(1.0, max(shares) + (0.1 if focus_losses else 0.0))
    return {
        "paste_share": None if paste_share is None else round(paste_share, 4),
        "untyped_share": None if untyped is None else round(untyped, 4),
        "focus_losses": focus_losses,
        "telemetry_score": None if score is None else round(score, 4),
    }


def llm_flag(
    *,
    worker_texts: Sequence[str],
    model_text: str,
    telemetry: Any,
    threshold: float = DEFAULT_THRESHOLD,
) -> dict[str, Any]:
    """The flag of one answer: its ``score`` against ``threshold`` with the evidence.

    The worker's texts (one item's free texts) are joined; the score is
    ``SIMILARITY_WEIGHT`` * similarity + ``TELEMETRY_WEIGHT`` * telemetry score (the
    similarity alone when the page sent no telemetry), and a similarity of
    ``SIMILARITY_ALONE`` or more flags on its own. A text shorter than ``MIN_CHARS``
    is never flagged (``status`` "too_short").
    """
    text = "\n".join(t for t in worker_texts if t and t.strip())
    chars = len(text.strip())
    sim = (
        text_similarity(text, model_text)
        if model_text
        else {
            "rouge_l": 0.0,
            "char_ngram": 0.0,
            "similarity": 0.0,
        }
    )
    signals = telemetry_signals(telemetry, chars=chars)
    t_score = signals["telemetry_score"]
    if t_score is None:
        score = sim["similarity"]
    else:
        score = SIMILARITY_WEIGHT * sim["similarity"] + TELEMETRY_WEIGHT * t_score
    score = round(score, 4)
    status = "scored"
    flagged = score >= threshold or sim["similarity"] >= SIMILARITY_ALONE
    if chars < MIN_CHARS or not model_text.strip():
        status, flagged = ("too_short" if chars < MIN_CHARS else "no_model_text"), False
    return {
        "status": status,
        "flagged": bool(flagged),
        "score": score,
        "components": {**sim, **signals, "chars": chars},
        "thresholds": {
            "flag": threshold,
            "similarity_alone": SIMILARITY_ALONE,
            "weights": {"similarity": SIMILARITY_WEIGHT, "telemetry": TELEMETRY_WEIGHT},
            "min_chars": MIN_CHARS,
        },
        "model_text": model_text,
    }


def flags_combine(per_item: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One answer's flag from its items' flags: flagged when any is, score the highest,
    the items' flags kept under ``items``."""
    items = [dict(f) for f in per_item]
    if not items:
        return {"status": "no_text", "flagged": False, "score": None, "items": []}
    best = max(items, key=lambda f: f.get("score") or 0.0)
    return {
        "status": "scored" if any(f.get("status") == "scored" for f in items) else best["status"],
        "flagged": any(f.get("flagged") for f in items),
        "score": best.get("score"),
        "items": items,
    }
