"""Prolific's worker entry and webhooks; the lead mounts them at /work/prolific/
(namespace "worker-prolific")."""

from django.urls import path

from frontend.worker import prolific

app_name = "worker-prolific"

urlpatterns = [
    path("", prolific.entry, name="entry"),
    path("a/<int:assignment_id>/", prolific.assignment, name="assignment"),
    path("hooks/", prolific.hooks, name="hooks"),
]
