"""Reads of the assist room: what a page polls, and a requester's endpoints."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet
from django.utils import timezone

from campaigns.models import (
    AdversarialTry,
    ModelCall,
    ModelCallStatus,
    ModelEndpoint,
    Stage,
)
from campaigns.tasktypes.base import adversarial_config


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


def _try_view(attempt: AdversarialTry) -> TryView:
    call = attempt.model_call
    waiting = without = False
    if not attempt.judged_by and not attempt.model_answer:
        if call is None:
            without = True
        else:
            deadline = call.created_at + timedelta(seconds=float(call.endpoint.timeout_seconds))
            if call.status == ModelCallStatus.DONE:
                pass  # settled in the call's transaction: not reached
            elif call.status == ModelCallStatus.UNAVAILABLE or timezone.now() >= deadline:
                without = True
            else:
                waiting = True
    return TryView(
        number=attempt.try_number,
        question=attempt.question,
        entry=attempt.entry,
        model_answer=attempt.model_answer,
        call_id=attempt.model_call_id,
        fooled=attempt.fooled,
        judged_by=attempt.judged_by,
        waiting=waiting,
        to_mark=bool(attempt.model_answer) and not attempt.judged_by,
        without_model=without or attempt.model_unavailable,
    )


def adversarial_tries(*, assignment_id: int) -> list[TryView]:
    """The tries of an assignment, in order, as its page shows them (one query)."""
    attempts = (
        AdversarialTry.objects.filter(assignment_id=assignment_id)
        .select_related("model_call__endpoint")
        .order_by("try_number")
    )
    return [_try_view(a) for a in attempts]


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
