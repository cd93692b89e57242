"""Mechanical Turk's settings keys (``MTurkPlatform.settings_keys``), read from the
environment when the platform is registered. Secrets: never logged. Sandbox unless
MTURK_SANDBOX is off."""

from __future__ import annotations

from campaigns.design.platform import SettingKey

SETTINGS_KEYS = (
    SettingKey("MTURK_ACCESS_KEY_ID", ""),
    SettingKey("MTURK_SECRET_ACCESS_KEY", ""),
    SettingKey("MTURK_SANDBOX", True, "bool"),
    SettingKey("MTURK_ENDPOINT_URL", ""),  # empty: MTurk's own endpoint
    SettingKey("MTURK_MAX_ATTEMPTS", 3, "int"),  # botocore attempts, first included
    SettingKey("MTURK_RETRY_MODE", "adaptive"),  # or "standard"
    SettingKey("MTURK_RETRIES", 4, "int"),
    SettingKey("MTURK_BACKOFF_BASE", 1.0, "float"),
    SettingKey("MTURK_TIMEOUT", 20.0, "float"),
    SettingKey("MTURK_CONNECT_TIMEOUT", 5.0, "float"),
    SettingKey("MTURK_FRAME_HEIGHT", 0, "int"),
    SettingKey("MTURK_AUTO_APPROVAL_DAYS", 3, "int"),
    SettingKey("MTURK_SYNC_THREADS", 4, "int"),  # HITs read at once
    # Origins besides MTurk's own that an ExternalQuestion page may post its assignment
    # back to (turkSubmitTo) and be framed by: for tests against a local fake of MTurk.
    SettingKey("MTURK_SUBMIT_HOSTS_EXTRA", [], "list"),
)
