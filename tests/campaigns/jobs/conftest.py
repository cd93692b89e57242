"""Jobs write to Django's storage: a media root of each test's own."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return tmp_path / "media"
