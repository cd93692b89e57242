"""Simulated crowd workers driving the real worker pages over HTTP.

(Prolific campaigns: participants entering through the study URL, ``prolific.py``.)

Each worker is one browser (``Browser``) with its own seeded ``random.Random``
and a profile (good / sloppy / spammer). It joins through a campaign-wide invite
link, then works in turns: one assignment per turn (stage page → Accept → task
page → POST the task type's ``simulate_form`` → thank-you page; the thank-you
page's "Next task" button instead of the stage page when the worker stays in the
stage, as a worker at it would), answering a
refusal (400) by fixing its answer or returning the task. Workers take turns in
a fixed order (or ``concurrency`` at a time), so one seed gives one run.

The items of an assignment are read from the database (``assignment_items``), as the
worker would read them off the page: the simulator and the server share the
database, in-process or not.
"""

from __future__ import annotations

import html
import json
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, connections
from django.urls import reverse
from django.utils import timezone

from campaigns.assist.calls import model_calls_run_due
from campaigns.models import HIT, Assignment, AssignmentStatus, Campaign, InviteRedemption, Stage
from campaigns.simulate.browser import Browser, Page, WSGIApp
from campaigns.simulate.llm import ModelPaster, llm_workers
from campaigns.simulate.summary import SimulationResult
from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.base import SIMULATION_PROFILES, answer_for_item
from campaigns.work.decisions import assignments_approve
from campaigns.work.invites import invite_create, invite_revoke, invite_token
from campaigns.work.selectors.loading import assignment_items
from qaportal import prepared
from qaportal.errors import DomainError
from qaportal.outbox import outbox_deferred

DEFAULT_PROFILES: dict[str, float] = {"good": 0.6, "sloppy": 0.25, "spammer": 0.15}
# A worker gives up on a stage after returning this many of its tasks.
MAX_RETURNS_PER_STAGE = 2
# Submissions per assignment before the worker returns it instead.
MAX_ATTEMPTS = 3
_ASSIGNMENT_PATH = re.compile(r"/work/a/(\d+)/$")
_DONE_PATH = re.compile(r"/work/a/(\d+)/done/$")
# Model in the loop: the page's "Ask the model" button, its polling and its marking.
_ADV_TRY = re.compile(r'formaction="(/work/a/\d+/try/)"[^>]*data-adv-ask')
_ADV_POLL = re.compile(r'data-adv-poll="([^"]+)"')
_ADV_MARK = re.compile(r'formaction="(/work/a/\d+/try/\d+/mark/)"')
_ADV_ANSWER = re.compile(r'<q class="w-model-answer">(.*?)</q>', re.S)
# Tries a simulated worker makes at most on one assignment (the stage's limit applies).
MAX_ADVERSARIAL_TRIES = 10


def _not_for_worker(page: Page) -> bool:
    """A stage refused to this worker: another arm's, not invited to it, or a quiz first."""
    return page.status == 403 and ("w-no-access" in page.text or "w-gate" in page.text)


class SimulationError(DomainError):
    """The simulation cannot start (campaign state, provider, profiles)."""

    code = "simulation_invalid"


def parse_profiles(text: str) -> dict[str, float]:
    """``"good=0.6,sloppy=0.25,spammer=0.15"`` as shares summing to 1."""
    shares: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        name = name.strip()
        if name not in SIMULATION_PROFILES:
            raise SimulationError(
                f"Unknown profile {name!r}; profiles are {', '.join(SIMULATION_PROFILES)}."
            )
        try:
            shares[name] = float(value)
        except ValueError:
            raise SimulationError(f"Profile {name!r} needs a share, e.g. {name}=0.5.") from None
        if shares[name] < 0:
            raise SimulationError(f"The share of {name!r} cannot be negative.")
    total = sum(shares.values())
    if total <= 0:
        raise SimulationError("Give at least one profile a positive share.")
    return {name: share / total for name, share in shares.items()}


def profile_mix(*, workers: int, shares: dict[str, float], seed: int) -> list[str]:
    """Profiles for ``workers`` workers in the given shares (largest remainder), shuffled
    by ``seed``."""
    exact = {name: share * workers for name, share in shares.items()}
    counts = {name: int(value) for name, value in exact.items()}
    left = workers - sum(counts.values())
    by_remainder = sorted(exact, key=lambda n: (-(exact[n] - counts[n]), list(shares).index(n)))
    for name in by_remainder[:left]:
        counts[name] += 1
    mix = [name for name in shares for _ in range(counts[name])]
    random.Random(seed).shuffle(mix)
    return mix


