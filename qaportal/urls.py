from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from frontend.views.auth import LoginView
from qaportal.health import healthz, livez, readyz
from qaportal.metrics import metrics

# Explicit templates: admin's registration/ templates would shadow same-named ones of ours.
auth_urlpatterns = [
    path("login/", LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "password_change/",
        auth_views.PasswordChangeView.as_view(template_name="frontend/auth/password_change.html"),
        name="password_change",
    ),
    path(
        "password_change/done/",
        auth_views.PasswordChangeDoneView.as_view(
            template_name="frontend/auth/password_change_done.html"
        ),
        name="password_change_done",
    ),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("livez", livez, name="livez"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics, name="metrics"),
    path("api/v1/", include("campaigns.api.urls")),
    path("accounts/", include(auth_urlpatterns)),
    path("w/mturk/", include("frontend.worker.mturk_urls")),
    path("work/prolific/", include("frontend.worker.prolific_urls")),
    path("work/", include("frontend.worker.urls")),
    path("", include("frontend.urls")),
]
handler500 = "qaportal.error_views.server_error"
