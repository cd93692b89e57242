"""MTurk's ExternalQuestion entry, mounted at /w/mturk/ (namespace "worker-mturk").

The MTurk provider builds its ExternalQuestion URLs to this path: keep it.
"""

from django.urls import path

from frontend.worker import mturk

app_name = "worker-mturk"

urlpatterns = [
    path("", mturk.entry, name="entry"),
    path("submit/", mturk.submit, name="submit"),
]
