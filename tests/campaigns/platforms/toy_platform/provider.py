"""Toy Crowd's operations: each ``ProviderOperation`` carried out on ``service.CROWD``.

Idempotent per operation key (Toy Crowd repeats nothing asked twice with one token);
a refusal is a ``PermanentProviderError``, so the operation fails with its reason.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings

from campaigns.models import HIT
from campaigns.platforms.base import OperationCall, PermanentProviderError, Provider
from tests.campaigns.platforms.toy_platform import service
from tests.campaigns.platforms.toy_platform.fees import ToyFees


class ToyProvider(Provider):
    name = "toy"
    currency = "EUR"
    fee_model = ToyFees()

    def __init__(self, *, api_key: str) -> None:
        self.api_key = api_key

    @classmethod
    def from_settings(cls) -> ToyProvider:
        return cls(api_key=getattr(settings, "TOY_API_KEY", ""))

    @classmethod
    def from_credentials(cls, *, api_key: str) -> ToyProvider:
        return cls(api_key=api_key)

    def execute(self, call: OperationCall) -> dict[str, Any]:
        try:
            return super().execute(call)
        except service.Refused as exc:
            raise PermanentProviderError(f"Toy Crowd refused: {exc}") from exc

    def publish_hits(self, call: OperationCall) -> dict[str, Any]:
        p = call.payload
        group = f"toy-stage-{p['stage_id']}"
        hits = {
            str(hit_id): {
                "provider_hit_id": service.CROWD.hit_create(
                    api_key=self.api_key,
                    token=f"{call.key}:{hit_id}",
                    max_assignments=int(p["max_assignments"]),
                    group=group,
                ),
                "group_id": group,
            }
            for hit_id in p["hit_ids"]
        }
        return {"hits": hits}

    def add_assignments(self, call: OperationCall) -> dict[str, Any]:
        hit = HIT.objects.get(pk=int(call.payload["hit_id"]))
        count = int(call.payload.get("count", 1))
        service.CROWD.places_add(
            api_key=self.api_key, hit_id=str(hit.provider_hit_id), count=count, token=call.key
        )
        return {"added": count}

    def _decide(self, call: OperationCall, *, approve: bool) -> dict[str, Any]:
        ids = call.payload.get("submission_ids") or [call.payload["submission_id"]]
        for assignment_id in ids:
            service.CROWD.decide(api_key=self.api_key, assignment_id=assignment_id, approve=approve)
        return {"decided": len(ids)}

    def approve(self, call: OperationCall) -> dict[str, Any]:
        return self._decide(call, approve=True)

    def reject(self, call: OperationCall) -> dict[str, Any]:
        return self._decide(call, approve=False)

    def bonus(self, call: OperationCall) -> dict[str, Any]:
        service.CROWD.bonus(
            api_key=self.api_key,
            assignment_id=call.payload["submission_id"],
            amount=Decimal(call.payload["amount"]),
            token=call.key,
        )
        return {"paid": True}

    def block(self, call: OperationCall) -> dict[str, Any]:
        service.CROWD.block(api_key=self.api_key, worker_id=call.payload["participant_id"])
        return {"blocked": True}

    def notify(self, call: OperationCall) -> dict[str, Any]:
        service.CROWD.message(
            api_key=self.api_key,
            worker_ids=list(call.payload["participant_ids"]),
            subject=call.payload.get("subject", ""),
            body=call.payload["body"],
        )
        return {"sent": len(call.payload["participant_ids"])}
