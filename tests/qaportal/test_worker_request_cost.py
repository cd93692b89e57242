"""What makes a worker request cheaper keeps what it replaces: django-prometheus'
request metrics with remembered children (``qaportal.request_metrics``) and the worker
pages' URLs worked out once (``frontend.worker.views._url``)."""

from __future__ import annotations

import prometheus_client
import pytest
from django.test import Client
from django.urls import reverse, set_script_prefix

from frontend.worker.views import _url


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
