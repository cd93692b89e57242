"""django-prometheus' request middleware, with each labelled child looked up once.

``PrometheusBeforeMiddleware`` and ``PrometheusAfterMiddleware`` count every request
in a dozen metrics; ten of those counts go through ``metric.labels(...)``, which checks
the label names and values and takes the metric's lock on every call, for a child that
is the same object from the second request of a kind on. Here the children are kept in
a dict per process (keyed by metric and label values), so a request costs a dict lookup
per count. ``process_request`` reads the two headers it counts from ``request.META``
rather than ``request.headers`` (whose mapping is built from every header on first use),
and ``process_response`` works out the method and view name once and reads the
response's charset and content once each.
The metrics, their names, labels and values are django-prometheus' own.
"""

from __future__ import annotations

from typing import Any

from django_prometheus.middleware import PrometheusAfterMiddleware, PrometheusBeforeMiddleware
from django_prometheus.utils import Time, TimeSince

# (metric's id, label values) -> the labelled child. Bounded: label values come from the
# URLconf's view names, status codes, methods (unknown ones are "<invalid method>"),
# transports, charsets and template names; anything else still goes to ``labels``.
_CHILDREN: dict[tuple[int, tuple[tuple[str, str], ...]], Any] = {}
_MAX_CHILDREN = 5000
_MISSING = object()


class RequestMetricsBefore(PrometheusBeforeMiddleware):
    """django-prometheus' first middleware (no labelled metrics: unchanged)."""


class RequestMetricsAfter(PrometheusAfterMiddleware):
    """django-prometheus' last middleware, with its labelled children remembered."""

    def label_metric(self, metric: Any, request: Any, response: Any = None, **labels: Any) -> Any:
        if not labels:
            return metric
        key = (id(metric), tuple(labels.items()))
        child = _CHILDREN.get(key)
        if child is None:
            child = metric.labels(**labels)
            if len(_CHILDREN) < _MAX_CHILDREN:
                _CHILDREN[key] = child
        return child

    def process_request(self, request: Any) -> None:
        """django-prometheus' ``process_request``, the headers read from ``META``."""
        metrics = self.metrics
        self.label_metric(metrics.requests_by_method, request, method=self._method(request)).inc()
        self.label_metric(
            metrics.requests_by_transport, request, transport=self._transport(request)
        ).inc()
        # Mimic the behaviour of the deprecated "Request.is_ajax()" method.
        if request.META.get("HTTP_X_REQUESTED_WITH") == "XMLHttpRequest":
            metrics.requests_ajax.inc()
        content_length = int(request.META.get("CONTENT_LENGTH") or 0)
        metrics.requests_body_bytes.observe(content_length)
        request.prometheus_after_middleware_event = Time()

    def process_response(self, request: Any, response: Any) -> Any:
        """django-prometheus' ``process_response``, each label worked out once."""
        metrics = self.metrics
        method = self._method(request)
        name = self._get_view_name(request)
        status = str(response.status_code)
        self.label_metric(metrics.responses_by_status, request, response, status=status).inc()
        self.label_metric(
            metrics.responses_by_status_view_method,
            request,
            response,
            status=status,
            view=name,
            method=method,
        ).inc()
        # Each property read once (django-prometheus reads both twice: ``hasattr``, then
        # the value; the charset is a search of the Content-Type, the content a join).
        charset = getattr(response, "charset", _MISSING)
        if charset is not _MISSING:
            self.label_metric(
                metrics.responses_by_charset, request, response, charset=str(charset)
            ).inc()
        if getattr(response, "streaming", False):
            metrics.responses_streaming.inc()
        content: Any = getattr(response, "content", _MISSING)
        if content is not _MISSING:
            metrics.responses_body_bytes.observe(len(content))
        started = getattr(request, "prometheus_after_middleware_event", None)
        if started is not None:
            # The latency's method label is the request's own (as django-prometheus').
            self.label_metric(
                metrics.requests_latency_by_view_method,
                request,
                response,
                view=name,
                method=request.method,
            ).observe(TimeSince(started))
        else:
            metrics.requests_unknown_latency.inc()
        return response
