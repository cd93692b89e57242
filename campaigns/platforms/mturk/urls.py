"""MTurk's ExternalQuestion entry, mounted by ``qaportal.urls`` at ``MTurkPlatform.url_prefix``
(/w/mturk/, namespace "worker-mturk").

The MTurk provider builds its ExternalQuestion URLs to this path: keep it.
"""

from django.urls import path

from campaigns.platforms.mturk import views as mturk

app_name = "worker-mturk"

urlpatterns = [
    path("", mturk.entry, name="entry"),
    path("submit/", mturk.submit, name="submit"),
]