@dataclass
class SimulatedWorker:
    number: int
    profile: str
    rng: random.Random
    browser: Browser
    returns: Counter[int] = field(default_factory=Counter)
    # The run's progress count when this worker last found nothing to do.
    idle_at: int = -1
    # The thank-you page's "Next task" button, as last seen: (stage, page).
    next_task: tuple[int, Page] | None = None
    # Pastes a language model's output into free-text fields (``--llm-share``).
    uses_llm: bool = False


@dataclass
class _Stage:
    pk: int
    name: str
    task_type: str
    config: dict[str, Any]
    # Its worker page and the page's Accept form action.
    path: str = field(init=False)
    accept_path: str = field(init=False)

    def __post_init__(self) -> None:
        self.path = reverse("worker:stage", kwargs={"stage_id": self.pk})
        self.accept_path = reverse("worker:accept", kwargs={"stage_id": self.pk})

    def offers_accept(self, page: Page) -> bool:
        """Whether ``page`` (the stage page, a thank-you page) has this stage's Accept form."""
        return f'action="{self.accept_path}"' in page.text


def _stages_with_work(*, stage_ids: list[int], worker_ids: list[int], now: datetime) -> set[int]:
    """Of ``stage_ids``, those with a published, unexpired HIT with a free place or an
    assignment one of ``worker_ids`` (the run's workers) accepted and has not finished.
    Written out and prepared once per connection on PostgreSQL (``qaportal.prepared``):
    asked after nearly every submission, the ORM took ten times the database's time to
    build it, and planning it took longer than running it. The open-HIT test repeats the
    partial index ``hit_open_places`` (published, places left) so that it is used; the
    accepted test goes through the index on (worker, status)."""
    stage, hit, assignment = Stage._meta.db_table, HIT._meta.db_table, Assignment._meta.db_table
    marks = ", ".join(["%s"] * len(stage_ids))
    # Table names from the models, values as parameters. The open-HIT test is a scalar
    # subquery that stops at its first row, run per stage: as EXISTS, PostgreSQL could
    # hash every open HIT of every stage first.
    sql = (
        f"SELECT s.id FROM {stage} s WHERE s.id IN ({marks}) AND ("  # noqa: S608
        f"(SELECT 1 FROM {hit} h WHERE h.stage_id = s.id AND h.status = 'published'"
        f" AND h.places_left > 0 AND (h.expires_at IS NULL OR h.expires_at > %s) LIMIT 1)"
        " IS NOT NULL"
    )
    params: list[Any] = [*stage_ids, connection.ops.adapt_datetimefield_value(now)]
    if worker_ids:
        # Not correlated: found from the workers' side (the index on worker and status),
        # whatever the statistics the generic plan was made with. On PostgreSQL their
        # HITs are then looked up by id (``= ANY(ARRAY(...))``, computed once): as a
        # join, the generic plan made while the tables were small hashed every HIT of
        # the campaign at each call (a paper-sized run has tens of thousands).
        accepted = (
            f"SELECT a.hit_id FROM {assignment} a"  # noqa: S608
            f" WHERE a.worker_id IN ({', '.join(['%s'] * len(worker_ids))}) AND a.status = %s"
        )
        among = (
            f"= ANY(ARRAY({accepted}))" if connection.vendor == "postgresql" else f"IN ({accepted})"
        )
        sql += f" OR s.id IN (SELECT h.stage_id FROM {hit} h WHERE h.id {among})"  # noqa: S608
        params += [*worker_ids, AssignmentStatus.ACCEPTED.value]
    with connection.cursor() as cursor:
        prepared.execute(cursor, sql + ")", params)
        return {row[0] for row in cursor.fetchall()}


