"""The built-in local workforce: invite links or logged-in annotators, no money moved.

Its operations touch no platform: each returns at once what the executor records
(``campaigns.platforms.operations`` applies the database effects for every provider
alike), so the local workforce passes the same contract suite as the paid platforms.
"""

from __future__ import annotations

from typing import Any

from campaigns.platforms.base import NoFees, OperationCall, Provider


class LocalProvider(Provider):
    name = "local"
    fee_model = NoFees()
    moves_money = False

    def publish_hits(self, call: OperationCall) -> dict[str, Any]:
        hit_ids = [int(h) for h in call.payload.get("hit_ids", [])]
        return {
            "hits": {str(h): {"provider_hit_id": f"local-{h}", "group_id": ""} for h in hit_ids}
        }

    def add_assignments(self, call: OperationCall) -> dict[str, Any]:
        return {"added": int(call.payload.get("count", 1))}

    def approve(self, call: OperationCall) -> dict[str, Any]:
        return {"approved": True}

    def reject(self, call: OperationCall) -> dict[str, Any]:
        return {"rejected": True}

    def bonus(self, call: OperationCall) -> dict[str, Any]:
        # Nothing to pay on the local workforce: the ledger still records the amount.
        return {"paid": True}

    def notify(self, call: OperationCall) -> dict[str, Any]:
        return {"sent": len(call.payload.get("worker_ids", []))}

    def grant_qualification(self, call: OperationCall) -> dict[str, Any]:
        return {"granted": True}

    def revoke_qualification(self, call: OperationCall) -> dict[str, Any]:
        return {"revoked": True}

    def block(self, call: OperationCall) -> dict[str, Any]:
        return {"blocked": True}

    def unblock(self, call: OperationCall) -> dict[str, Any]:
        return {"unblocked": True}

    def expire(self, call: OperationCall) -> dict[str, Any]:
        return {"expired": True}

    def study_transition(self, call: OperationCall) -> dict[str, Any]:
        return {"action": call.payload.get("action", "")}
