"""``simulate_crowd``: which simulation a campaign gets, by how its workers enter.

The local workforce's workers come through invite links (``crowd.py``); Prolific's
through a study URL with their ids (``prolific.py``). The platform says which
(``Platform.worker_entry``).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection, connections
from django.db.backends.signals import connection_created

from campaigns.design.platform import platform_for
from campaigns.models import HIT, Campaign, Stage
from campaigns.simulate.browser import WSGIApp
from campaigns.simulate.crowd import DEFAULT_PROFILES, CrowdSimulation, SimulationError
from campaigns.simulate.prolific import ProlificHooks, ProlificSimulation
from campaigns.simulate.server import local_app
from campaigns.simulate.summary import SimulationResult
from campaigns.tasktypes import TaskType, task_type_get
from campaigns.work.selectors.access import WORKABLE_STATES

# How simulated workers arrive (``Platform.worker_entry``), and the names the
# command line also takes for them.
ENTRIES = ("invite", "study_url")
ENTRY_NAMES = {"prolific": "study_url"}
# The site's address when the app is called in process (no socket behind it).
IN_PROCESS_URL = "http://127.0.0.1"


def simulate_crowd(
    *,
    campaign: Campaign,
    workers: int,
    seed: int,
    shares: dict[str, float] | None = None,
    base_url: str | None = None,
    approve_all: bool = False,
    max_seconds: float | None = None,
    concurrency: int = 1,
    entry: str = "auto",
    prolific_hooks: ProlificHooks | None = None,
    requester: Callable[[Campaign], bool] | None = None,
    progress: Callable[[int], None] | None = None,
    llm_share: float = 0.0,
) -> SimulationResult:
    """Run ``workers`` simulated workers on ``campaign`` until no stage has work left.

    ``campaign`` must be in pilot or live. ``entry`` says how workers arrive:
    ``"invite"`` (local campaigns): a campaign-wide invite link is made for the run and
    revoked at its end; ``"prolific"`` (Prolific campaigns, whose studies must be
    published): each worker is a participant entering every study through its URL
    parameters and sent back to Prolific's completion URL
    (``campaigns.simulate.prolific``; ``prolific_hooks`` tells a fake Prolific about the
    sessions); ``"auto"``: by the campaign's provider. Without ``base_url`` the
    simulated browsers call the real WSGI app in process (``WSGITransport``: the whole
    middleware and view stack, as a server would call it, without sockets or server
    threads) as http://127.0.0.1. With ``approve_all`` (invite entry only), every
    submitted assignment is approved after each round (``assignment_approve``, source
    "simulator") so that approved answers hand off to the next stage; otherwise only
    stages with an auto_approve rule flow. ``requester`` (either entry) is the
    requester's side between rounds (on Prolific: sync, approve, publish hand-offs);
    called whenever the crowd has run out of work, it may act on the campaign (close a
    graded round, grant a qualification) and returns True when it did, so the workers
    look again; the run ends when it returns False. ``llm_share``: the share of workers
    who paste the stage's model's output into free-text fields on stages that ask for
    the LLM flag (``campaigns.simulate.llm``; invite entry).
    Raises ``SimulationError`` when the run cannot start.
    """
    campaign = Campaign.objects.select_related("owner").get(pk=campaign.pk)
    entry = ENTRY_NAMES.get(entry, entry)
    if entry == "auto":
        entry = platform_for(campaign).worker_entry
    if entry not in ENTRIES:
        raise SimulationError(f"Unknown entry {entry!r}; use invite, prolific or auto.")
    if campaign.state not in WORKABLE_STATES:
        raise SimulationError(
            f"Campaign {campaign.slug!r} is {campaign.state!r}; the simulator works on a "
            "pilot or live campaign (start it first)."
        )
    if entry == "invite" and platform_for(campaign).worker_entry != "invite":
        raise SimulationError(
            f"Campaign {campaign.slug!r} runs on {campaign.provider!r}; the simulator joins "
            "through invite links, which only the local workforce has."
        )
    if entry == "study_url":
        _check_prolific(campaign=campaign, approve_all=approve_all)
    if workers < 1:
        raise SimulationError("Simulate at least one worker.")
    if not 0 <= llm_share <= 1:
        raise SimulationError("The LLM share is between 0 and 1.")
    if not Stage.objects.filter(campaign=campaign).exists():
        raise SimulationError(f"Campaign {campaign.slug!r} has no stages.")
    for stage in campaign.stages.all():
        if type(task_type_get(stage.task_type)).simulate is TaskType.simulate:
            raise SimulationError(
                f"Stage {stage.name!r}: task type {stage.task_type!r} has no simulate_form()."
            )

    def run(url: str, app: WSGIApp | None = None) -> SimulationResult:
        options: dict[str, Any] = {
            "campaign": campaign,
            "base_url": url,
            "app": app,
            "workers": workers,
            "seed": seed,
            "shares": shares or DEFAULT_PROFILES,
            "approve_all": approve_all,
            "max_seconds": max_seconds,
            "concurrency": concurrency,
            "progress": progress,
        }
        if entry == "study_url":
            return ProlificSimulation(hooks=prolific_hooks, requester=requester, **options).run()
        return CrowdSimulation(requester=requester, llm_share=llm_share, **options).run()

    if base_url:
        return run(base_url)
    with _commits_unsynced(), _no_health_pings(), _set_up_frozen():
        return run(IN_PROCESS_URL, local_app())


@contextmanager
def _set_up_frozen() -> Iterator[None]:
    """While the app runs in this process, what was there before the run (modules, the
    URLconf, settings, the templates' engine) is out of the garbage collector's sight
    (``gc.freeze``, as ``qaportal/wsgi.py`` does for a web process): each full
    collection of the run walked all of it again, without finding anything to free.
    Handed back to the collector at the end (``gc.unfreeze``): what it holds is
    collected as before, later. A process that froze objects itself (a web process)
    is left as it is."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def _no_health_pings() -> Iterator[None]:
    """While the app runs in this process, its requests do not ping the database before
    their first query (``CONN_HEALTH_CHECKS``): the connection is this thread's, used a
    moment ago by the request before, and on PostgreSQL the ping was one more round trip
    per simulated request. Restored at the end."""
    before = connection.settings_dict.get("CONN_HEALTH_CHECKS", False)
    connection.settings_dict["CONN_HEALTH_CHECKS"] = False
    # Read from the settings at connect; set here for the connection already open.
    setattr(connection, "health_check_enabled", False)  # noqa: B010 (not in the stubs)
    try:
        yield
    finally:
        connection.settings_dict["CONN_HEALTH_CHECKS"] = before
        setattr(connection, "health_check_enabled", before)  # noqa: B010


@contextmanager
def _commits_unsynced() -> Iterator[None]:
    """While the app runs in this process for a dry run on PostgreSQL, its sessions
    commit without waiting for the write-ahead log to reach the disk
    (``synchronous_commit = off``): each simulated request commits a few times, and
    waiting for the disk was most of a run's wall time. A crash of the database server
    may lose the last fraction of a second of simulated work; it never leaves the
    database inconsistent, and no other session's setting changes. Restored at the end
    for the connections still open."""
    if connection.vendor != "postgresql":
        yield
        return

    changed: set[str] = set()  # the aliases set here: only those are reset

    def unsynced(sender: Any, connection: Any, **kwargs: Any) -> None:
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET synchronous_commit TO off")
            changed.add(connection.alias)

    connection_created.connect(unsynced)
    try:
        if connection.connection is not None:
            unsynced(None, connection)
        yield
    finally:
        connection_created.disconnect(unsynced)
        for conn in connections.all(initialized_only=True):
            if conn.alias in changed and conn.connection is not None:
                with conn.cursor() as cursor:
                    cursor.execute("RESET synchronous_commit")


def _check_prolific(*, campaign: Campaign, approve_all: bool) -> None:
    if platform_for(campaign).worker_entry != "study_url":
        raise SimulationError(
            f"Campaign {campaign.slug!r} runs on {campaign.provider!r}; the Prolific entry "
            "needs a Prolific campaign."
        )
    if approve_all:
        raise SimulationError(
            "--approve-all is for the local workforce; on Prolific, sync the studies and "
            "approve confirmed submissions (or give the stage an auto_approve rule)."
        )
    studies = HIT.objects.filter(stage__campaign=campaign, provider=campaign.provider)
    if not studies.exclude(provider_group_id="").exists():
        raise SimulationError(
            f"Campaign {campaign.slug!r} has no published Prolific study yet (its publish "
            "operations have not run)."
        )
