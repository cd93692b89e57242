"""Text PostgreSQL cannot store in ``jsonb`` (NUL, lone surrogates) and JSON nested
deeper than any real document: found before it reaches the database or the parser's
recursion limit, so the caller can answer 400 with the place named."""

from __future__ import annotations

import re
from typing import Any

# Deeper than any document qaportal takes (stage configs, answers, items).
MAX_JSON_DEPTH = 64
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def unstorable_text(value: str) -> str | None:
    """Why ``value`` cannot be stored, or None."""
    match = _UNSTORABLE.search(value)
    if match is None:
        return None
    if match.group() == "\x00":
        return "holds a NUL character (\\u0000), which cannot be stored"
    return "holds a lone surrogate (an invalid \\ud800-\\udfff escape), which cannot be stored"


def unstorable_path(value: Any, path: str = "") -> tuple[str, str] | None:
    """``(path, reason)`` of the first string (key or value) in ``value`` that cannot be
    stored, or None. Paths look like ``config/instructions`` (``""`` for the top)."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        current, where = stack.pop()
        if isinstance(current, str):
            reason = unstorable_text(current)
            if reason:
                return where, reason
        elif isinstance(current, dict):
            for key, item in current.items():
                key_text = str(key)
                reason = unstorable_text(key_text)
                if reason:
                    return where, f"has a key that {reason}"
                stack.append((item, f"{where}/{key_text}" if where else key_text))
        elif isinstance(current, (list, tuple)):
            stack.extend(
                (item, f"{where}/{n}" if where else str(n)) for n, item in enumerate(current)
            )
    return None


def json_depth_exceeds(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True if ``text`` opens more than ``limit`` arrays/objects at once, counted without
    parsing (brackets inside strings are skipped), so a body of 50,000 ``[`` is refused
    in linear time before ``json.loads`` recurses."""
    data = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    if data.count("[") + data.count("{") <= limit:
        return False
    depth = 0
    in_string = escaped = False
    for char in data:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


# An error message quotes at most this much of a bad value, and is at most this long.
QUOTE_PREFIX = 40
MESSAGE_MAX = 300
_QUOTED = re.compile(r"""(['"])((?:(?!\1).){41,}?)\1""", re.DOTALL)  # 41: QUOTE_PREFIX + 1


def clip_message(message: str) -> str:
    """``message`` with every quoted value longer than ``QUOTE_PREFIX`` characters cut to
    its prefix (``'abc…'``), and the whole at most ``MESSAGE_MAX`` characters: an error
    about a megabyte cell must not echo the megabyte (nor personal data in it)."""
    clipped = _QUOTED.sub(lambda m: f"{m[1]}{m[2][:QUOTE_PREFIX]}…{m[1]}", message)
    if len(clipped) > MESSAGE_MAX:
        clipped = clipped[: MESSAGE_MAX - 1] + "…"
    return clipped
