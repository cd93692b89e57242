"""The boto3 ``mturk`` client, and MTurk's errors mapped onto the provider's errors.

botocore signs every request (SigV4), validates parameters against the service
model and retries throttling and 5xx itself (``adaptive`` mode, ``max_attempts``).
What is left after its retries is mapped here: throttling, 5xx and connection
errors become ``TransientProviderError`` (the executor retries later), any other
``ClientError`` a ``PermanentProviderError`` carrying MTurk's own message. The
credentials never appear in logs, errors or ``repr``.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ParamValidationError,
)
from botocore.exceptions import (
    ConnectionError as BotoConnectionError,
)

from campaigns.platforms.base import PermanentProviderError, TransientProviderError

logger = logging.getLogger(__name__)

REGION = "us-east-1"
PRODUCTION_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"
SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
THROTTLING = frozenset(
    {"ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded"}
)
# Calls MTurk may have acted on even when the answer was lost, with no token to de-duplicate.
NOT_REPEATABLE = frozenset({"notify_workers"})
# MTurk's answer to a UniqueRequestToken it has already seen (the effect exists).
_ALREADY_PROCESSED = ("already been processed", "already exists", "unique request token")


class AlreadyProcessedError(PermanentProviderError):
    """MTurk saw this UniqueRequestToken before: the effect exists, find it instead."""


def _message(error: ClientError) -> tuple[str, str, int]:
    info = error.response.get("Error", {}) or {}
    code = str(info.get("Code", "") or "")
    message = str(info.get("Message", "") or "")
    status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    return code, message, status


class MTurkClient:
    """One boto3 client; ``call(operation, **params)`` with errors mapped, ``pages`` to list."""

    def __init__(
        self,
        *,
        access_key_id: str,
        secret_access_key: str,
        sandbox: bool = True,
        endpoint_url: str = "",
        max_attempts: int = 3,
        retry_mode: str = "adaptive",
        connect_timeout: float = 5.0,
        read_timeout: float = 20.0,
        max_pool_connections: int = 10,
        retries: int = 4,
        backoff_base: float = 1.0,
        backoff_max: float = 20.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.retries = retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._sleep = sleep
        self.sandbox = sandbox
        self.endpoint_url = endpoint_url or (SANDBOX_ENDPOINT if sandbox else PRODUCTION_ENDPOINT)
        config = Config(
            region_name=REGION,
            # total_max_attempts counts the first attempt too (botocore's max_attempts does not).
            retries={"mode": retry_mode, "total_max_attempts": max(1, max_attempts)},
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_pool_connections=max_pool_connections,
        )
        self._client = boto3.session.Session().client(
            "mturk",
            region_name=REGION,
            endpoint_url=self.endpoint_url,
            aws_access_key_id=access_key_id,
            aws_secret_access_key=secret_access_key,
            config=config,
        )
        self.calls = 0  # platform calls made (after botocore's own retries), for benches
        self._calls_lock = threading.Lock()  # the sync reads HITs from several threads

    def __repr__(self) -> str:  # never the keys
        return f"MTurkClient(endpoint={self.endpoint_url!r}, sandbox={self.sandbox})"

    def call(self, operation: str, **params: Any) -> dict[str, Any]:
        """``operation`` (the boto3 method name, say ``create_hit_with_hit_type``) with
        ``params``; its answer, or a mapped ``ProviderError``.

        On top of botocore's retries, throttling is retried ``retries`` times with
        jittered exponential backoff (MTurk did not act on a throttled call), and so are
        5xx and connection errors of calls that are safe to repeat (every call but
        ``notify_workers``: reads, and writes MTurk de-duplicates by UniqueRequestToken
        or refuses when repeated).
        """
        attempt = 0
        while True:
            try:
                return self._call_once(operation, **params)
            except TransientProviderError as exc:
                safe = exc.unprocessed or operation not in NOT_REPEATABLE
                if attempt >= self.retries or not safe:
                    raise
                attempt += 1
                delay = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
                self._sleep(delay * (0.5 + random.random() / 2))

    def _call_once(self, operation: str, **params: Any) -> dict[str, Any]:
        method: Callable[..., dict[str, Any]] = getattr(self._client, operation)
        with self._calls_lock:
            self.calls += 1
        try:
            return method(**params)
        except ClientError as exc:
            code, message, status = _message(exc)
            text = f"MTurk {operation}: {code}: {message}"[:1000]
            if code in THROTTLING or status == 429:
                raise TransientProviderError(text, unprocessed=True) from None
            if status >= 500 or code == "ServiceUnavailable":
                raise TransientProviderError(text) from None
            if any(p in message.lower() for p in _ALREADY_PROCESSED):
                raise AlreadyProcessedError(text) from None
            raise PermanentProviderError(text) from None
        except ParamValidationError as exc:
            raise PermanentProviderError(f"MTurk {operation}: invalid request: {exc}") from None
        except BotoConnectionError as exc:
            raise TransientProviderError(f"MTurk {operation}: connection failed: {exc}") from None
        except BotoCoreError as exc:  # a read timeout, an unparseable answer
            raise TransientProviderError(f"MTurk {operation}: {type(exc).__name__}") from None

    def pages(self, operation: str, key: str, **params: Any) -> Iterator[list[dict[str, Any]]]:
        """Each page of a list operation (``MaxResults`` 100, ``NextToken``): its ``key`` list."""
        token: str | None = params.pop("NextToken", None)
        while True:
            answer = self.call(
                operation, MaxResults=100, **params, **({"NextToken": token} if token else {})
            )
            yield list(answer.get(key) or [])
            token = answer.get("NextToken")
            if not token:
                return

    def page(
        self, operation: str, key: str, *, token: str | None = None, **params: Any
    ) -> tuple[list[dict[str, Any]], str | None]:
        """One page of a list operation from ``token``: (items, next token or None)."""
        answer = self.call(
            operation, MaxResults=100, **params, **({"NextToken": token} if token else {})
        )
        return list(answer.get(key) or []), answer.get("NextToken") or None
