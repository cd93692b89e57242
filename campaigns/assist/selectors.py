"""Reads of the assist room: what a page polls, and a requester's endpoints."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import connection
from django.db.models import QuerySet
from django.utils import timezone

from campaigns.models import (
    AdversarialTry,
    Assignment,
    ModelCall,
    ModelCallStatus,
    ModelEndpoint,
    Stage,
)
from campaigns.tasktypes.base import adversarial_config
from qaportal import prepared


@dataclass(frozen=True)
class ModelCallState:
    """A call as a page sees it. ``final``: done or unavailable. ``waited_out``: the
    page has waited the endpoint's timeout since the call was asked for; it goes on
    without the model (as for ``unavailable``) while the call may still finish later."""

    call_id: int
    status: str
    answer: str
    model_id: str
    model_version: str
    error: str
    final: bool
    waited_out: bool

    @property
    def go_on_without_model(self) -> bool:
        """Whether the page should stop waiting and carry on without the model's answer."""
        return self.status == ModelCallStatus.UNAVAILABLE or (
            self.status != ModelCallStatus.DONE and self.waited_out
        )


def model_call_state(*, call_id: int) -> ModelCallState | None:
    """The state of call ``call_id`` for a page to poll (None: no such call). One query."""
    call = (
        ModelCall.objects.filter(pk=call_id)
        .select_related("endpoint")
        .only(
            "status",
            "answer",
            "model_id",
            "model_version",
            "error",
            "created_at",
            "endpoint__timeout_seconds",
        )
        .first()
    )
    if call is None:
        return None
    deadline = call.created_at + timedelta(seconds=float(call.endpoint.timeout_seconds))
    return ModelCallState(
        call_id=call.pk,
        status=call.status,
        answer=call.answer if call.status == ModelCallStatus.DONE else "",
        model_id=call.model_id,
        model_version=call.model_version,
        error=call.error if call.status == ModelCallStatus.UNAVAILABLE else "",
        final=call.status in (ModelCallStatus.DONE, ModelCallStatus.UNAVAILABLE),
        waited_out=timezone.now() >= deadline,
    )


