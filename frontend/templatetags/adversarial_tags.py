"""The adversarial panel of the work page (model in the loop): the worker's tries, the
model's answers, and the buttons to ask, mark and try again."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse

from campaigns.assist.selectors import assignment_adversarial_panel
from campaigns.models import Assignment
from campaigns.tasktypes.base import adversarial_config
from frontend.worker.adversarial import entry_for_page

register = template.Library()


@register.simple_tag
def adversarial_part(assignment: Assignment, action_url: str = "") -> dict[str, Any]:
    """The panel for ``assignment``, its URLs with it (``panel`` None when the stage is
    not adversarial, or the page is an entry without the adversarial routes: MTurk's,
    whose submission is refused there until the model was asked)."""
    if adversarial_config(assignment.hit.stage.config) is None:
        return {"panel": None}
    entry = entry_for_page(action_url, assignment.pk)
    if entry is None:
        return {"panel": None}
    panel = assignment_adversarial_panel(assignment=assignment)
    if panel is None:
        return {"panel": None}
    kwargs = {"assignment_id": assignment.pk}
    last = panel.last
    route = f"worker:{entry.prefix}adversarial_"
    return {
        "panel": panel,
        "try_url": reverse(f"{route}try", kwargs=kwargs),
        "page_url": action_url,
        "state_url": (
            reverse(f"{route}state", kwargs={**kwargs, "try_number": last.number})
            if last is not None
            else ""
        ),
        "mark_url": (
            reverse(f"{route}mark", kwargs={**kwargs, "try_number": last.number})
            if last is not None
            else ""
        ),
    }
