"""One chat-completions request to an OpenAI-compatible endpoint, bounded by a deadline.

The wire format is OpenAI's (``POST {base_url}/chat/completions``, ``base_url`` ending in
``/v1`` as the official client takes it), which vLLM, llama.cpp's server, Ollama, TGI and
the hosted APIs all speak. ``requests`` is enough for one request and one answer; the
official ``openai`` package would add a dependency for no behaviour we use.

Every failure is a :class:`ModelUnavailable` saying whether trying again may help (429,
5xx, timeouts, refused connections) and when (``Retry-After``). Messages never carry the
API key or the request's headers: they are stored and shown.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import requests

MAX_BODY_BYTES = 1_000_000
MAX_TOKENS = 256


class ModelUnavailable(Exception):
    """The endpoint gave no usable answer. ``retryable``: another try may succeed."""

    def __init__(self, reason: str, *, retryable: bool, retry_after: float | None = None):
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        self.retry_after = retry_after


@dataclass(frozen=True)
class ChatAnswer:
    """What the endpoint answered: the text, the model id and version it reported
    (``model``, ``system_fingerprint``) and the tokens it counted (None: not reported)."""

    text: str
    model_id: str
    model_version: str
    prompt_tokens: int | None
    completion_tokens: int | None


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None  # an HTTP date: the backoff decides


def _error_message(body: bytes) -> str:
    try:
        error = json.loads(body)["error"]
        return str(error.get("message") or error.get("type") or "")[:200]
    except (ValueError, KeyError, TypeError, AttributeError):
        return ""


def _count(usage: Any, name: str) -> int | None:
    value = usage.get(name) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def answer_parse(body: bytes) -> ChatAnswer:
    """The answer in a chat-completions response body; ``ModelUnavailable`` (not
    retryable) when it is not one."""
    try:
        data = json.loads(body)
        message = data["choices"][0]["message"]
        text = message["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ModelUnavailable("garbage answer (not a chat completion)", retryable=False) from exc
    if not isinstance(text, str):
        raise ModelUnavailable("garbage answer (no text content)", retryable=False)
    usage = data.get("usage")
    return ChatAnswer(
        text=text.strip(),
        model_id=str(data.get("model") or "")[:200],
        model_version=str(data.get("system_fingerprint") or "")[:200],
        prompt_tokens=_count(usage, "prompt_tokens"),
        completion_tokens=_count(usage, "completion_tokens"),
    )


def chat_complete(
    *,
    base_url: str,
    api_key: str,
    model: str,
    messages: list[dict[str, str]],
    timeout: float,
) -> ChatAnswer:
    """Ask ``model`` at ``base_url`` for one completion of ``messages``; give up after
    ``timeout`` seconds (connecting and waiting each bounded by it, the body cut at the
    deadline). Temperature 0: the same question gets the same answer where it can."""
    deadline = time.monotonic() + timeout
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    payload = {"model": model, "messages": messages, "temperature": 0, "max_tokens": MAX_TOKENS}
    try:
        with requests.post(
            base_url.rstrip("/") + "/chat/completions",
            json=payload,
            headers=headers,
            timeout=(timeout, timeout),
            stream=True,
            allow_redirects=False,
        ) as response:
            body = bytearray()
            for chunk in response.iter_content(chunk_size=16384):
                body.extend(chunk)
                if time.monotonic() > deadline:
                    raise ModelUnavailable(f"timed out after {timeout:g} s", retryable=True)
                if len(body) > MAX_BODY_BYTES:
                    raise ModelUnavailable("garbage answer (too long)", retryable=False)
            status = response.status_code
            retry_after = _retry_after(response.headers.get("Retry-After"))
    except requests.Timeout as exc:
        raise ModelUnavailable(f"timed out after {timeout:g} s", retryable=True) from exc
    except requests.ConnectionError as exc:
        raise ModelUnavailable("endpoint unreachable", retryable=True) from exc
    except requests.RequestException as exc:
        raise ModelUnavailable(f"request failed ({type(exc).__name__})", retryable=False) from exc
    if status == 200:
        return answer_parse(bytes(body))
    detail = _error_message(bytes(body))
    reason = f"HTTP {status}" + (f": {detail}" if detail else "")
    if status == 429 or status >= 500 or status == 408:
        raise ModelUnavailable(reason, retryable=True, retry_after=retry_after)
    raise ModelUnavailable(reason, retryable=False)
