from django.contrib import admin
from django.urls import include, path

admin.autodiscover()

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("turkle.api.urls")),
    path("", include("django.contrib.auth.urls")),
    path("", include("turkle.urls")),
]
