"""Presentation helpers for the requester pages: money and timestamps."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from campaigns.design.platform import platform_for

register = template.Library()

CENT = Decimal("0.01")


@register.filter
def money(amount: Decimal | int | str | None, currency: str = "") -> str:
    """``1.25 USD``. Rounded half-up to cents, as platforms charge; never via float."""
    if amount is None or amount == "":
        return "—"
    try:
        value = Decimal(str(amount)).quantize(CENT, rounding=ROUND_HALF_UP)
    except (InvalidOperation, ValueError):
        return str(amount)
    return f"{value:,} {currency}".strip()


@register.filter
def utc(value: datetime | None) -> SafeString | str:
    """A timestamp as UTC ISO 8601 inside ``<time>``: unambiguous for a distributed team."""
    if value is None:
        return "—"
    aware = value if timezone.is_aware(value) else timezone.make_aware(value, UTC)
    moment = aware.astimezone(UTC).replace(microsecond=0)
    iso = moment.isoformat().replace("+00:00", "Z")
    return format_html('<time datetime="{}">{}</time>', iso, moment.strftime("%Y-%m-%d %H:%M UTC"))


@register.filter
def money_mode(campaign: Any) -> str:
    """How the campaign's platform treats money, for headers: "sandbox" (no real money),
    "real money; test participants for pilots" (a platform without a sandbox that
    offers test participants, Prolific), "real money", or "" (the local workforce)."""
    platform = platform_for(campaign.provider)
    if not platform.moves_money:
        return ""
    if platform.has_sandbox:
        return "sandbox" if campaign.sandbox else "real money"
    if platform.rules().test_participants:
        return "real money; test participants for pilots"
    return "real money"
