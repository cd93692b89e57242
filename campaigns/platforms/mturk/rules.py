"""What MTurk demands of a stage: the requirements it checks from workers' history."""

from __future__ import annotations

from campaigns.design.platform_rules import PlatformRules


class MTurkRules(PlatformRules):
    """MTurk: system qualifications (approval rate, approved HITs, locale, adult, Masters)."""

    name = "mturk"
    # Held to Prolific's length since rejections were first written (MTurk itself takes
    # any RequesterFeedback): a rejected worker is told why at length.
    rejection_message_min = 100
    checked_kinds = frozenset(
        {"approval_rate", "approved_count", "locale", "country", "adult", "masters"}
    )
