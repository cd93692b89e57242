"""gunicorn's access log without worker identities: the values of ``workerId``,
``assignmentId`` and ``PROLIFIC_PID`` in query strings (the request line, the query
atom and the Referer) are replaced by ``[redacted]``. The Dockerfile and
docker-compose.yml run gunicorn with ``--logger-class`` set to this class.

Only the atoms the access log's format names are worked out: gunicorn's own ``atoms``
builds some seventy per request (every request and response header and every environ
entry, each escaped) to print the nine of its default format (~35 µs of a worker's CPU
per request, ~10 µs here). The lines are the same.
"""

from __future__ import annotations

import os
import re
from typing import Any

from gunicorn.glogging import Logger

# The parameters platforms put worker identities in (MTurk's ExternalQuestion and
# Prolific's study URL), matched whatever their case or URL-encoding of the name.
_IDENTITY = re.compile(
    r"(?i)((?:^|[?&;]|%3F|%26)(?:workerId|assignmentId|PROLIFIC_PID)(?:=|%3D))[^&;\s\"]*"
)
_REDACTED_ATOMS = ("r", "q", "f", "{referer}i")
# ``%(name)s`` in an access log format: the atom's key.
_ATOM_KEY = re.compile(r"%\(([^)]*)\)")


def redact(text: Any) -> Any:
    """``text`` with the identity parameters' values replaced (non-text unchanged)."""
    if not isinstance(text, str):
        return text
    if "=" not in text and "%3" not in text:  # no value to redact (most request lines)
        return text
    return _IDENTITY.sub(r"\1[redacted]", text)


def _format_keys(log_format: str) -> frozenset[str]:
    """The atoms ``log_format`` prints, as gunicorn's ``SafeAtoms`` looks them up (the
    ``{header}i``, ``{header}o`` and ``{variable}e`` ones in lower case)."""
    return frozenset(
        key.lower() if key.startswith("{") else key for key in _ATOM_KEY.findall(log_format)
    )


class RedactingLogger(Logger):
    # The format last seen, its atoms' keys and the kinds of its named atoms ("i", "o", "e").
    _keys_of: tuple[str, frozenset[str], frozenset[str]] | None = None

    def _wanted(self) -> tuple[frozenset[str], frozenset[str]]:
        log_format = self.cfg.access_log_format
        if self._keys_of is None or self._keys_of[0] != log_format:
            keys = _format_keys(log_format)
            kinds = frozenset(key[-1] for key in keys if key.startswith("{"))
            self._keys_of = (log_format, keys, kinds)
        return self._keys_of[1], self._keys_of[2]

    def atoms(self, resp: Any, req: Any, environ: Any, request_time: Any) -> dict[str, Any]:
        """gunicorn's atoms, those the format prints only, with identities redacted."""
        wanted, kinds = self._wanted()
        atoms: dict[str, Any] = {}
        for key in wanted:
            basic = _BASIC.get(key)
            if basic is not None:
                atoms[key] = basic(self, resp, environ, request_time)
        if "i" in kinds:
            _named_atoms(atoms, req.headers if hasattr(req, "headers") else req, "i", wanted)
        if "o" in kinds:
            _named_atoms(atoms, resp.headers, "o", wanted)
        if "e" in kinds:
            _named_atoms(atoms, environ, "e", wanted)
        for key in _REDACTED_ATOMS:
            if key in atoms:
                atoms[key] = redact(atoms[key])
        return atoms


def _named_atoms(atoms: dict[str, Any], pairs: Any, suffix: str, wanted: frozenset[str]) -> None:
    """Add to ``atoms`` the ``{name}<suffix>`` atoms of ``pairs`` (headers as a list of
    pairs or a mapping, or the environ) that the format prints."""
    for name, value in pairs.items() if hasattr(pairs, "items") else pairs:
        key = f"{{{name.lower()}}}{suffix}"
        if key in wanted:
            atoms[key] = value


def _status(resp: Any) -> Any:
    status = resp.status
    return status.split(None, 1)[0] if isinstance(status, str) else status


# gunicorn's (glogging.Logger.atoms) one-letter atoms, each worked out as it does.
_BASIC: dict[str, Any] = {
    "h": lambda log, resp, environ, rt: environ.get("REMOTE_ADDR", "-"),
    "l": lambda log, resp, environ, rt: "-",
    "u": lambda log, resp, environ, rt: log._get_user(environ) or "-",
    "t": lambda log, resp, environ, rt: log.now(),
    "r": lambda log, resp, environ, rt: (
        f"{environ['REQUEST_METHOD']} {environ['RAW_URI']} {environ['SERVER_PROTOCOL']}"
    ),
    "s": lambda log, resp, environ, rt: _status(resp),
    "m": lambda log, resp, environ, rt: environ.get("REQUEST_METHOD"),
    "U": lambda log, resp, environ, rt: environ.get("PATH_INFO"),
    "q": lambda log, resp, environ, rt: environ.get("QUERY_STRING"),
    "H": lambda log, resp, environ, rt: environ.get("SERVER_PROTOCOL"),
    "b": lambda log, resp, environ, rt: (
        (getattr(resp, "sent", None) is not None and str(resp.sent)) or "-"
    ),
    "B": lambda log, resp, environ, rt: getattr(resp, "sent", None),
    "f": lambda log, resp, environ, rt: environ.get("HTTP_REFERER", "-"),
    "a": lambda log, resp, environ, rt: environ.get("HTTP_USER_AGENT", "-"),
    "T": lambda log, resp, environ, rt: rt.seconds,
    "D": lambda log, resp, environ, rt: (rt.seconds * 1000000) + rt.microseconds,
    "M": lambda log, resp, environ, rt: (rt.seconds * 1000) + int(rt.microseconds / 1000),
    "L": lambda log, resp, environ, rt: f"{rt.seconds:d}.{rt.microseconds:06d}",
    "p": lambda log, resp, environ, rt: f"<{os.getpid()}>",
}
