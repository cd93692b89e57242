"""Template helpers for task-type templates (``{% load tasktype_tags %}``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.base import Field

register = template.Library()


@register.simple_tag(takes_context=True)
def tasktype_view(context: template.Context, name: str) -> dict[str, Any]:
    """The task type's precomputed view (``TaskType.view``) for the page's context.

    Usage: ``{% tasktype_view "rephrase" as v %}``.
    """
    errors = context.get("errors") or {}
    if not isinstance(errors, Mapping):
        errors = {}
    return task_type_get(name).view(
        items=list(context.get("items") or []),
        config=dict(context.get("config") or {}),
        answer=context.get("answer") or {},
        errors=errors,
        preview=bool(context.get("preview")),
    )


@register.simple_tag(takes_context=True)
def tt_attrs(context: template.Context, f: Field, describedby: str = "") -> SafeString:
    """``id``, ``name`` and the ARIA attributes of a control (and ``disabled`` in preview)."""
    ids = " ".join(x for x in (describedby, f.error_id if f.error else "") if x)
    attrs = format_html('id="{}" name="{}"', f.id, f.name)
    if ids:
        attrs += format_html(' aria-describedby="{}"', ids)
    if f.error:
        attrs += mark_safe(' aria-invalid="true"')
    if context.get("preview"):
        attrs += mark_safe(" disabled")
    return attrs


@register.simple_tag
def tt_error(f: Field) -> SafeString:
    """The error slot of a field: a paragraph the field's aria-describedby points at."""
    if not f.error:
        return SafeString("")
    return format_html('<p class="tt-error" id="{}" role="alert">{}</p>', f.error_id, f.error)


@register.simple_tag
def field_error(errors: Mapping[str, str] | None, path: str) -> SafeString:
    """The error message for ``path`` from the page's ``errors``, as an error slot."""
    message = (errors or {}).get(path, "")
    return tt_error(Field(name=path, error=str(message or "")))


@register.simple_tag
def tt_general_errors(messages: list[str]) -> SafeString:
    """Errors that belong to no single field, listed above the fields."""
    if not messages:
        return SafeString("")
    return format_html(
        '<ul class="tt-error tt-errors" role="alert">{}</ul>',
        format_html_join("", "<li>{}</li>", ((m,) for m in messages)),
    )


@register.filter
def tt_checked(condition: Any) -> str:
    """``checked`` when the condition holds (radio buttons and checkboxes)."""
    return "checked" if condition else ""
