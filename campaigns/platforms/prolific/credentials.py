"""What a campaign's owner may store for Prolific instead of the environment's account
(``campaigns.platforms.credentials``): the keyword arguments of
``ProlificProvider.from_credentials``."""

from __future__ import annotations

from campaigns.design.platform import CredentialField

_PRINTABLE = r"^[\x21-\x7e]{%d,%d}$"

CREDENTIAL_FIELDS = (
    CredentialField("api_token", True, _PRINTABLE % (20, 400), "Prolific API token"),
    CredentialField("workspace_id", False, r"^[0-9a-f]{24}$", "Prolific workspace id"),
)
