"""CSRF on every form: each page route that takes a POST refuses one without the CSRF
token (403) from a logged-in owner, and changes nothing; every form the pages render
carries the token. Worker pages framed by MTurk use a signed token of their own
(tests/campaigns/work/test_mturk_entry.py); webhooks are signed (tests/campaigns/platforms)."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import get_resolver

from tests.security.test_authorization_matrix import (
    _fill,
    _routes,
    _snapshot,
    world,  # noqa: F401 - the fixture
)

pytestmark = pytest.mark.django_db

OWN_TOKEN = {"hooks", "submit"}  # signed by the platform, or by qaportal for MTurk's frame


def test_posts_without_the_token_are_refused(world, requester):  # noqa: F811
    _campaign, _work, values = world
    client = Client(enforce_csrf_checks=True)
    client.force_login(requester)
    before = _snapshot()
    refused = 0
    for route, name, _ in _routes(get_resolver().url_patterns):
        if route.startswith("api/") or name in OWN_TOKEN:
            continue
        response = client.post(_fill(route, values), {"decision": "approve", "reason": "x"})
        if response.status_code == 405:
            continue  # GET-only
        assert response.status_code == 403, (
            f"POST {route} without a CSRF token: {response.status_code}"
        )
        refused += 1
    assert refused >= 20
    assert _snapshot() == before


def test_every_rendered_form_carries_the_token(world, requester):  # noqa: F811
    _campaign, _work, values = world
    client = Client()
    client.force_login(requester)
    forms = 0
    for route, _name, _ in _routes(get_resolver().url_patterns):
        if route.startswith("api/"):
            continue
        response = client.get(_fill(route, values))
        if response.status_code != 200 or "html" not in response.get("Content-Type", ""):
            continue
        html = response.content.decode()
        for form in re.findall(
            r"<form[^>]*method=\"post\"[^>]*>.*?</form>", html, flags=re.S | re.I
        ):
            forms += 1
            assert 'name="csrfmiddlewaretoken"' in form, f"{route}: a POST form without the token"
    assert forms >= 10
