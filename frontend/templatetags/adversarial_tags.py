"""The adversarial panel of the work page (model in the loop): the worker's tries, the
model's answers, and the buttons to ask, mark and try again."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse

from campaigns.assist.selectors import adversarial_panel
from campaigns.models import Assignment

register = template.Library()


@register.simple_tag
def adversarial_part(assignment: Assignment, action_url: str = "") -> dict[str, Any]:
    """The panel for ``assignment``, its URLs with it (``panel`` None when the stage is
    not adversarial, or the page is not the local workforce's, whose session the try
    routes know: a platform's entry goes on without the model)."""
    kwargs = {"assignment_id": assignment.pk}
    if action_url != reverse("worker:assignment", kwargs=kwargs):
        return {"panel": None}
    panel = adversarial_panel(stage=assignment.hit.stage, assignment_id=assignment.pk)
    if panel is None:
        return {"panel": None}
    last = panel.last
    return {
        "panel": panel,
        "try_url": reverse("worker:adversarial_try", kwargs=kwargs),
        "page_url": reverse("worker:assignment", kwargs=kwargs),
        "state_url": (
            reverse("worker:adversarial_state", kwargs={**kwargs, "try_number": last.number})
            if last is not None
            else ""
        ),
        "mark_url": (
            reverse("worker:adversarial_mark", kwargs={**kwargs, "try_number": last.number})
            if last is not None
            else ""
        ),
    }
