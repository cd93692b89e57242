"""The work page's HTML, built with few template nodes: it is drawn on every worker cycle.

The page is ``worker/base.html``'s frame around the task form. The frame depends only on
the stage's name and its campaign's name (and the static files' URLs), so it is rendered
once per process for each pair and kept (``_frame``); the form around the task type's
template is put together here from escaped values; the task type's own template is the
one Django template rendered per request. Drawn through ``worker/assignment.html``
(``{% extends %}``, ``{% include %}``, the context processors, ~50 nodes) the page took
~0.5 ms of CPU; this way ~0.18 ms (bench/README.md).

A room above adds its part under the task (the adversarial panel, ``frontend``) through
``page_part_register``: the platforms room does not import it.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.core.signals import setting_changed
from django.middleware.csrf import get_token
from django.template import Context, Engine
from django.template.loader import get_template
from django.utils.html import escape, linebreaks

from campaigns.models import Assignment, Stage
from campaigns.tasktypes.instructions import stage_instructions

FRAME_TEMPLATE = "worker/_task_frame.html"
# Where the content goes in the frame's one rendering: a random word no stage or
# campaign name holds.
_MARK = f"qaportal-task-frame-{secrets.token_hex(16)}"
_FRAMES_MAX = 1024
_frames: dict[tuple[str, str, str], tuple[str, str]] = {}
_frames_lock = threading.Lock()


class _Named:
    """What ``worker/base.html`` reads of the stage: its name and its campaign's."""

    def __init__(self, name: str, campaign: _Named | None = None) -> None:
        self.name = name
        self.campaign = campaign


def page_frame(stage: Stage, template: str = FRAME_TEMPLATE) -> tuple[str, str]:
    """A worker page up to its content and from its end: ``template`` (which extends
    ``worker/base.html`` and shows ``{{ content }}`` in its content block) rendered once
    per stage and campaign name and kept; ``worker/_task_frame.html``: the work page's."""
    key = (template, stage.name, stage.campaign.name)
    found = _frames.get(key)
    if found is None:
        named = _Named(stage.name, _Named(stage.campaign.name))
        html = get_template(template).render({"stage": named, "content": _MARK})
        top, mark, bottom = html.partition(_MARK)
        if not mark:
            raise ValueError(f"{template} does not show its content")
        found = (top, bottom)
        with _frames_lock:
            if len(_frames) >= _FRAMES_MAX:
                _frames.clear()
            _frames[key] = found
    return found


def _frames_forget(**kwargs: Any) -> None:
    """A changed setting (tests' ``override_settings``: static files, templates) may
    change the frame."""
    with _frames_lock:
        _frames.clear()


setting_changed.connect(_frames_forget, dispatch_uid="task_page_frames_forget")


@dataclass(frozen=True)
class PagePart:
    """A room's part of the work page under the task, above the buttons.

    ``holds_submit``: Submit is shown disabled (and secondary) until the part allows it;
    ``why_id``: the id of the part's element saying why (the button's
    ``aria-describedby`` while it is disabled)."""

    html: str
    holds_submit: bool = False
    why_id: str = ""


# (assignment, action URL, the task template's context) -> the part, or None.
PagePartMaker = Callable[[Assignment, str, Mapping[str, Any]], PagePart | None]
_page_parts: list[PagePartMaker] = []


def page_part_register(maker: PagePartMaker) -> None:
    """Add ``maker``'s part to every work page (once per maker; called at start-up).
    ``maker`` is called on every page: it answers None at once where it has no part."""
    if maker not in _page_parts:
        _page_parts.append(maker)


def _timer(seconds_left: int | None) -> str:
    if seconds_left is None:
        return ""
    # As ``{% widthratio seconds_left 60 1 %}``: rounded to the nearest minute.
    minutes = round(float(seconds_left) / 60.0)
    return (
        f'    <p class="w-timer" role="timer" aria-live="off"'
        f' data-seconds-left="{int(seconds_left)}">\n'
        f'      Time left: <span class="w-timer-value">{minutes} min</span>\n'
        "    </p>\n"
    )


