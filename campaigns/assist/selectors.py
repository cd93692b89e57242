"""Reads of the assist room: what a page polls, and a requester's endpoints."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet
from django.utils import timezone

from campaigns.models import ModelCall, ModelCallStatus, ModelEndpoint


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
