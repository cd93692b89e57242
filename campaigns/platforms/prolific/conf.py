"""Prolific's settings keys (``ProlificPlatform.settings_keys``), read from the
environment when the platform is registered. Secrets: never logged."""

from __future__ import annotations

from campaigns.design.platform import SettingKey

SETTINGS_KEYS = (
    # Prolific's service fee as a fraction of participant payments; depends on the account.
    SettingKey("PROLIFIC_FEE_RATE", "0.333"),
    SettingKey("PROLIFIC_API_TOKEN", ""),
    SettingKey("PROLIFIC_WEBHOOK_SECRET", ""),
    SettingKey("PROLIFIC_API_URL", "https://api.prolific.com"),
    SettingKey("PROLIFIC_WORKSPACE_ID", ""),
    SettingKey("PROLIFIC_WEBHOOK_TOLERANCE", 300, "int"),
    SettingKey("PROLIFIC_TIMEOUT", 20.0, "float"),
    SettingKey("PROLIFIC_MAX_RETRIES", 4, "int"),
    SettingKey("PROLIFIC_BACKOFF_BASE", 1.0, "float"),
    SettingKey("PROLIFIC_BACKOFF_MAX", 30.0, "float"),
    # Seconds between checks of what Prolific does after answering (bulk approval, bonuses).
    SettingKey("PROLIFIC_CONFIRM_AFTER", 30.0, "float"),
    # How long the filters catalogue (GET /api/v1/filters/: the countries' choice ids) is kept.
    SettingKey("PROLIFIC_FILTERS_CACHE_SECONDS", 86400, "int"),
)
