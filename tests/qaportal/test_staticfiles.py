"""The static storage outside DEBUG remembers each URL, and still refuses unknown names."""

from __future__ import annotations

import pytest
from whitenoise.storage import CompressedManifestStaticFilesStorage

from qaportal.staticfiles import ManifestStaticFilesStorage


def test_each_url_is_worked_out_once_and_unknown_names_still_raise(monkeypatch, tmp_path):
    asked: list[str] = []

    def url(self, name, force=False):
        asked.append(name)
        if name == "missing.css":
            raise ValueError("Missing staticfiles manifest entry for 'missing.css'")
        return f"/static/{name.replace('.', '.abc123.')}"

    monkeypatch.setattr(CompressedManifestStaticFilesStorage, "url", url)
    storage = ManifestStaticFilesStorage(location=str(tmp_path), base_url="/static/")
    assert storage.url("worker/worker.css") == "/static/worker/worker.abc123.css"
    assert storage.url("worker/worker.css") == "/static/worker/worker.abc123.css"
    assert asked == ["worker/worker.css"]
    for _ in range(2):
        with pytest.raises(ValueError, match=r"missing\.css"):
            storage.url("missing.css")
    assert asked.count("missing.css") == 2
