"""URLconf for the benchmark's qaportal server: qaportal's own, plus the worker pages
at /work/ if qaportal.urls does not mount them yet (while they are being written).
Once qaportal.urls includes the "worker" namespace this adds nothing."""

from django.urls import URLResolver, include, path

from qaportal.urls import urlpatterns as _base


def _has_namespace(patterns, namespace: str) -> bool:
    for p in patterns:
        if isinstance(p, URLResolver) and (
            p.namespace == namespace or _has_namespace(p.url_patterns, namespace)
        ):
            return True
    return False


WORKER_SHIM = not _has_namespace(_base, "worker")
urlpatterns = list(_base)
if WORKER_SHIM:
    urlpatterns.insert(0, path("work/", include("frontend.worker.urls")))
