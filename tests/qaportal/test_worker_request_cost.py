"""What makes a worker request cheaper keeps what it replaces: django-prometheus'
request metrics with remembered children, headers read from ``META`` and each of the
response's properties read once (``qaportal.request_metrics``), the message storage
made on first use (``qaportal.messages``) and the worker pages' URLs worked out once
(``frontend.worker.views._url``)."""

from __future__ import annotations

import prometheus_client
import pytest
from django.contrib import messages
from django.contrib.messages.storage.cookie import CookieStorage
from django.contrib.messages.storage.session import SessionStorage
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.test import Client, RequestFactory
from django.urls import reverse, set_script_prefix

from frontend.worker.views import _url
from qaportal.messages import LazyFallbackStorage
from qaportal.request_metrics import RequestMetricsAfter


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


@pytest.mark.django_db
def test_request_metrics_count_body_bytes_ajax_and_the_latency_by_view(client: Client) -> None:
    ajax = _sample("django_http_ajax_requests_total")
    body_sum = _sample("django_http_requests_body_total_bytes_sum")
    latency = _sample(
        "django_http_requests_latency_seconds_by_view_method_count", view="livez", method="GET"
    )
    response_bytes = _sample("django_http_responses_body_total_bytes_count")
    client.get("/livez", HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    client.post("/livez", data=b"x" * 123, content_type="application/octet-stream")
    assert _sample("django_http_ajax_requests_total") == ajax + 1
    assert _sample("django_http_requests_body_total_bytes_sum") == body_sum + 123
    assert (
        _sample(
            "django_http_requests_latency_seconds_by_view_method_count",
            view="livez",
            method="GET",
        )
        == latency + 1
    )
    assert _sample("django_http_responses_body_total_bytes_count") == response_bytes + 2


def test_request_metrics_read_charset_and_content_as_django_prometheus() -> None:
    middleware = RequestMetricsAfter(lambda request: HttpResponse())
    request = RequestFactory().get("/livez")
    charset = _sample("django_http_responses_total_by_charset_total", charset="latin-1")
    body_sum = _sample("django_http_responses_body_total_bytes_sum")
    streaming = _sample("django_http_responses_streaming_total")

    page = HttpResponse("é" * 10, content_type="text/html; charset=latin-1")
    middleware.process_response(request, page)
    assert _sample("django_http_responses_total_by_charset_total", charset="latin-1") == (
        charset + 1
    )
    assert _sample("django_http_responses_body_total_bytes_sum") == body_sum + 10

    middleware.process_response(request, StreamingHttpResponse(iter([b"abc"])))
    assert _sample("django_http_responses_streaming_total") == streaming + 1
    assert _sample("django_http_responses_body_total_bytes_sum") == body_sum + 10  # no content


def _request_with_session(client: Client) -> HttpRequest:
    request = RequestFactory().get("/")
    request.session = client.session
    return request


@pytest.mark.django_db
def test_the_message_storage_makes_its_backends_only_when_used(client: Client) -> None:
    request = _request_with_session(client)
    storage = LazyFallbackStorage(request)
    response = HttpResponse()
    assert storage.update(response) is None
    assert "storages" not in storage.__dict__  # never made
    assert not response.cookies

    storage.add(messages.INFO, "Saved.")
    storage.update(response)
    assert [type(s) for s in storage.storages] == [CookieStorage, SessionStorage]
    assert "messages" in response.cookies  # as FallbackStorage: the cookie first

    later = _request_with_session(client)
    later.COOKIES["messages"] = response.cookies["messages"].value
    assert [str(m) for m in LazyFallbackStorage(later)] == ["Saved."]


def test_the_message_storage_is_the_configured_one(settings) -> None:
    assert settings.MESSAGE_STORAGE == "qaportal.messages.LazyFallbackStorage"
