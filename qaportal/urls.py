from django.contrib import admin
from django.urls import include, path

from qaportal.health import healthz

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("api/v1/", include("campaigns.api.urls")),
    path("", include("frontend.urls")),
]
