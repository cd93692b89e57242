"""The model in the loop, per exported example (issue 38, item 4): the model calls made
for an assignment (its id and version, its answer, what for and how it ended) and the
assignment's LLM flag with its evidence (``Assignment.llm_flag``).

Read through the ORM on every database (two queries per chunk of examples), so the
PostgreSQL and SQLite exports carry the same values. Adversarial fields (``fooled``,
``verified``) join ``CALL_FIELDS`` when the ModelCall model has them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from campaigns.models import Assignment, Campaign, ModelCall

# ModelCall columns as exported, in order: (exported name, model field).
CALL_FIELDS: tuple[tuple[str, str], ...] = (
    ("purpose", "purpose"),
    ("item", "item__external_id"),
    ("try", "try_number"),
    ("status", "status"),
    ("model_id", "model_id"),
    ("model_version", "model_version"),
    ("answer", "answer"),
)
_OPTIONAL = ("fooled", "verified")


def _call_fields() -> tuple[tuple[str, str], ...]:
    names = {f.name for f in ModelCall._meta.get_fields()}
    return CALL_FIELDS + tuple((n, n) for n in _OPTIONAL if n in names)


def call_columns() -> list[str]:
    """The exported names of a model call's members."""
    return [name for name, _ in _call_fields()]


def model_calls_by_assignment(assignment_ids: Iterable[int]) -> dict[int, list[dict[str, Any]]]:
    """``{assignment id: [call, …]}`` in call id order; one query."""
    ids = sorted(set(assignment_ids))
    out: dict[int, list[dict[str, Any]]] = defaultdict(list)
    if not ids:
        return out
    fields = _call_fields()
    for row in (
        ModelCall.objects.filter(assignment_id__in=ids)
        .order_by("assignment_id", "pk")
        .values_list("assignment_id", *(f for _, f in fields))
    ):
        out[row[0]].append({name: value for (name, _), value in zip(fields, row[1:], strict=True)})
    return out


def llm_flags_by_assignment(assignment_ids: Iterable[int]) -> dict[int, Any]:
    """``{assignment id: Assignment.llm_flag}`` for those that have one; one query."""
    ids = sorted(set(assignment_ids))
    if not ids:
        return {}
    return dict(
        Assignment.objects.filter(pk__in=ids, llm_flag__isnull=False).values_list("pk", "llm_flag")
    )


def campaign_uses_models(*, campaign: Campaign) -> dict[str, Any]:
    """What the datasheet and card say of the model in the loop: the purposes and the
    models (id, version) of the campaign's model calls, and how many answers were flagged.
    Empty purposes: no model was in the loop."""
    purposes = sorted(set(campaign.model_calls.values_list("purpose", flat=True)))
    models = sorted(
        {
            (m or "", v or "")
            for m, v in campaign.model_calls.exclude(model_id="").values_list(
                "model_id", "model_version"
            )
        }
    )
    flagged = Assignment.objects.filter(
        hit__stage__campaign=campaign, llm_flag__flagged=True
    ).count()
    scored = Assignment.objects.filter(
        hit__stage__campaign=campaign, llm_flag__isnull=False
    ).count()
    return {"purposes": purposes, "models": models, "flagged": flagged, "scored": scored}


def model_loop_sentences(usage: dict[str, Any]) -> list[str]:
    """What the card, datasheet and Croissant say of ``campaign_uses_models``' record:
    nothing when no model was in the loop."""
    purposes = usage.get("purposes") or []
    if not purposes:
        return []
    models = ", ".join(f"{m} (version {v or 'not reported'})" for m, v in usage.get("models", []))
    out = [
        "A language model was in the loop ("
        + ", ".join(PURPOSE_WORDS.get(p, p) for p in purposes)
        + f"): {models or 'no call answered'}. Each example carries the model calls made "
        "for it (`model_calls`: the model's id, version and answer)."
    ]
    if "llm_flag" in purposes:
        out.append(
            f"{usage.get('flagged', 0):,} of {usage.get('scored', 0):,} answers checked were "
            "flagged as possibly written by a language model (similarity to the model's "
            "answer to the same task, with the page's paste, typing and focus telemetry); "
            "each example carries its flag and evidence (`llm_flag`). A flag held answers for "
            "a person's review; it never rejected one on its own."
        )
    return out


PURPOSE_WORDS = {
    "adversarial": "adversarial writing: workers saw its answers and tried to beat them",
    "llm_flag": "checking whether answers were written by a language model",
}
