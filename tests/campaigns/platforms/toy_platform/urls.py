"""Toy Crowd's pages, mounted by ``qaportal.urls`` at ``ToyPlatform.url_prefix``."""

from django.urls import path

from tests.campaigns.platforms.toy_platform import views

app_name = "worker-toy"

urlpatterns = [
    path("", views.entry, name="entry"),
    path("a/<int:assignment_id>/", views.assignment, name="assignment"),
    path("hooks/", views.hooks, name="hooks"),
]
