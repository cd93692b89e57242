"""What MTurk demands of a stage: the requirements it checks from workers' history."""

from __future__ import annotations

from campaigns.design.platform_rules import PlatformRules


class MTurkRules(PlatformRules):
    """MTurk: system qualifications (approval rate, approved HITs, locale, adult, Masters)."""

    name = "mturk"
    checked_kinds = frozenset(
        {"approval_rate", "approved_count", "locale", "country", "adult", "masters"}
    )
