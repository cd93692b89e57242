"""Platform ids for an operation's payload, looked up from qaportal's ids.

Services write payloads with what they hold; some (rules in ``validation``, the
hand-off) hold only qaportal ids. Before a provider gets the call, the executor adds
the platform ids it will need and that the payload does not carry yet: the HIT's
``provider_hit_id``, the assignment's ``provider_assignment_id`` (``submission_id``)
and the worker's external id (``participant_id``), a qualification's platform id
(``group_id``). Nothing is replaced and the stored payload is left as it was.
"""

from __future__ import annotations

from typing import Any

from campaigns.models import HIT, Assignment, QualificationType, Worker


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def operation_payload_complete(*, payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with the platform ids it lacks (a few primary-key reads at most)."""
    out = dict(payload)
    hit_pk = _int(out.get("hit_id"))
    if hit_pk is not None and not out.get("provider_hit_id"):
        out["provider_hit_id"] = (
            HIT.objects.filter(pk=hit_pk).values_list("provider_hit_id", flat=True).first()
        )
    assignment_pk = _int(out.get("assignment_id", out.get("assignment")))
    if assignment_pk is not None and not (out.get("submission_id") and out.get("participant_id")):
        row = (
            Assignment.objects.filter(pk=assignment_pk)
            .values_list("provider_assignment_id", "worker__external_id")
            .first()
        )
        if row is not None:
            out["submission_id"] = out.get("submission_id") or row[0]
            out["participant_id"] = out.get("participant_id") or row[1]
    ids = out.get("assignment_ids")
    if ids and not out.get("submission_ids"):
        found = dict(
            Assignment.objects.filter(pk__in=[int(i) for i in ids]).values_list(
                "pk", "provider_assignment_id"
            )
        )
        out["submission_ids"] = [found.get(int(i)) for i in ids]
    worker_pk = _int(out.get("worker_id", out.get("worker")))
    if worker_pk is not None and not out.get("participant_id"):
        out["participant_id"] = (
            Worker.objects.filter(pk=worker_pk).values_list("external_id", flat=True).first()
        )
    qual_pk = _int(out.get("qualification_type_id", out.get("qualification_type")))
    if qual_pk is not None and not out.get("group_id"):
        group = (
            QualificationType.objects.filter(pk=qual_pk)
            .values_list("provider_qualification_id", flat=True)
            .first()
        )
        if group:
            out["group_id"] = group
        out.setdefault("group_name", f"qaportal-qual-{qual_pk}")
    return out
