"""Pieces shared by the API modules: lookups that answer 404, fields, strict input."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema_field
from rest_framework import exceptions, serializers
from rest_framework.request import Request

from campaigns.design.selectors import campaign_get_visible, stage_list_visible
from campaigns.models import Campaign, Stage
from qaportal.money import MoneyFormatError, money_parse

MAX_DURATION_SECONDS = 365 * 24 * 3600

# Responses documented alike by the local workforce and review endpoints.
NOT_VISIBLE = OpenApiResponse(description="No such object, or not visible to you.")
BAD_INPUT = OpenApiResponse(
    description="Invalid input (field names map to messages), or a campaign not on the "
    "local workforce."
)


def authenticated_user(request: Request) -> User:
    """The signed-in user; the default IsAuthenticated permission has let no one else in."""
    user = request.user
    if isinstance(user, AnonymousUser):
        raise exceptions.NotAuthenticated()
    return user


def campaign_or_404(*, request: Request, slug: str) -> Campaign:
    """The campaign if the user may see it. Invisible and missing look the same (404)."""
    try:
        return campaign_get_visible(user=request.user, slug=slug)
    except Campaign.DoesNotExist:
        raise Http404("No campaign with this slug.") from None


def campaign_stage_or_400(*, campaign: Campaign, stage_id: int | None) -> Stage | None:
    """The campaign's stage ``stage_id`` for a ``stage`` filter (None when not given);
    an id of no stage of this campaign is a 400 on ``stage``."""
    if stage_id is None:
        return None
    stage = campaign.stages.filter(pk=stage_id).first()
    if stage is None:
        raise serializers.ValidationError({"stage": ["No stage with this id in this campaign."]})
    return stage


def stage_or_404(*, request: Request, stage_id: int) -> Stage:
    """The stage if the user may see its campaign; 404 otherwise."""
    try:
        return stage_list_visible(user=request.user).get(pk=stage_id)
    except Stage.DoesNotExist:
        raise Http404("No stage with this id.") from None


def validated(serializer_class: type[serializers.Serializer], data: Any) -> Any:
    """``data`` (a request's body or query) as ``serializer_class`` validates it: its
    ``validated_data``; invalid input raises the 400 ``ValidationError``."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


@extend_schema_field(
    {
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_DURATION_SECONDS,
        "description": "Duration in whole seconds.",
    }
)
class DurationSecondsField(serializers.Field):
    """A duration as whole seconds: unambiguous for scripts, unlike "1 02:00:00"."""

    default_error_messages = {
        "invalid": "A duration is a whole number of seconds.",
        "range": f"A duration is from 1 to {MAX_DURATION_SECONDS} seconds.",
    }

    def to_representation(self, value: timedelta) -> int:
        return int(value.total_seconds())

    def to_internal_value(self, data: Any) -> timedelta:
        if isinstance(data, bool) or not isinstance(data, int | str):
            self.fail("invalid")
        try:
            seconds = int(data)
        except ValueError:
            self.fail("invalid")
        if not 1 <= seconds <= MAX_DURATION_SECONDS:
            self.fail("range")
        return timedelta(seconds=seconds)


def money_field(**kwargs: Any) -> serializers.DecimalField:
    """Money out as a string with exactly the digits the domain computed (no float)."""
    return serializers.DecimalField(
        max_digits=None, decimal_places=None, coerce_to_string=True, read_only=True, **kwargs
    )


class MoneyField(serializers.DecimalField):
    """A decimal amount in, written plainly (``qaportal.money.money_parse``): ASCII
    digits with at most one point. ``1e1``, ``1_0``, full-width digits, NaN and
    Infinity, which ``Decimal`` would take, are a 400 with a message saying so."""

    def to_internal_value(self, data: Any) -> Any:
        try:
            money_parse(data, places=None, allow_negative=True)
        except MoneyFormatError as exc:
            raise serializers.ValidationError(str(exc)) from None
        return super().to_internal_value(data.strip() if isinstance(data, str) else data)


class StrictInputSerializer(serializers.Serializer):
    """Rejects fields it does not know, so a typo or a read-only field fails loudly."""

    def to_internal_value(self, data: Any) -> Any:
        if hasattr(data, "keys"):
            unknown = sorted(set(data.keys()) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {name: ["Unknown or read-only field."] for name in unknown}
                )
        return super().to_internal_value(data)
