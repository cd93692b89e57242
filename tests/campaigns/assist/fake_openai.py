"""A local fake of OpenAI's chat-completions API: a real HTTP server on 127.0.0.1 in a thread.

It speaks the wire format the official API documents and OpenAI-compatible servers
(vLLM, llama.cpp, Ollama, TGI) copy: ``POST /v1/chat/completions`` with a JSON body;
an answer with ``id``, ``object``, ``created``, ``model``, ``system_fingerprint``,
``choices[].message.content`` and ``usage{prompt_tokens, completion_tokens,
total_tokens}``; errors as ``{"error": {"message", "type", "param", "code"}}``.

It refuses what the real API refuses: another path or method (404), a body that is not
a JSON object, a missing or empty ``model`` or ``messages``, a message without a known
``role`` or with non-text ``content``, an unknown request argument, a ``temperature``
outside 0 to 2 or a ``max_tokens`` below 1 (400 ``invalid_request_error``), and a missing
or wrong bearer key when it has one (401 ``invalid_api_key``).

Faults, queued with ``fail(kind, times=…)``: ``"429"`` (``Retry-After``), ``"500"``,
``"503"``, ``"slow"`` (answers after ``delay`` seconds), ``"garbage"`` (200 with a body
that is not JSON), ``"drop"`` (closes the connection without answering). Every request is
recorded in ``calls`` (path, headers without the key, body, status).

Start it in a test (``with FakeOpenAI() as fake: fake.base_url``), or by hand:
``python -m tests.campaigns.assist.fake_openai 8601``.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ROLES = {"system", "user", "assistant", "tool", "developer"}
KNOWN_ARGUMENTS = {
    "model",
    "messages",
    "temperature",
    "top_p",
    "n",
    "stop",
    "stream",
    "stream_options",
    "max_tokens",
    "max_completion_tokens",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "user",
    "seed",
    "response_format",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "metadata",
    "store",
    "service_tier",
    "reasoning_effort",
    "modalities",
    "prediction",
    "audio",
}


@dataclass
class Fault:
    kind: str
    times: int = 1
    retry_after: str | None = "1"
    delay: float = 0.0


def _words(text: str) -> int:
    return max(1, len(text.split()))


def default_answer(messages: list[dict[str, Any]]) -> str:
    """The last sentence of the last user message containing "Paris", else "I don't know"."""
    text = " ".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
    return "Paris" if "Paris" in text else "I don't know"


@dataclass
class FakeOpenAI:
    api_key: str = ""
    model: str = "fake-model-7b"
    fingerprint: str = "fp_fake_0001"
    answer: Callable[[list[dict[str, Any]]], str] = default_answer
    delay: float = 0.0  # every answer waits this long (the benchmark's 500 ms endpoint)
    faults: list[Fault] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    active: int = 0
    peak_active: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    # --- control ------------------------------------------------------------------
    def fail(
        self, kind: str, *, times: int = 1, retry_after: str | None = "1", delay: float = 0.0
    ) -> None:
        self.faults.append(Fault(kind=kind, times=times, retry_after=retry_after, delay=delay))

    def _fault(self) -> Fault | None:
        with self._lock:
            while self.faults and self.faults[0].times <= 0:
                self.faults.pop(0)
            if not self.faults:
                return None
            fault = self.faults[0]
            fault.times -= 1
            return fault

    def start(self, port: int = 0) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake._handle(self, None)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                fake._handle(self, self.rfile.read(length))

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    # --- the API ------------------------------------------------------------------
    def _send(
        self,
        handler: BaseHTTPRequestHandler,
        status: int,
        body: bytes,
        headers: dict[str, str] | None = None,
    ) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(body)

    def _error(
        self,
        handler: BaseHTTPRequestHandler,
        status: int,
        message: str,
        *,
        type_: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> int:
        body = {"error": {"message": message, "type": type_, "param": param, "code": code}}
        self._send(handler, status, json.dumps(body).encode(), headers)
        return status

    def _problem(self, body: Any) -> tuple[str, str | None] | None:
        """What the real API says about ``body`` (message, param), or None."""
        if not isinstance(body, dict):
            return "We could not parse the JSON body of your request.", None
        unknown = sorted(set(body) - KNOWN_ARGUMENTS)
        if unknown:
            return f"Unrecognized request argument supplied: {unknown[0]}", unknown[0]
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "you must provide a model parameter", "model"
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return "[] is too short - 'messages'", "messages"
        for i, message in enumerate(messages):
            if not isinstance(message, dict) or message.get("role") not in ROLES:
                return f"Invalid value for 'messages[{i}].role'.", f"messages[{i}].role"
            content = message.get("content")
            if not isinstance(content, str | list):
                return f"Invalid type for 'messages[{i}].content'.", f"messages[{i}].content"
        temperature = body.get("temperature", 1)
        if (
            not isinstance(temperature, int | float)
            or isinstance(temperature, bool)
            or not 0 <= temperature <= 2
        ):
            return "Invalid 'temperature': must be between 0 and 2.", "temperature"
        for name in ("max_tokens", "max_completion_tokens"):
            value = body.get(name)
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 1
            ):
                return f"Invalid '{name}': integer below minimum value.", name
        if body.get("stream"):
            return "This fake does not stream.", "stream"
        return None

    def _handle(self, handler: BaseHTTPRequestHandler, raw: bytes | None) -> None:
        headers = {k: v for k, v in handler.headers.items() if k.lower() != "authorization"}
        record: dict[str, Any] = {
            "method": handler.command,
            "path": handler.path,
            "headers": headers,
        }
        with self._lock:
            self.calls.append(record)
            self.active += 1
            self.peak_active = max(self.peak_active, self.active)
        try:
            record["status"] = self._answer(handler, raw, record)
        finally:
            with self._lock:
                self.active -= 1

    def _answer(
        self, handler: BaseHTTPRequestHandler, raw: bytes | None, record: dict[str, Any]
    ) -> int:
        if handler.command != "POST" or handler.path.split("?")[0] != "/v1/chat/completions":
            return self._error(
                handler, 404, f"Invalid URL ({handler.command} {handler.path})", code=None
            )
        if self.api_key and handler.headers.get("Authorization") != f"Bearer {self.api_key}":
            return self._error(handler, 401, "Incorrect API key provided.", code="invalid_api_key")
        if "application/json" not in (handler.headers.get("Content-Type") or ""):
            return self._error(handler, 400, "Content-Type must be application/json.")
        try:
            body = json.loads(raw or b"")
        except ValueError:
            body = None
        record["body"] = body
        problem = self._problem(body)
        if problem is not None:
            return self._error(handler, 400, problem[0], param=problem[1])
        fault = self._fault()
        if fault is not None:
            if fault.kind == "429":
                extra = {"Retry-After": fault.retry_after} if fault.retry_after else {}
                return self._error(
                    handler,
                    429,
                    "Rate limit reached for requests.",
                    type_="requests",
                    code="rate_limit_exceeded",
                    headers=extra,
                )
            if fault.kind in ("500", "503"):
                return self._error(
                    handler,
                    int(fault.kind),
                    "The server had an error while processing your request.",
                    type_="server_error",
                )
            if fault.kind == "garbage":
                self._send(handler, 200, b"<html>502 Bad Gateway</html>")
                return 200
            if fault.kind == "drop":
                handler.close_connection = True
                handler.connection.close()
                return 0
            if fault.kind == "slow":
                time.sleep(fault.delay)
        if self.delay:
            time.sleep(self.delay)
        assert isinstance(body, dict)
        messages = body["messages"]
        text = self.answer(messages)
        prompt = sum(_words(str(m.get("content", ""))) for m in messages)
        completion = _words(text)
        answer = {
            "id": "chatcmpl-" + secrets.token_hex(12),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "system_fingerprint": self.fingerprint,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
        with contextlib.suppress(OSError):  # the client gave up (its timeout)
            self._send(handler, 200, json.dumps(answer).encode())
        return 200


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8601
    fake = FakeOpenAI(delay=float(sys.argv[2]) if len(sys.argv) > 2 else 0.0).start(port)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fake.stop()
