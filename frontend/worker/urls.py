"""The worker pages, mounted at /work/ (namespace "worker")."""

from django.urls import path

from frontend.worker import adversarial as adversarial_views
from frontend.worker import suggest as linking_views
from frontend.worker import views

app_name = "worker"

urlpatterns = [
    path("i/<str:token>/", views.invite, name="invite"),
    path("s/<int:stage_id>/", views.stage, name="stage"),
    path("s/<int:stage_id>/accept/", views.accept, name="accept"),
    path("a/<int:assignment_id>/", views.assignment, name="assignment"),
    path("a/<int:assignment_id>/return/", views.assignment_return_view, name="return"),
    path("a/<int:assignment_id>/done/", views.done, name="done"),
    path("suggest/", linking_views.suggest, name="suggest"),
    path("a/<int:assignment_id>/try/", adversarial_views.adversarial_try, name="adversarial_try"),
    path(
        "a/<int:assignment_id>/try/<int:try_number>/mark/",
        adversarial_views.adversarial_mark,
        name="adversarial_mark",
    ),
    path(
        "a/<int:assignment_id>/try/<int:try_number>/state/",
        adversarial_views.adversarial_state,
        name="adversarial_state",
    ),
    # The same for Prolific's work page (/work/prolific/a/<id>/): the participant its
    # session remembers. Prolific's own routes (work/prolific/) are tried first.
    path(
        "prolific/a/<int:assignment_id>/try/",
        adversarial_views.prolific_adversarial_try,
        name="prolific_adversarial_try",
    ),
    path(
        "prolific/a/<int:assignment_id>/try/<int:try_number>/mark/",
        adversarial_views.prolific_adversarial_mark,
        name="prolific_adversarial_mark",
    ),
    path(
        "prolific/a/<int:assignment_id>/try/<int:try_number>/state/",
        adversarial_views.prolific_adversarial_state,
        name="prolific_adversarial_state",
    ),
]
