"""Prolific's worker entry and webhooks, mounted by ``qaportal.urls`` at
``ProlificPlatform.url_prefix`` (/work/prolific/, namespace "worker-prolific")."""

from django.urls import path

from campaigns.platforms.prolific import views as prolific

app_name = "worker-prolific"

urlpatterns = [
    path("", prolific.entry, name="entry"),
    path("a/<int:assignment_id>/", prolific.assignment, name="assignment"),
    path("hooks/", prolific.hooks, name="hooks"),
]
