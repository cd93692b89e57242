"""The site's URLs, with the worker pages mounted at /work/ even while qaportal/urls.py
is being edited by others (the tests must not depend on that merge)."""

from django.urls import include, path

from qaportal.urls import urlpatterns as site_urlpatterns

_has_worker = any(getattr(p, "namespace", None) == "worker" for p in site_urlpatterns)

urlpatterns = (
    site_urlpatterns
    if _has_worker
    else [path("work/", include("frontend.worker.urls")), *site_urlpatterns]
)