def _notes(stage: Stage, *, has_errors: bool) -> str:
    """The requester's notes (``stage_instructions``), folded while the page shows errors."""
    if not stage.instructions:
        return ""
    return (
        f'  <details class="w-instructions"{"" if has_errors else " open"}>\n'
        "    <summary>Notes from the requester</summary>\n"
        f"    {linebreaks(stage_instructions(stage), autoescape=True)}\n"
        "  </details>\n"
    )


def _task_html(context: dict[str, Any]) -> str:
    """The task type's template with ``context``, without localization: numbers as Python
    writes them (field numbers, offsets read by the pages' scripts; the worker pages are
    in English, where they read the same), which spares the template engine a locale
    look-up for each number it prints."""
    engine = Engine.get_default()
    template = engine.get_template(context["task_template"])
    return str(template.render(Context(context, autoescape=engine.autoescape, use_l10n=False)))


_ERRORS_NOTICE = (
    '  <p class="notice error" role="alert" id="form-errors">Some answers need another look:'
    " see the messages next to the fields. Nothing was saved yet.</p>\n"
)


def task_page_html(
    request: Any,
    *,
    assignment: Assignment,
    context: dict[str, Any],
    action_url: str,
    return_url: str | None,
    hidden: Mapping[str, str],
    seconds_left: int | None,
    has_errors: bool,
) -> str:
    """The work page: the frame, the stage's name and timer, the requester's notes, and the
    task form (CSRF token, ``hidden`` fields, telemetry, the task type's template with
    ``context``, the rooms' parts, Submit and, with ``return_url``, Return)."""
    stage = assignment.hit.stage
    top, bottom = page_frame(stage)
    task_html = _task_html(context)
    holds_submit, why_id, parts = False, "", []
    for maker in _page_parts:
        part = maker(assignment, action_url, context)
        if part is not None:
            parts.append(part.html)
            holds_submit = holds_submit or part.holds_submit
            why_id = why_id or part.why_id
    disabled = not context["task_ready"] or holds_submit
    submit_attrs = ""
    if disabled:
        submit_attrs = " disabled" + (f' aria-describedby="{escape(why_id)}"' if why_id else "")
    fields = "".join(
        f'    <input type="hidden" name="{escape(name)}" value="{escape(value)}">\n'
        for name, value in hidden.items()
    )
    return_button = (
        f'      <button type="submit" formaction="{escape(return_url)}" formnovalidate'
        ' class="secondary">Return this task</button>\n'
        if return_url
        else ""
    )
    return (
        f"{top}"
        '<div class="w-bar">\n'
        f"    <h1>{escape(stage.name)}</h1>\n"
        f"{_timer(seconds_left)}"
        "  </div>\n"
        f"{_notes(stage, has_errors=has_errors)}"
        f"{_ERRORS_NOTICE if has_errors else ''}"
        # The task types' headings (an article's title, an example's number) are h3 and
        # h4, as on the stage page's preview: this heading keeps their order (axe
        # heading-order).
        '  <h2 class="sr-only" id="task-title">The task</h2>\n'
        f'  <form method="post" action="{escape(action_url)}" class="w-task" id="task-form"'
        ' aria-labelledby="task-title" data-telemetry>\n'
        '    <input type="hidden" name="csrfmiddlewaretoken"'
        f' value="{escape(get_token(request))}">\n'
        f"{fields}"
        '    <input type="hidden" name="telemetry" value="" data-telemetry-field>\n'
        f"{task_html}\n"
        f"{''.join(parts)}"
        '    <div class="w-actions">\n'
        f'      <button type="submit" class="{"secondary" if holds_submit else "primary"}"'
        f"{submit_attrs} data-submit>Submit</button>\n"
        f"{return_button}"
        "    </div>\n"
        "  </form>"
        f"{bottom}"
    )
