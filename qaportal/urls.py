from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from campaigns.design.platform import platforms_registered
from frontend.views.auth import AdminLoginView, LoginView, PasswordChangeView
from qaportal.health import healthz, livez, readyz
from qaportal.metrics import metrics

# Explicit templates: admin's registration/ templates would shadow same-named ones of ours.
auth_urlpatterns = [
    path("login/", LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "password_change/",
        PasswordChangeView.as_view(),
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
    # The worker pages first, the busiest URLs: resolved before the other prefixes are
    # tried. No pattern below starts like these, so the order changes nothing else; the
    # platforms stay before "work/" (Prolific's entry is under work/prolific/).
    # Each registered platform's worker entry and webhooks, in its own folder.
    *(
        path(platform.url_prefix, include(platform.urls_module))
        for platform in platforms_registered()
        if platform.urls_module
    ),
    path("work/", include("frontend.worker.urls")),
    # Before the admin's own: its login keeps the one lockout policy (qaportal.login_limit).
    path("admin/login/", AdminLoginView.as_view(), name="admin-login"),
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("livez", livez, name="livez"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics, name="metrics"),
    path("api/v1/", include("campaigns.api.urls")),
    path("accounts/", include(auth_urlpatterns)),
    path("", include("frontend.urls")),
]
handler500 = "qaportal.error_views.server_error"
