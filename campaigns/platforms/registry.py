"""The platforms qaportal knows: one line each. Called once, from ``CampaignsConfig.ready()``.

Adding a platform: its folder under ``campaigns/platforms/`` (a ``Provider`` for
operations, a ``Platform`` for the rest: fees, credentials, sync, worker pages and
webhooks) and one line here.
"""

from __future__ import annotations

from campaigns.design.platform import platform_register
from campaigns.platforms import effects  # noqa: F401 (registers the shared operation effects)
from campaigns.platforms.local.platform import LocalPlatform
from campaigns.platforms.mturk import records  # noqa: F401 (registers MTurk's effects)
from campaigns.platforms.mturk.platform import MTurkPlatform
from campaigns.platforms.prolific.platform import ProlificPlatform

PLATFORMS = (LocalPlatform(), ProlificPlatform(), MTurkPlatform())


def platforms_register() -> None:
    """Make every platform answer ``platform_for``."""
    for platform in PLATFORMS:
        platform_register(platform)
