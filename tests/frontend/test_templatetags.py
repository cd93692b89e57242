from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

from frontend.templatetags.frontend_tags import money, utc


def test_money_rounds_half_up_to_cents_with_currency():
    assert money(Decimal("1.255"), "USD") == "1.26 USD"
    assert money(Decimal("1234.5"), "GBP") == "1,234.50 GBP"
    assert money(0, "USD") == "0.00 USD"


def test_money_of_nothing_is_a_dash():
    assert money(None, "USD") == "—"


def test_utc_converts_to_utc_iso():
    paris = timezone(timedelta(hours=2))
    rendered = utc(datetime(2025, 6, 1, 14, 30, 5, 123, tzinfo=paris))
    assert 'datetime="2025-06-01T12:30:05Z"' in rendered
    assert "2025-06-01 12:30 UTC" in rendered


def test_utc_of_nothing_is_a_dash():
    assert utc(None) == "—"
    assert "Z" in utc(datetime(2025, 1, 1, tzinfo=UTC))
