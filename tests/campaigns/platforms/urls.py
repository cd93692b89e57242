"""The site's URLs plus the Prolific entry where the lead will mount it (/work/prolific/)."""

from django.urls import include, path

from qaportal.urls import urlpatterns as site_urlpatterns

urlpatterns = [
    path("work/prolific/", include("campaigns.platforms.prolific.urls")),
    *site_urlpatterns,
]
