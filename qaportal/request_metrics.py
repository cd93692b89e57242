"""django-prometheus' request middleware, with each labelled child looked up once.

``PrometheusBeforeMiddleware`` and ``PrometheusAfterMiddleware`` count every request
in a dozen metrics; ten of those counts go through ``metric.labels(...)``, which checks
the label names and values and takes the metric's lock on every call, for a child that
is the same object from the second request of a kind on. Here the children are kept in
a dict per process (keyed by metric and label values), so a request costs a dict lookup
per count. The metrics, their names, labels and values are django-prometheus' own.
"""

from __future__ import annotations

from typing import Any

from django_prometheus.middleware import PrometheusAfterMiddleware, PrometheusBeforeMiddleware

# (metric's id, label values) -> the labelled child. Bounded: label values come from the
# URLconf's view names, status codes, methods (unknown ones are "<invalid method>"),
# transports, charsets and template names; anything else still goes to ``labels``.
_CHILDREN: dict[tuple[int, tuple[tuple[str, str], ...]], Any] = {}
_MAX_CHILDREN = 5000


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
