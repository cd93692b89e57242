"""Toy Crowd joins qaportal for a test: one registry line, its settings, its pages."""

from __future__ import annotations

import importlib
from collections.abc import Iterator

import pytest
from django.urls import clear_url_caches

from campaigns.design.platform import platform_register, platform_unregister
from tests.campaigns.platforms.toy_platform import service
from tests.campaigns.platforms.toy_platform.platform import ToyPlatform

WEBHOOK_SECRET = "toy-hook-secret"


def _site_urls_reload() -> None:
    """``qaportal.urls`` again: it mounts the pages of the platforms registered now."""
    importlib.reload(importlib.import_module("qaportal.urls"))
    clear_url_caches()


@pytest.fixture
def toy(settings) -> Iterator[service.ToyCrowd]:
    """Toy Crowd registered (the registry line a real platform has in
    ``campaigns/platforms/registry.py``), empty, with its settings; forgotten after."""
    crowd = service.crowd_reset()
    settings.TOY_API_KEY = service.API_KEY
    settings.TOY_WEBHOOK_SECRET = WEBHOOK_SECRET
    settings.ROOT_URLCONF = "qaportal.urls"
    platform_register(ToyPlatform())
    _site_urls_reload()
    try:
        yield crowd
    finally:
        platform_unregister("toy")
        _site_urls_reload()
