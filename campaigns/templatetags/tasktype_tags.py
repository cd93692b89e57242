"""Template helpers for task-type templates (``{% load tasktype_tags %}``)."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.base import Field
from campaigns.tasktypes.instructions import stage_instructions

register = template.Library()


@register.filter
def stage_notes(stage: Any) -> str:
    """The stage's instructions as workers read them: ``{questions_per_hit}`` and the
    other placeholders filled from the stage's current settings."""
    return stage_instructions(stage)


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
    return mark_safe(_attrs(f, bool(context.get("preview")), describedby))  # noqa: S308 (escaped)


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


# One row of the entity-linking form (``tasktypes/_entity_linking.html``). Built here, not
# in the template: a page has dozens of rows of a dozen variables each, and the template
# engine took most of the page's time resolving them.
_LINK_ROW = (
    '<div class="tt-field tt-link-row" role="group" aria-labelledby="{qid_id}-span"'
    ' data-start="{start}" data-end="{end}" data-kind="{kind}">\n'
    '        <p id="{qid_id}-span" class="tt-link-caption"><strong>“{text}”</strong>{tags}</p>\n'
    '        <input type="hidden" name="{prefix}/start" value="{start}">\n'
    '        <input type="hidden" name="{prefix}/end" value="{end}">\n'
    '        <input type="hidden" name="{prefix}/text" value="{text}">\n'
    '        <label for="{qid_id}">Wikidata id for “{text}”</label>\n'
    '        <input type="text" {qid_attrs} value="{qid}" placeholder="Q…" autocomplete="off"'
    ' spellcheck="false"{invalid}>\n'
    "        {none}\n"
    "        {error}\n"
    "      </div>"
)


def _esc(value: Any) -> str:
    """``conditional_escape`` without its lazy-string wrapper (these are plain values)."""
    html = getattr(value, "__html__", None)
    return html() if html is not None else escape(str(value))


def _attrs(f: Field, preview: bool, describedby: str = "") -> str:
    """``tt_attrs`` as a plain string, its values escaped."""
    ids = " ".join(x for x in (describedby, f.error_id if f.error else "") if x)
    attrs = f'id="{_esc(f.id)}" name="{_esc(f.name)}"'
    if ids:
        attrs += f' aria-describedby="{_esc(ids)}"'
    if f.error:
        attrs += ' aria-invalid="true"'
    return attrs + (" disabled" if preview else "")


@register.simple_tag(takes_context=True)
def tt_link_row(context: template.Context, row: Mapping[str, Any], allow_none: bool) -> SafeString:
    """A row of the entity-linking form: the span, its hidden offsets, the id box and
    "Not in Wikidata" (when ``allow_none``), and the row's error."""
    qid, none = row["qid"], row["none"]
    kind, error = row["kind"], row["error"]
    preview = bool(context.get("preview"))
    qid_id = _esc(qid.id)
    tags = ""
    if kind and kind != "added":
        tags += f' <span class="tt-help">({_esc(kind)})</span>'
    if row["seen"]:
        tags += ' <span class="tt-help tt-seen">(linked before in this campaign: check it)</span>'
    none_html = ""
    if allow_none:
        none_html = (
            '<span class="tt-choice">\n'
            f'          <input type="checkbox" value="1" {_attrs(none, preview)}'
            f" {tt_checked(none.value)}>\n"
            f'          <label for="{_esc(none.id)}">Not in Wikidata</label></span>'
        )
    return mark_safe(  # noqa: S308 (every value above is escaped)
        _LINK_ROW.format(
            qid_id=qid_id,
            start=_esc(row["start"]),
            end=_esc(row["end"]),
            kind=_esc(kind),
            text=_esc(row["text"]),
            tags=tags,
            prefix=_esc(row["prefix"]),
            qid_attrs=_attrs(qid, preview),
            qid=_esc(qid),
            invalid=f' aria-invalid="true" aria-describedby="{qid_id}-err"' if error else "",
            none=none_html,
            error=f'<p class="tt-error" id="{qid_id}-err" role="alert">{_esc(error)}</p>'
            if error
            else "",
        )
    )
