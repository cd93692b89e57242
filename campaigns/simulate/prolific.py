"""Simulated Prolific participants: each enters a study the way Prolific sends people.

A participant has a 24-hex ``PROLIFIC_PID`` (seeded); for every study of a stage it
has not entered yet it opens the study's external URL,
``/work/prolific/?PROLIFIC_PID=…&STUDY_ID=…&SESSION_ID=…&qa_stage=…`` with a random
``SESSION_ID`` (on Prolific: the submission id), works on the task page it is sent
to, and after a stored submission is redirected to Prolific's completion URL, which
is recorded (``SimulationResult.completion_urls``) and not followed. A participant
that gives up, or finds no task left, returns the study (as on Prolific). A
participant enters each study once, as Prolific allows.

Prolific itself is not simulated: ``ProlificHooks`` tells whoever plays Prolific
(a test's fake API) about each session as it starts, completes or is returned, so
that a later sync finds the submissions.
"""

from __future__ import annotations

import random
import secrets
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from campaigns.models import HIT, HITStatus, OperationKind, Provider, ProviderOperation
from campaigns.simulate.browser import Page
from campaigns.simulate.crowd import MAX_RETURNS_PER_STAGE, CrowdSimulation, SimulatedWorker
from campaigns.simulate.crowd import _Stage as Stage
from campaigns.simulate.summary import SimulationResult

PROLIFIC_HOST = "app.prolific.com"


@dataclass(frozen=True)
class ProlificSession:
    """One participant's entry into one study (``session_id`` is Prolific's submission id)."""

    participant_id: str
    study_id: str
    session_id: str


class ProlificHooks:
    """What the simulated participants tell Prolific's side; by default nothing.

    Tests pass a subclass that registers each session in a fake Prolific API, so that
    sync finds the submissions the simulated participants made.
    """

    def started(self, session: ProlificSession) -> None:
        """The participant opened the study (Prolific creates the submission)."""

    def completed(self, session: ProlificSession, code: str) -> None:
        """The participant came back with completion code ``code``."""

    def returned(self, session: ProlificSession) -> None:
        """The participant gave the study back."""


def participant_id(*, seed: int, number: int) -> str:
    """A Prolific participant id (24 hex digits), the same for a seed and a worker number."""
    return f"{random.Random(f'{seed}:{number}:pid').getrandbits(96):024x}"


def study_entries_allowed(*, study_id: str) -> int:
    """How many times one participant may take study ``study_id``: its
    ``submissions_config.max_submissions_per_participant`` as qaportal created it (-1, no
    limit, counts as many), else Prolific's default of one."""
    op = (
        ProviderOperation.objects.filter(
            provider=Provider.PROLIFIC,
            kind=OperationKind.CREATE_STUDY,
            result__study_id=study_id,
        )
        .order_by("pk")
        .only("payload")
        .first()
    )
    config = ((op.payload or {}).get("study") or {}).get("submissions_config") if op else None
    most = int((config or {}).get("max_submissions_per_participant", 1))
    return 10**6 if most == -1 else max(1, most)


def study_published_hits(*, study_id: str) -> int:
    """The number of qaportal HITs published in study ``study_id`` (it grows with places)."""
    return HIT.objects.filter(
        provider=Provider.PROLIFIC, provider_group_id=study_id, status=HITStatus.PUBLISHED
    ).count()


def stage_studies(*, stage_id: int) -> list[str]:
    """The Prolific studies holding the stage's published HITs."""
    return sorted(
        set(
            HIT.objects.filter(stage_id=stage_id, status=HITStatus.PUBLISHED)
            .exclude(provider_group_id="")
            .values_list("provider_group_id", flat=True)
        )
    )


