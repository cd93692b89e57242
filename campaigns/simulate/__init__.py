"""A crowd simulator: seeded workers of several profiles working through the real
worker pages over HTTP (``simulate_crowd``); see ``crowd.py``.

Used by ``manage.py simulate_crowd``, the pipeline tests and the benchmarks.
"""

from campaigns.simulate.crowd import (
    DEFAULT_PROFILES,
    SimulationError,
    parse_profiles,
    profile_mix,
)
from campaigns.simulate.prolific import ProlificHooks, ProlificSession
from campaigns.simulate.run import simulate_crowd
from campaigns.simulate.server import LocalServer
from campaigns.simulate.summary import SimulationResult

__all__ = [
    "DEFAULT_PROFILES",
    "LocalServer",
    "ProlificHooks",
    "ProlificSession",
    "SimulationError",
    "SimulationResult",
    "parse_profiles",
    "profile_mix",
    "simulate_crowd",
]