class CrowdSimulation:
    """One run over one campaign; see ``simulate_crowd``."""

    def __init__(
        self,
        *,
        campaign: Campaign,
        base_url: str,
        workers: int,
        seed: int,
        shares: dict[str, float],
        approve_all: bool,
        max_seconds: float | None,
        concurrency: int,
        requester: Callable[[Campaign], bool] | None = None,
        app: WSGIApp | None = None,
        progress: Callable[[int], None] | None = None,
        llm_share: float = 0.0,
    ) -> None:
        self.campaign = campaign
        self.requester = requester
        # Called with the submissions stored so far (a command's progress bar).
        self.on_submitted = progress
        self.submitted = 0
        self.base_url = base_url.rstrip("/")
        self.seed = seed
        self.approve_all = approve_all
        self.deadline = None if max_seconds is None else time.monotonic() + max_seconds
        self.concurrency = max(1, concurrency)
        self.stages = [
            _Stage(s.pk, s.name, s.task_type, dict(s.config or {}))
            for s in campaign.stages.order_by("position", "id")
        ]
        self.result = SimulationResult(campaign=campaign.slug, seed=seed, base_url=self.base_url)
        for stage in self.stages:
            self.result.stage(stage.pk, stage.name, stage.task_type)
        self.workers = [
            SimulatedWorker(
                number=n,
                profile=profile,
                rng=random.Random(f"{seed}:{n}"),
                browser=Browser(base_url=self.base_url, app=app),
            )
            for n, profile in enumerate(profile_mix(workers=workers, shares=shares, seed=seed))
        ]
        for n in llm_workers(workers=workers, share=llm_share, seed=seed):
            self.workers[n].uses_llm = True
        self._paster = ModelPaster()
        self._assets_seen: set[str] = set()
        # Submissions, returns and approvals so far: new work can only appear when it
        # grows, so a worker that found nothing waits for it to change.
        self._progress = 0
        # Of those, the events that can open a place (a return, a round's queue, an
        # approval and its hand-off, the requester's turn; a submission only when its
        # queue runs before the next turn): between two, places are only taken.
        self._openings = 0
        self._lock = threading.Lock()
        # (openings, stages with work) as last read (``_stages_with_work``).
        self._with_work: tuple[int, set[int]] | None = None
        # The run's workers (``Worker`` ids), once they joined.
        self._worker_ids: list[int] = []

    def _advance(self, *, opens: bool = True) -> None:
        with self._lock:
            self._progress += 1
            if opens:
                self._openings += 1

    # --- The run --------------------------------------------------------------------

    def run(self) -> SimulationResult:
        started = time.monotonic()
        invite = invite_create(
            campaign=self.campaign, created_by=self.campaign.owner, expires_in=timedelta(days=1)
        )
        try:
            token = invite_token(invite=invite)
            for worker in self.workers:
                self.result.profile(worker.profile).workers += 1
                self._join(worker, token)
            self._worker_ids = sorted(
                InviteRedemption.objects.filter(invite=invite).values_list("worker_id", flat=True)
            )
            self._run_until_done()
        finally:
            invite_revoke(invite=invite)
            self._tally(started=started)
        return self.result

    def _step(self) -> bool:
        """One pass of every worker, then the approvals (``approve_all``); True when
        anything was done."""
        worked = self._pass()
        approved = self._approve_submitted() if self.approve_all else 0
        return bool(worked or approved)

    def _run_until_done(self) -> None:
        """Steps until nothing is done and the requester (``requester``) does nothing;
        a requester who acted (closed a round, granted a qualification, synced and
        approved) makes every worker look for work again. Out of time: an error."""
        finished = False
        while not finished and not self._out_of_time():
            finished = not self._step()
            if finished and self.requester is not None and self.requester(self.campaign):
                finished = False
                self._advance()
            if not finished:
                self.result.rounds += 1
        if not finished:
            self.result.errors.append(
                "stopped by --max-seconds before the work ran out; the counts are partial"
            )

    def _tally(self, *, started: float) -> None:
        """The run's time, the workers' browser counts and the stages' state, in ``result``."""
        self.result.seconds = time.monotonic() - started
        for worker in self.workers:
            self.result.requests += worker.browser.requests
            self.result.pages += worker.browser.pages
            self.result.statuses.update(worker.browser.statuses)
        self.result.collect_stage_state(campaign=self.campaign)

    def _out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    def _pass(self) -> bool:
        """Turns until no worker finds work; True when any turn did some."""
        any_work = False
        while not self._out_of_time():
            if self.concurrency == 1:
                # What the submissions of a round set off (entity agreement checks,
                # review of each submission) runs at the round's end, as a worker
                # drains its queue while the crowd works, not inside each request; a
                # HIT whose places all filled this round is judged once.
                with outbox_deferred():
                    turns = [self._turn(w) for w in self.workers]
            else:
                with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
                    turns = list(pool.map(self._threaded_turn, self.workers))
            if not any(turns):
                break
            self._advance()  # what the round's queue did (places added on disagreement)
            any_work = True
        return any_work

    def _threaded_turn(self, worker: SimulatedWorker) -> bool:
        try:
            with outbox_deferred():
                return self._turn(worker)
        finally:
            connections.close_all()  # this pool thread's own connections

    def _approve_submitted(self) -> int:
        """The requester's side (``--approve-all``): approve what was submitted."""
        submitted = dict(
            Assignment.objects.filter(
                hit__stage__campaign=self.campaign, status=AssignmentStatus.SUBMITTED
            ).values_list("pk", "hit__stage_id")
        )
        if not submitted:
            return 0
        # The hand-offs (and the publications and stage preparations they set off) run
        # after the round's approvals, as a worker would drain them from its queue,
        # not one by one inside each approval: a stage is prepared once per round.
        with outbox_deferred():
            approved = assignments_approve(
                assignment_ids=sorted(submitted),
                source="simulator",
                reason="simulated requester decision (simulate_crowd --approve-all)",
            )
        for assignment in approved:
            self.result.stage_by_id(submitted[assignment.pk]).approved += 1
            self._advance()
        self._advance()  # what the hand-offs published
        return len(approved)

    # --- One worker -------------------------------------------------------------------

    def _join(self, worker: SimulatedWorker, token: str) -> None:
        path = reverse("worker:invite", kwargs={"token": token})
        landing = self._expect(worker, worker.browser.get(path), 200)
        if landing is None:
            return
        started = worker.browser.post(path, {}, csrf=landing.csrf_token(), referer=path)
        if self._expect(worker, started, 200) is not None:
            self.result.joined += 1

    def _turn(self, worker: SimulatedWorker) -> bool:
        """At most one assignment, in the first stage that has work for this worker."""
        if worker.idle_at == self._progress:
            return False
        seen = self._progress
        with_work = self._stages_with_work()
        for stage in self.stages:
            if worker.returns[stage.pk] >= MAX_RETURNS_PER_STAGE:
                continue
            if stage.pk not in with_work:
                continue  # its page would say "no task" to everyone
            if self._out_of_time():
                return False
            if self._work_in_stage(worker, stage):
                return True
        worker.idle_at = seen
        return False

    def _stages_with_work(self) -> set[int]:
        """The stages whose page may offer someone a task: a published, unexpired HIT
        with a free place (what ``hits_open`` reads), or an assignment one of the run's
        workers accepted and has yet to finish. The page of any other stage shows every
        worker no task, so it is not asked for: one query per opening instead of a page
        per worker and stage (idle workers polled pages that could offer nothing).
        Read again only after an event that can open a place (``_advance(opens=True)``):
        in between, places are only taken, so the set read last still holds every stage
        with work, and a stage that ran out meanwhile shows its page's "no task" (the
        turn goes on to the next stage, as it would have without it)."""
        with self._lock:
            openings = self._openings
            if self._with_work is not None and self._with_work[0] == openings:
                return self._with_work[1]
        found = _stages_with_work(
            stage_ids=[stage.pk for stage in self.stages],
            worker_ids=self._worker_ids,
            now=timezone.now(),
        )
        with self._lock:
            self._with_work = (openings, found)
        return found

    def _work_in_stage(self, worker: SimulatedWorker, stage: _Stage) -> bool:
        browser = worker.browser
        accept_path = stage.accept_path
        done, worker.next_task = worker.next_task, None
        if done is not None and done[0] == stage.pk:
            # The thank-you page's "Next task" button: Accept without the stage page.
            task = browser.post(accept_path, {}, csrf=done[1].csrf_token(), referer=done[1].path)
        else:
            stage_path = stage.path
            page = browser.get(stage_path)
            if _not_for_worker(page):
                return False
            if self._expect(worker, page, 200) is None:
                return False
            current = re.search(r'href="(/work/a/\d+/)"', page.text)
            if current:
                task = browser.get(current.group(1))
            elif stage.offers_accept(page):
                task = browser.post(accept_path, {}, csrf=page.csrf_token(), referer=stage_path)
            else:
                return False
        if _not_for_worker(task):
            return False
        if self._expect(worker, task, 200) is None:
            return False
        found = _ASSIGNMENT_PATH.search(task.path)
        if not found:
            return False  # taken by someone else meanwhile: the stage page says so
        tally = self.result.stage_by_id(stage.pk)
        tally.accepted += 1
        self._load_assets(worker, task)
        self._work_on(worker, stage, int(found.group(1)), task)
        return True

    def _work_on(
        self, worker: SimulatedWorker, stage: _Stage, assignment_id: int, task: Page
    ) -> None:
        tally = self.result.stage_by_id(stage.pk)
        profile_tally = self.result.profile(worker.profile)
        items = assignment_items(assignment_id=assignment_id)
        task_type = task_type_get(stage.task_type)
        profile = worker.profile
        page = self._adversarial_tries(worker, task, assignment_id, items, task_type, stage.config)
        for attempt in range(MAX_ATTEMPTS):
            fields = task_type.simulate_form(
                items=items, config=stage.config, profile=profile, rng=worker.rng
            )
            pasted = None
            if worker.uses_llm and attempt == 0:
                pasted = self._paster.paste(
                    stage_id=stage.pk,
                    config=stage.config,
                    task_type=stage.task_type,
                    items=items,
                    fields=fields,
                    rng=worker.rng,
                )
            telemetry = self._telemetry(worker, fields)
            if pasted:
                telemetry["pastes"] = pasted
                telemetry["keystrokes"] = worker.rng.randint(0, 12)
            fields["telemetry"] = [json.dumps(telemetry)]
            response = worker.browser.post(
                task.path, fields, csrf=page.csrf_token(), referer=task.path
            )
            if self._stored(worker, response):
                if pasted:
                    self.result.llm_pasted.append(assignment_id)
                tally.submitted += 1
                profile_tally.submitted += 1
                self._count_submission()
                # One turn at a time, its queue runs at the round's end (``_pass``).
                self._advance(opens=self.concurrency > 1)
                if stage.offers_accept(response):
                    worker.next_task = (stage.pk, response)
                self._maybe_double_submit(worker, task, fields, page)
                return
            if response.status == 409:
                tally.closed += 1
                self._advance()
                return
            if response.status != 400:
                # A broken page: report it, and give the task back as a worker would.
                self._error(worker, response, "submitting")
                break
            tally.reprompted += 1
            profile_tally.reprompted += 1
            page = response
            # Refused: careful workers fix their answer; a spammer may give up instead.
            if attempt + 1 == MAX_ATTEMPTS or (profile == "spammer" and worker.rng.random() < 0.5):
                break
            profile = "good"
        self._return(worker, stage, task, page)

    def _adversarial_tries(
        self,
        worker: SimulatedWorker,
        task: Page,
        assignment_id: int,
        items: list[dict[str, Any]],
        task_type: Any,
        config: dict[str, Any],
    ) -> Page:
        """On an adversarial stage, ask the model until the page offers no more tries:
        each try posts a fresh answer to "Ask the model"; while the model answers, the
        simulated worker does what a Celery worker would (runs the calls due, off the
        page's request) and looks again; where the page asks, it marks the model's answer
        (good workers as the task type would judge it, others at random). Returns the
        page to submit from (``task`` on other stages)."""
        page = task
        for _ in range(MAX_ADVERSARIAL_TRIES):
            ask = _ADV_TRY.search(page.text)
            if ask is None:
                return page
            fields = task_type.simulate_form(
                items=items, config=config, profile="good", rng=worker.rng
            )
            page = worker.browser.post(
                ask.group(1), fields, csrf=page.csrf_token(), referer=task.path
            )
            if page.status != 200:
                return task  # refused (a bad answer): the submission says why
            if _ADV_POLL.search(page.text):
                model_calls_run_due(assignment_id=assignment_id)
                page = worker.browser.get(task.path)
            mark = _ADV_MARK.search(page.text)
            if mark is not None:
                answer = _ADV_ANSWER.search(page.text)
                entry = task_type.adversarial_entry(
                    entry=answer_for_item(fields_entry(task_type, fields, items, config), items[0])
                    or {},
                    data=items[0].get("data", {}),
                )
                right = None
                if answer is not None and worker.profile == "good":
                    right = task_type.model_answer_judge(
                        entry=entry,
                        data=items[0].get("data", {}),
                        model_answer=html.unescape(answer.group(1)),
                    )
                if right is None:
                    right = worker.rng.random() < 0.5
                page = worker.browser.post(
                    mark.group(1),
                    {"model_right": ["yes" if right else "no"]},
                    csrf=page.csrf_token(),
                    referer=task.path,
                )
        return page

    # The status of the page a stored submission ends on (the thank-you page).
    _stored_status = 200

    def _count_submission(self) -> None:
        self.submitted += 1
        if self.on_submitted is not None:
            self.on_submitted(self.submitted)

    def _stored(self, worker: SimulatedWorker, response: Page) -> bool:
        """Whether ``response`` to a task's POST says the answer was stored."""
        return response.status == 200 and bool(_DONE_PATH.search(response.path))

    def _return(self, worker: SimulatedWorker, stage: _Stage, task: Page, page: Page) -> None:
        found = _ASSIGNMENT_PATH.search(task.path)
        assert found is not None
        path = reverse("worker:return", kwargs={"assignment_id": int(found.group(1))})
        response = worker.browser.post(path, {}, csrf=page.csrf_token(), referer=task.path)
        if self._expect(worker, response, 200) is not None:
            worker.returns[stage.pk] += 1
            self._advance()
            self.result.stage_by_id(stage.pk).returned += 1
            self.result.profile(worker.profile).returned += 1

    def _maybe_double_submit(
        self, worker: SimulatedWorker, task: Page, fields: dict[str, list[str]], page: Page
    ) -> None:
        """A double click or a resent form: must change nothing (stored exactly once)."""
        if worker.profile == "good" or worker.rng.random() >= 0.2:
            return
        again = worker.browser.post(task.path, fields, csrf=page.csrf_token(), referer=task.path)
        if self._expect(worker, again, self._stored_status) is not None:
            self.result.replays += 1
            if not self._stored(worker, again):
                self.result.errors.append(
                    f"worker {worker.number}: a resent submission of {task.path} did not lead "
                    f"to the thank-you page (ended at {again.path})"
                )

    def _telemetry(self, worker: SimulatedWorker, fields: dict[str, list[str]]) -> dict[str, Any]:
        """What the page's script would report: typing, pastes (spammers), focus, time."""
        typed = sum(len(v) for name, values in fields.items() for v in values if "/" in name)
        rng = worker.rng
        pastes = []
        if worker.profile == "spammer":
            pastes = [
                {"field": name, "length": len(values[0])}
                for name, values in fields.items()
                if values and values[0]
            ][: rng.randint(1, 3)]
        return {
            "keystrokes": 0 if worker.profile == "spammer" else typed + rng.randint(0, 40),
            "pastes": pastes,
            "focus_losses": rng.randint(0, 3),
            "visibility_changes": rng.randint(0, 2),
            "first_input_ms": rng.randint(800, 9000),
            "page_ms": rng.randint(20_000, 400_000),
        }

    def _load_assets(self, worker: SimulatedWorker, page: Page) -> None:
        """Fetch the page's scripts and style sheets once per run, as a browser would."""
        for path in page.assets():
            if path in self._assets_seen:
                continue
            self._assets_seen.add(path)
            self._expect(worker, worker.browser.get(path), 200)

    # --- Statuses -----------------------------------------------------------------------

    def _expect(self, worker: SimulatedWorker, page: Page, status: int) -> Page | None:
        if page.status == status:
            return page
        self._error(worker, page, f"expected {status}")
        return None

    def _error(self, worker: SimulatedWorker, page: Page, what: str) -> None:
        kind = (
            "no answer"
            if page.status == 0
            else "server error"
            if page.status >= 500
            else "unexpected status"
        )
        self.result.errors.append(
            f"worker {worker.number} ({worker.profile}): {kind} {page.status} on "
            f"{page.method} {page.requested} ({what}; ended at {page.url})"
            + (f": {page.text[:200]}" if page.status == 0 else "")
        )


def fields_entry(
    task_type: Any, fields: dict[str, list[str]], items: list[dict[str, Any]], config: Any
) -> Any:
    """The answer ``fields`` make, as the task type parses them (a QueryDict's lists)."""
    form = {k: v[0] if len(v) == 1 else v for k, v in fields.items() if v}
    return task_type.parse_form(form=form, items=items, config=config)
