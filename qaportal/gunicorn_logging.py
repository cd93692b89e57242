"""gunicorn's access log without worker identities: the values of ``workerId``,
``assignmentId`` and ``PROLIFIC_PID`` in query strings (the request line, the query
atom and the Referer) are replaced by ``[redacted]``. The Dockerfile and
docker-compose.yml run gunicorn with ``--logger-class`` set to this class."""

from __future__ import annotations

import re
from typing import Any

from gunicorn.glogging import Logger

# The parameters platforms put worker identities in (MTurk's ExternalQuestion and
# Prolific's study URL), matched whatever their case or URL-encoding of the name.
_IDENTITY = re.compile(
    r"(?i)((?:^|[?&;]|%3F|%26)(?:workerId|assignmentId|PROLIFIC_PID)(?:=|%3D))[^&;\s\"]*"
)


def redact(text: Any) -> Any:
    """``text`` with the identity parameters' values replaced (non-text unchanged)."""
    if not isinstance(text, str):
        return text
    return _IDENTITY.sub(r"\1[redacted]", text)


class RedactingLogger(Logger):
    def atoms(self, resp: Any, req: Any, environ: Any, request_time: Any) -> dict[str, Any]:
        atoms: dict[str, Any] = super().atoms(resp, req, environ, request_time)
        for key in ("r", "q", "f", "{referer}i"):
            if key in atoms:
                atoms[key] = redact(atoms[key])
        return atoms
