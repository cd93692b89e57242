"""The built-in local workforce: invite links or logged-in annotators, no money moved."""

from __future__ import annotations

from campaigns.providers.base import NoFees, Provider


class LocalProvider(Provider):
    name = "local"
    fee_model = NoFees()
    moves_money = False