class ProlificSimulation(CrowdSimulation):
    """``CrowdSimulation`` entering through Prolific's URL parameters instead of invites."""

    _stored_status = 302

    def __init__(self, *, hooks: ProlificHooks | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hooks = hooks or ProlificHooks()
        self.pids = {
            w.number: participant_id(seed=self.seed, number=w.number) for w in self.workers
        }
        # Entries per participant and study, and the study's published HITs when the
        # participant last found nothing left there (they look again once it grows).
        self.entered: dict[int, Counter[str]] = {w.number: Counter() for w in self.workers}
        self.found_none: dict[int, dict[str, int]] = {w.number: {} for w in self.workers}
        self.sessions: dict[int, ProlificSession] = {}  # by worker number: the current one
        self.completed: set[str] = set()

    def run(self) -> SimulationResult:
        started = time.monotonic()
        try:
            for worker in self.workers:
                self.result.profile(worker.profile).workers += 1
                self.result.joined += 1
            self._run_until_done()
        finally:
            self._tally(started=started)
        return self.result

    def _step(self) -> bool:
        """One pass of every participant; the requester approves (hand-offs may put new
        places on the studies, so every participant then looks again)."""
        return self._pass()

    def _turn(self, worker: SimulatedWorker) -> bool:
        """At most one study entered: the first this participant has not entered yet."""
        for stage in self.stages:
            if worker.returns[stage.pk] >= MAX_RETURNS_PER_STAGE:
                continue
            for study_id in stage_studies(stage_id=stage.pk):
                if self.entered[worker.number][study_id] >= study_entries_allowed(
                    study_id=study_id
                ):
                    continue
                last_empty = self.found_none[worker.number].get(study_id)
                if last_empty is not None and study_published_hits(study_id=study_id) <= last_empty:
                    continue
                if self._out_of_time():
                    return False
                if self._enter(worker, stage, study_id):
                    self.entered[worker.number][study_id] += 1
                    return True
                self.found_none[worker.number][study_id] = study_published_hits(study_id=study_id)
        return False

    def _enter(self, worker: SimulatedWorker, stage: Stage, study_id: str) -> bool:
        session = ProlificSession(
            participant_id=self.pids[worker.number],
            study_id=study_id,
            session_id=secrets.token_hex(12),
        )
        self.sessions[worker.number] = session
        self.hooks.started(session)
        query = urllib.parse.urlencode(
            {
                "PROLIFIC_PID": session.participant_id,
                "STUDY_ID": study_id,
                "SESSION_ID": session.session_id,
                "qa_stage": stage.pk,
            }
        )
        task = worker.browser.get(f"{reverse('worker-prolific:entry')}?{query}")
        if self._expect(worker, task, 200) is None:
            self.hooks.returned(session)
            return False
        prefix = reverse("worker-prolific:assignment", kwargs={"assignment_id": 0})[:-2]
        if not task.path.startswith(prefix):
            # "No task left" (or a refusal page): the participant returns the study.
            self.hooks.returned(session)
            return False
        assignment_id = int(task.path[len(prefix) :].strip("/"))
        self.result.stage_by_id(stage.pk).accepted += 1
        self._load_assets(worker, task)
        self._work_on(worker, stage, assignment_id, task)
        return True

    def _stored(self, worker: SimulatedWorker, response: Page) -> bool:
        """Stored means sent back to Prolific's completion URL (recorded once per session)."""
        location = urllib.parse.urlsplit(response.url)
        if not (response.offsite and response.status in (301, 302, 303)):
            return False
        if location.netloc != PROLIFIC_HOST:
            self.result.errors.append(
                f"worker {worker.number}: redirected off-site to {location.netloc!r}, "
                "not Prolific's completion URL"
            )
            return False
        session = self.sessions[worker.number]
        if session.session_id not in self.completed:
            self.completed.add(session.session_id)
            self.result.completion_urls.append(response.url)
            code = urllib.parse.parse_qs(location.query).get("cc", [""])[0]
            self.hooks.completed(session, code)
        return True

    def _return(self, worker: SimulatedWorker, stage: Stage, task: Page, page: Page) -> None:
        """Giving up on Prolific is returning the study there; the sync closes the task."""
        self.hooks.returned(self.sessions[worker.number])
        worker.returns[stage.pk] += 1
        self._advance()
        self.result.stage_by_id(stage.pk).returned += 1
        self.result.profile(worker.profile).returned += 1
