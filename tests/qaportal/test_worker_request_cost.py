"""What makes a worker request cheaper keeps what it replaces: the CSRF masks
(``qaportal.csrf_mask``), django-prometheus' request metrics with remembered children
(``qaportal.request_metrics``) and the worker pages' URLs worked out once
(``frontend.worker.views._url``)."""

from __future__ import annotations

import re
from collections import Counter

import prometheus_client
import pytest
from django.middleware import csrf
from django.test import Client
from django.urls import reverse, set_script_prefix

from frontend.worker.views import _url
from qaportal.csrf_mask import random_csrf_string


def test_csrf_masks_are_djangos_shape_from_the_replacement() -> None:
    assert csrf._get_new_csrf_string is random_csrf_string  # installed at start-up
    for _ in range(200):
        value = random_csrf_string()
        assert len(value) == csrf.CSRF_SECRET_LENGTH
        assert set(value) <= set(csrf.CSRF_ALLOWED_CHARS)


def test_csrf_mask_characters_are_uniform() -> None:
    counts = Counter("".join(random_csrf_string() for _ in range(2000)))
    # 64,000 characters over 62: 1,032 each expected, sd ~32; a byte-modulo bias
    # (the first 8 characters twice as likely) would show as ~2,000.
    assert len(counts) == len(csrf.CSRF_ALLOWED_CHARS)
    assert max(counts.values()) < 1250
    assert min(counts.values()) > 820


@pytest.mark.django_db
def test_masked_tokens_still_pass_djangos_check() -> None:
    client = Client(enforce_csrf_checks=True)
    page = client.get(reverse("login"))
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token is not None
    response = client.post(
        reverse("login"), {"csrfmiddlewaretoken": token[1], "username": "x", "password": "y"}
    )
    assert response.status_code != 403
    forged = client.post(
        reverse("login"),
        {"csrfmiddlewaretoken": random_csrf_string() * 2, "username": "x", "password": "y"},
    )
    assert forged.status_code == 403


def _sample(name: str, **labels: str) -> float:
    value = prometheus_client.REGISTRY.get_sample_value(name, labels)
    return value or 0.0


@pytest.mark.django_db
def test_request_metrics_count_every_request_with_their_labels(client: Client) -> None:
    labels = {"status": "200", "view": "livez", "method": "GET"}
    name = "django_http_responses_total_by_status_view_method_total"
    before = _sample(name, **labels)
    for _ in range(3):
        assert client.get("/livez").status_code == 200
    assert _sample(name, **labels) == before + 3
    by_method = _sample("django_http_requests_total_by_method_total", method="GET")
    client.get("/livez")
    assert _sample("django_http_requests_total_by_method_total", method="GET") == by_method + 1


@pytest.mark.parametrize("name", ["worker:assignment", "worker:return", "worker:done"])
def test_worker_urls_are_djangos(name: str) -> None:
    for assignment_id in (1, 42, 987654321, 10**12):
        assert _url(name, assignment_id) == reverse(name, kwargs={"assignment_id": assignment_id})
    set_script_prefix("/portal/")
    try:
        assert _url(name, 7) == reverse(name, kwargs={"assignment_id": 7})
        assert _url(name, 7).startswith("/portal/")
    finally:
        set_script_prefix("/")
