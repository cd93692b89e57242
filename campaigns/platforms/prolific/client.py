"""A small client for Prolific's REST API (https://docs.prolific.com/api-reference).

Token authentication (``Authorization: Token …``), timeouts on every call, and
retries with exponential backoff on 429 and 5xx, honouring ``Retry-After``. Calls
that are not idempotent on Prolific's side (paying a bulk bonus, creating a study)
are retried only when the platform cannot have acted on them: a 429, or a
connection that was never made. Any other failure of such a call raises
``TransientProviderError`` to the caller, who checks the platform before repeating.

The token never appears in logs, errors or ``repr``; participant ids are logged
only shortened.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from email.utils import parsedate_to_datetime
from typing import Any

import requests

from campaigns.platforms.base import PermanentProviderError, TransientProviderError
from campaigns.platforms.prolific.filters import DEFAULT_API_URL

logger = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


def _retry_after(response: requests.Response) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_message(response: requests.Response) -> str:
    """The platform's own explanation, shortened (shown to the requester)."""
    try:
        body = response.json()
    except ValueError:
        body = response.text
    text = str(body.get("error", body) if isinstance(body, dict) else body)
    return f"Prolific answered {response.status_code}: {text[:500]}"


class ProlificClient:
    """HTTP calls to Prolific. One ``requests.Session`` per client."""

    def __init__(
        self,
        *,
        token: str,
        base_url: str = DEFAULT_API_URL,
        timeout: float = 20.0,
        max_retries: int = 4,
        backoff_base: float = 1.0,
        backoff_max: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._token = token
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._sleep = sleep
        self._session = requests.Session()
        self._session.headers.update(
            {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        )

    def __repr__(self) -> str:  # never the token
        return f"ProlificClient({self.base_url!r})"

    # --- transport -------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        idempotent: bool = True,
        headers_out: dict[str, str] | None = None,
    ) -> Any:
        """Send one call, retrying what is safe to retry; the decoded JSON (or None).

        4xx other than 429 raise ``PermanentProviderError``. Retries exhausted, or an
        unsafe-to-retry failure of a non-idempotent call, raise ``TransientProviderError``.
        ``headers_out``: filled with the successful answer's headers (a hook
        subscription's ``X-Hook-Secret`` comes in one).
        """
        url = f"{self.base_url}{path}"
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._session.request(
                    method, url, json=json, params=params, timeout=self.timeout
                )
            except requests.ConnectTimeout as exc:
                # Never connected: nothing reached Prolific, safe for any call.
                error = TransientProviderError(
                    f"Prolific unreachable: {type(exc).__name__}", unprocessed=True
                )
                delay = None
            except requests.RequestException as exc:
                error = TransientProviderError(f"Prolific call failed: {type(exc).__name__}")
                if not idempotent:
                    raise error from exc
                delay = None
            else:
                if response.status_code < 400:
                    if headers_out is not None:
                        headers_out.update(response.headers)
                    if not response.content:
                        return None
                    try:
                        return response.json()
                    except ValueError:
                        return response.text
                if response.status_code not in RETRY_STATUSES:
                    raise PermanentProviderError(_error_message(response))
                delay = _retry_after(response)
                error = TransientProviderError(
                    _error_message(response),
                    retry_after=delay,
                    unprocessed=response.status_code == 429,
                )
                # A 5xx may come after the platform acted: only 429 is surely unprocessed.
                if response.status_code != 429 and not idempotent:
                    raise error
            if attempt > self.max_retries:
                raise error
            wait = delay if delay is not None else self.backoff_base * 2 ** (attempt - 1)
            wait = min(wait, self.backoff_max)
            logger.warning(
                "prolific %s %s: %s; retry %d in %.1fs", method, path, error, attempt, wait
            )
            self._sleep(wait)

    def _post_once(self, path: str, body: Any = None) -> Any:
        """POST ``body`` to ``path``, never retried (Prolific would act twice): the
        decoded JSON, as ``request`` answers it."""
        return self.request("POST", path, json=body, idempotent=False)

    def listed(self, path: str, *, params: dict[str, Any] | None = None) -> list[Any]:
        """The ``results`` of a list operation whose reference documents no paging."""
        body = self.request("GET", path, params=params)
        return list(body.get("results", []) if isinstance(body, dict) else body or [])

    def paginate(
        self, path: str, *, params: dict[str, Any] | None = None, page_size: int = 200
    ) -> Iterator[Any]:
        """Every result of a list operation paged with ``page`` and ``page_size`` (the
        reference documents them for ``get-submissions``). Stops at a page without a
        ``_links.next.href``, a short or empty page, or a page that brings no new id
        (a server ignoring ``page`` cannot make it read page 1 for ever)."""
        query = dict(params or {})
        seen: set[str] = set()
        page = 1
        while True:
            body = self.request("GET", path, params={**query, "page": page, "page_size": page_size})
            results = body.get("results", []) if isinstance(body, dict) else []
            fresh = [r for r in results if str(r.get("id", id(r))) not in seen]
            seen.update(str(r.get("id", id(r))) for r in fresh)
            yield from fresh
            links = body.get("_links", {}) if isinstance(body, dict) else {}
            nxt = links.get("next") if isinstance(links, dict) else None
            href = nxt.get("href") if isinstance(nxt, dict) else nxt
            if not href or not fresh or len(results) < page_size:
                return
            page += 1

    # --- studies ---------------------------------------------------------------------

    def study_create(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST /api/v1/studies/ — a draft study. Not idempotent: look up before retrying."""
        return dict(self._post_once("/api/v1/studies/", body))

    def study_get(self, study_id: str) -> dict[str, Any]:
        return dict(self.request("GET", f"/api/v1/studies/{study_id}/"))

    def studies_list(self) -> list[dict[str, Any]]:
        """GET /api/v1/studies/ (``get-studies``; the reference documents no paging)."""
        return self.listed("/api/v1/studies/")

    def study_update(self, study_id: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self.request("PATCH", f"/api/v1/studies/{study_id}/", json=body))

    def study_transition(self, study_id: str, action: str) -> dict[str, Any]:
        """POST /api/v1/studies/{id}/transition/: ``PUBLISH``, ``PAUSE``, ``START``, ``STOP``."""
        return dict(
            self.request("POST", f"/api/v1/studies/{study_id}/transition/", json={"action": action})
            or {}
        )

    def study_submissions(self, study_id: str) -> Iterator[dict[str, Any]]:
        """GET /api/v1/submissions/?study=… (``get-submissions``), every page.

        ``get-study-submissions`` documents no paging parameter at all, so the list
        operation that documents ``page`` and ``page_size`` is the one read."""
        return self.paginate("/api/v1/submissions/", params={"study": study_id})

    # --- submissions -----------------------------------------------------------------

    def submission_get(self, submission_id: str) -> dict[str, Any]:
        return dict(self.request("GET", f"/api/v1/submissions/{submission_id}/"))

    def submission_transition(self, submission_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST /api/v1/submissions/{id}/transition/ (idempotent on Prolific's side)."""
        return dict(
            self.request("POST", f"/api/v1/submissions/{submission_id}/transition/", json=body)
            or {}
        )

    def submissions_bulk_approve(self, submission_ids: list[str]) -> Any:
        """POST /api/v1/submissions/bulk-approve/ with ``submission_ids``: Prolific answers
        that the request was made; the approvals happen afterwards (read them back)."""
        return self.request(
            "POST", "/api/v1/submissions/bulk-approve/", json={"submission_ids": submission_ids}
        )

    # --- bonuses ---------------------------------------------------------------------

    def bonus_setup(self, *, study_id: str, csv_bonuses: str) -> dict[str, Any]:
        """POST /api/v1/submissions/bonus-payments/ — sets up, pays nothing."""
        body = {"study_id": study_id, "csv_bonuses": csv_bonuses}
        return dict(self._post_once("/api/v1/submissions/bonus-payments/", body))

    def bonus_pay(self, bulk_id: str) -> Any:
        """POST /api/v1/bulk-bonus-payments/{id}/pay/ — NOT idempotent: pays every time."""
        return self._post_once(f"/api/v1/bulk-bonus-payments/{bulk_id}/pay/")

    # --- messages, participant groups ------------------------------------------------

    def message_bulk(self, *, participant_ids: list[str], body: str, study_id: str) -> Any:
        """POST /api/v1/messages/bulk/ with ``ids``, ``body``, ``study_id``."""
        message = {"ids": participant_ids, "body": body, "study_id": study_id}
        return self._post_once("/api/v1/messages/bulk/", message)

    def participant_groups(self, *, workspace_id: str) -> list[dict[str, Any]]:
        """GET /api/v1/participant-groups/?workspace_id=… (``filter``, form style)."""
        return self.listed("/api/v1/participant-groups/", params={"workspace_id": workspace_id})

    def participant_group_create(self, *, workspace_id: str, name: str) -> dict[str, Any]:
        body = {"workspace_id": workspace_id, "name": name}
        return dict(self._post_once("/api/v1/participant-groups/", body))

    def participant_group_add(self, group_id: str, participant_ids: list[str]) -> Any:
        """POST …/participants/ — members already in the group are ignored (idempotent)."""
        return self.request(
            "POST",
            f"/api/v1/participant-groups/{group_id}/participants/",
            json={"participant_ids": participant_ids},
        )

    def participant_group_remove(self, group_id: str, participant_ids: list[str]) -> Any:
        return self.request(
            "DELETE",
            f"/api/v1/participant-groups/{group_id}/participants/",
            json={"participant_ids": participant_ids},
        )

    # --- filters ---------------------------------------------------------------------

    def filters_list(self, *, workspace_id: str = "") -> list[dict[str, Any]]:
        """GET /api/v1/filters/ (``get-filters``): every filter, select ones with their
        ``choices`` (choice id -> label)."""
        params = {"workspace_id": workspace_id} if workspace_id else None
        return self.listed("/api/v1/filters/", params=params)

    # --- testing (api-reference/testing) ---------------------------------------------

    def test_participant_create(self, *, email: str) -> dict[str, Any]:
        """POST /api/v1/researchers/participants/ with ``email``: a test participant."""
        return dict(self._post_once("/api/v1/researchers/participants/", {"email": email}) or {})

    def study_test(self, study_id: str) -> dict[str, Any]:
        """POST /api/v1/studies/{id}/test-study: publish a draft to the test participants;
        ``{"study_id", "study_url"}`` of the test study Prolific makes."""
        return dict(self._post_once(f"/api/v1/studies/{study_id}/test-study") or {})

    # --- hooks (api-reference/webhooks) ----------------------------------------------

    def hook_event_types(self) -> list[str]:
        """GET /api/v1/hooks/event-types/: the event types one can subscribe to."""
        body = self.request("GET", "/api/v1/hooks/event-types/")
        rows = body.get("results", []) if isinstance(body, dict) else body or []
        return [str(r.get("event_type", r)) if isinstance(r, dict) else str(r) for r in rows]

    def hook_secret_create(self, *, workspace_id: str) -> dict[str, Any]:
        """POST /api/v1/hooks/secrets/ — the workspace's signing secret (one active)."""
        return dict(self._post_once("/api/v1/hooks/secrets/", {"workspace_id": workspace_id}))

    def hook_subscriptions(self, *, workspace_id: str, is_enabled: bool) -> list[dict[str, Any]]:
        """GET /api/v1/hooks/subscriptions/?workspace_id=…&is_enabled=… (without
        ``is_enabled`` Prolific lists the enabled ones only)."""
        return self.listed(
            "/api/v1/hooks/subscriptions/",
            params={"workspace_id": workspace_id, "is_enabled": "true" if is_enabled else "false"},
        )

    def hook_subscribe(
        self, *, workspace_id: str, event_type: str, target_url: str
    ) -> tuple[dict[str, Any], str]:
        """POST /api/v1/hooks/subscriptions/; the subscription and its ``X-Hook-Secret``."""
        headers: dict[str, str] = {}
        body = self.request(
            "POST",
            "/api/v1/hooks/subscriptions/",
            json={"workspace_id": workspace_id, "event_type": event_type, "target_url": target_url},
            idempotent=False,
            headers_out=headers,
        )
        secret = next((v for k, v in headers.items() if k.lower() == "x-hook-secret"), "")
        if isinstance(body, dict) and isinstance(body.get("results"), list) and body["results"]:
            body = body["results"][0]  # the reference answers a SubscriptionList
        return dict(body or {}), secret

    def hook_secrets(self, *, workspace_id: str) -> list[dict[str, Any]]:
        """GET /api/v1/hooks/secrets/?workspace_id=… (``get-secrets``)."""
        return self.listed("/api/v1/hooks/secrets/", params={"workspace_id": workspace_id})

    def hook_delete(self, subscription_id: str) -> None:
        """DELETE /api/v1/hooks/subscriptions/{id}/ (``delete-subscription``)."""
        self.request("DELETE", f"/api/v1/hooks/subscriptions/{subscription_id}/")

    def hook_confirm(self, subscription_id: str, *, secret: str) -> dict[str, Any]:
        """POST /api/v1/hooks/subscriptions/{id}/ with the ``X-Hook-Secret``: confirms it."""
        return dict(
            self.request(
                "POST", f"/api/v1/hooks/subscriptions/{subscription_id}/", json={"secret": secret}
            )
            or {}
        )