def model_endpoints_for(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[ModelEndpoint]:
    """The endpoints ``user`` owns (none when signed out), by name."""
    if not user.is_authenticated:
        return ModelEndpoint.objects.none()
    return ModelEndpoint.objects.filter(owner_id=user.pk).order_by("name", "id")


def model_endpoint_visible(
    *, user: AbstractBaseUser | AnonymousUser, endpoint_id: int
) -> ModelEndpoint | None:
    """Endpoint ``endpoint_id`` if ``user`` owns it or is staff, else None."""
    if not user.is_authenticated:
        return None
    endpoints = ModelEndpoint.objects.all()
    if not getattr(user, "is_staff", False):
        endpoints = endpoints.filter(owner_id=user.pk)
    return endpoints.filter(pk=endpoint_id).first()


# --- Adversarial writing ----------------------------------------------------------------


@dataclass(frozen=True)
class TryView:
    """One try as the worker's page shows it. ``waiting``: the model has not answered
    and the page still waits; ``to_mark``: the worker is to say whether the model's
    answer is right; ``without_model``: the model could not be asked in time."""

    number: int
    question: str
    entry: dict[str, Any]
    model_answer: str
    call_id: int | None
    fooled: bool | None
    judged_by: str
    waiting: bool
    to_mark: bool
    without_model: bool


@dataclass(frozen=True)
class TriesAllow:
    """What the worker may do next: another try, submit; and why not."""

    may_try: bool
    may_submit: bool
    why_not: str


# A try as its pages and its submission read it: the try's own columns, and its call's
# status, age, timeout and model (no prompt, no endpoint key). On PostgreSQL a prepared
# statement (``qaportal.prepared``): every adversarial work page and submission runs it.
TRY_COLUMNS = (
    "try_number",
    "question",
    "entry",
    "model_answer",
    "model_call_id",
    "fooled",
    "judged_by",
    "model_unavailable",
    "item_id",
    "model_call__status",
    "model_call__created_at",
    "model_call__endpoint__timeout_seconds",
    "model_call__model_id",
    "model_call__model_version",
)
_TRIES_SQL = (
    "SELECT t.try_number, t.question, t.entry, t.model_answer, t.model_call_id, t.fooled,"
    " t.judged_by, t.model_unavailable, t.item_id, c.status, c.created_at,"
    " e.timeout_seconds, c.model_id, c.model_version"
    " FROM campaigns_adversarialtry t"
    " LEFT JOIN campaigns_modelcall c ON c.id = t.model_call_id"
    " LEFT JOIN campaigns_modelendpoint e ON e.id = c.endpoint_id"
    " WHERE t.assignment_id = %s ORDER BY t.try_number"
)


def adversarial_try_rows(*, assignment_id: int) -> list[dict[str, Any]]:
    """The tries of an assignment in order, as dicts keyed by ``TRY_COLUMNS`` (one
    query; the call's columns None when the try has no call)."""
    if connection.vendor != "postgresql":
        return list(
            AdversarialTry.objects.filter(assignment_id=assignment_id)
            .order_by("try_number")
            .values(*TRY_COLUMNS)
        )
    with connection.cursor() as cursor:
        prepared.execute(cursor, _TRIES_SQL, [assignment_id])
        rows = [dict(zip(TRY_COLUMNS, row, strict=True)) for row in cursor.fetchall()]
    for row in rows:
        if isinstance(row["entry"], str | bytes):  # JSON columns come as text (Django's)
            row["entry"] = json.loads(row["entry"])
    return rows


def _try_view(row: dict[str, Any], now: datetime) -> TryView:
    waiting = without = False
    if not row["judged_by"] and not row["model_answer"]:
        status = row["model_call__status"]
        if row["model_call_id"] is None:
            without = True
        elif status == ModelCallStatus.DONE:
            pass  # settled in the call's transaction: not reached
        else:
            deadline = row["model_call__created_at"] + timedelta(
                seconds=float(row["model_call__endpoint__timeout_seconds"])
            )
            if status == ModelCallStatus.UNAVAILABLE or now >= deadline:
                without = True
            else:
                waiting = True
    return TryView(
        number=row["try_number"],
        question=row["question"],
        entry=row["entry"],
        model_answer=row["model_answer"],
        call_id=row["model_call_id"],
        fooled=row["fooled"],
        judged_by=row["judged_by"],
        waiting=waiting,
        to_mark=bool(row["model_answer"]) and not row["judged_by"],
        without_model=without or row["model_unavailable"],
    )


def try_views(rows: list[dict[str, Any]]) -> list[TryView]:
    """``adversarial_try_rows``' rows as the page shows them."""
    now = timezone.now()
    return [_try_view(row, now) for row in rows]


def adversarial_tries(*, assignment_id: int) -> list[TryView]:
    """The tries of an assignment, in order, as its page shows them (one query)."""
    return try_views(adversarial_try_rows(assignment_id=assignment_id))


_ROWS = "_adversarial_try_rows"


def assignment_try_rows(*, assignment: Assignment) -> list[dict[str, Any]]:
    """``adversarial_try_rows`` of ``assignment``, read once per loaded assignment object:
    a request asks more than once (the work page: the form filled with the last try and
    the panel; a submission: its check of the tries, then the claim it stores, both
    with the assignment's row locked). Tries made later are not seen by this object."""
    if _ROWS not in assignment.__dict__:
        assignment.__dict__[_ROWS] = adversarial_try_rows(assignment_id=assignment.pk)
    rows: list[dict[str, Any]] = assignment.__dict__[_ROWS]
    return rows


def tries_allow(*, tries: list[TryView], cfg: dict[str, Any]) -> TriesAllow:
    """Whether another try and the submission are allowed after ``tries``: one try at a
    time (the last one answered and judged, or gone on without the model), none after
    a fool or past ``max_tries``; submitting once the last try is settled."""
    last = tries[-1] if tries else None
    settled = last is not None and not last.waiting and not last.to_mark
    if last is not None and not settled:
        why = "Wait for the model's answer." if last.waiting else "Mark the model's answer first."
        return TriesAllow(False, False, why)
    if any(t.fooled for t in tries):
        return TriesAllow(False, True, "You fooled the model: submit your question.")
    if len(tries) >= int(cfg.get("max_tries", 1)):
        return TriesAllow(False, settled, "No tries left: submit your last question.")
    return TriesAllow(True, settled, "")


@dataclass(frozen=True)
class AdversarialPanel:
    """The adversarial part of a worker's page: the tries, what is allowed next."""

    max_tries: int
    tries: list[TryView]
    allow: TriesAllow

    @property
    def tries_left(self) -> int:
        return max(0, self.max_tries - len(self.tries))

    @property
    def last(self) -> TryView | None:
        return self.tries[-1] if self.tries else None


def adversarial_panel(*, stage: Stage, assignment_id: int) -> AdversarialPanel | None:
    """The panel for ``assignment_id``'s page (None: the stage is not adversarial)."""
    cfg = adversarial_config(stage.config)
    if cfg is None:
        return None
    tries = adversarial_tries(assignment_id=assignment_id)
    return AdversarialPanel(
        max_tries=int(cfg["max_tries"]), tries=tries, allow=tries_allow(tries=tries, cfg=cfg)
    )


def assignment_adversarial_panel(*, assignment: Assignment) -> AdversarialPanel | None:
    """The panel of ``assignment``'s page (None: the stage is not adversarial, and no
    query is made); its tries read once per loaded assignment (``assignment_try_rows``)."""
    cfg = adversarial_config(assignment.hit.stage.config)
    if cfg is None:
        return None
    tries = try_views(assignment_try_rows(assignment=assignment))
    return AdversarialPanel(
        max_tries=int(cfg["max_tries"]), tries=tries, allow=tries_allow(tries=tries, cfg=cfg)
    )
