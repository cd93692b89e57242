"""Django's CSRF token masks, drawn with one read of the system's random source.

Every page with a form asks ``django.middleware.csrf.get_token``, which masks the
secret with a fresh random string (so that a compressed page does not leak it: BREACH).
Django draws that string with ``get_random_string``: one ``secrets.choice`` per
character, and each ``choice`` reads ``os.urandom`` again, 32 system calls and some
70 µs of CPU per page. ``random_csrf_string`` draws the same thing (32 characters,
each uniform over the same 62, from the same source) out of one ``os.urandom`` read,
by rejection: a byte counts only below 248 (4 x 62), so every character stays
equally likely. ``install`` puts it in place of Django's function (``QaportalConfig
.ready``); the token, the cookie and the checks are Django's own.
"""

from __future__ import annotations

import os

from django.middleware import csrf

_ALPHABET = csrf.CSRF_ALLOWED_CHARS
_LENGTH = csrf.CSRF_SECRET_LENGTH
_LIMIT = 256 - 256 % len(_ALPHABET)  # 248: the largest multiple of 62 a byte can reach


def random_csrf_string() -> str:
    """``CSRF_SECRET_LENGTH`` characters, each uniform over ``CSRF_ALLOWED_CHARS``."""
    out: list[str] = []
    while len(out) < _LENGTH:
        # 48 bytes hold 32 usable ones but for a chance far below 1 in 10^12; else again.
        for byte in os.urandom(48):
            if byte < _LIMIT:
                out.append(_ALPHABET[byte % len(_ALPHABET)])
                if len(out) == _LENGTH:
                    break
    return "".join(out)


def install() -> None:
    """Django's CSRF masks (and new secrets) from :func:`random_csrf_string`. Fails
    loudly if a Django upgrade renames the function it replaces."""
    if not callable(getattr(csrf, "_get_new_csrf_string", None)):
        raise RuntimeError(
            "django.middleware.csrf._get_new_csrf_string is gone: see qaportal/csrf_mask.py"
        )
    csrf._get_new_csrf_string = random_csrf_string
