"""What a campaign's owner may store for MTurk instead of the environment's account
(``campaigns.platforms.credentials``): the keyword arguments of
``MTurkProvider.from_credentials``."""

from __future__ import annotations

from campaigns.design.platform import CredentialField

_PRINTABLE = r"^[\x21-\x7e]{%d,%d}$"

CREDENTIAL_FIELDS = (
    CredentialField("access_key_id", True, r"^[A-Z0-9]{16,128}$", "AWS access key id"),
    CredentialField("secret_access_key", True, _PRINTABLE % (16, 128), "AWS secret access key"),
)
