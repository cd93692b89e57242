"""The static files' storage outside DEBUG: WhiteNoise's compressed manifest storage,
each file's URL worked out once per process.

The manifest (hashed names) is read when the process starts and does not change while
it runs (``collectstatic`` comes with a restart), yet Django works a URL out again at
every ``{% static %}``: a few hundred microseconds each, a few of them on every worker
page. A name missing from the manifest still raises, every time.
"""

from __future__ import annotations

from typing import Any

from whitenoise.storage import CompressedManifestStaticFilesStorage


class ManifestStaticFilesStorage(CompressedManifestStaticFilesStorage):
    """``CompressedManifestStaticFilesStorage`` with its URLs remembered."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._urls: dict[str, str] = {}

    def url(self, name: str | None, force: bool = False) -> str:
        if force or name is None:
            return super().url(name, force)
        url = self._urls.get(name)
        if url is None:
            url = self._urls[name] = super().url(name)
        return url
