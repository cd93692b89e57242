"""Kill -9 runs against a real Celery worker: set-up, the kill, the settling, the checks.

Shared by ``tests/reliability/test_worker_kill.py`` (one small run) and
``bench/fault_bench.py`` (many). The caller owns the Django settings (a PostgreSQL
database the worker can see, a broker that is not eager) and a ``FakeMTurk`` whose
record of effects survives the worker; this module

1. prepares a batch of one kind (``publish``: stages whose HITs are to be created;
   ``sync``: submitted work on MTurk that a sync confirms and an ``auto_approve`` rule
   approves; ``approve``; ``bonus``) with the operations it needs executed inline, so
   only the batch itself goes through the worker;
2. starts a real ``celery worker`` in a process group of its own, and kills that
   group with SIGKILL when a chosen share of the batch is done;
3. starts a fresh worker and plays beat (``campaigns.reconcile_operations``, and
   ``campaigns.platform_sync`` of MTurk for a sync batch) until nothing is pending or running;
4. checks the outcome against the fake's own record: each effect exactly once,
   nothing lost, failed operations with a reason, ledger rows neither doubled nor left
   committed.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
KINDS = ("publish", "sync", "approve", "bonus")
ITEMS_PER_STAGE = 2  # publish batches: one operation per stage, this many HITs each
SYNC_HITS = 10  # sync batches: one campaign (a sync task, a bulk approval) per this many
# What a fresh shell has: nothing of the caller's own configuration leaks into the worker.
_KEPT = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "USER", "TZ")


def worker_env(
    *,
    database_url: str,
    broker_url: str,
    mturk_url: str,
    stale_minutes: float,
    secret_key: str,
    **extra: str,
) -> dict[str, str]:
    """The environment of a worker that sees the caller's database, broker and fake
    (``secret_key``: the caller's, so both make the same MTurk tokens and annotations)."""
    from tests.campaigns.platforms.fake_mturk import FakeMTurk

    env = {k: os.environ[k] for k in _KEPT if k in os.environ}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "qaportal.settings",
            "PYTHONPATH": str(REPO_ROOT),
            "DEBUG": "0",
            "SECRET_KEY": secret_key,
            "ALLOWED_HOSTS": "testserver",
            "DATABASE_URL": database_url,
            "CELERY_BROKER_URL": broker_url,
            "CELERY_TASK_ALWAYS_EAGER": "0",
            "LOG_LEVEL": "WARNING",
            "SITE_URL": "https://qaportal.example.org",
            "MTURK_ACCESS_KEY_ID": FakeMTurk.ACCESS_KEY,
            "MTURK_SECRET_ACCESS_KEY": FakeMTurk.SECRET_KEY,
            "MTURK_ENDPOINT_URL": mturk_url,
            "MTURK_SANDBOX": "1",
            "MTURK_MAX_ATTEMPTS": "1",
            "MTURK_RETRY_MODE": "standard",
            "MTURK_RETRIES": "8",
            "MTURK_BACKOFF_BASE": "0.001",
            "MTURK_TIMEOUT": "5",
            "PROVIDER_OPERATION_STALE_MINUTES": str(stale_minutes),
            "PROVIDER_OPERATION_BACKOFF_BASE": "0.5",
            "PROVIDER_OPERATION_BACKOFF_MAX": "2",
        }
    )
    env.update(extra)
    return env


class Worker:
    """``celery worker`` (prefork) in a process group of its own; killed by that group's id."""

    def __init__(
        self, *, env: dict[str, str], queue: str, log_path: Path, concurrency: int = 2
    ) -> None:
        self.log_path = log_path
        command = [sys.executable, "-m", "celery", "-A", "qaportal", "worker"]
        command += ["--pool", "prefork", "--concurrency", str(concurrency)]
        command += ["--queues", queue, "--hostname", f"{queue}-{time.monotonic_ns()}@%h"]
        command += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
        command += ["--loglevel", "INFO"]
        with log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                command,
                cwd=REPO_ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._ready_mark = log_path.stat().st_size

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.log_path.open("rb") as log:
                log.seek(self._ready_mark)
                if re.search(rb"\bready\.", log.read()):
                    return
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited ({self.proc.returncode}): {self.log_path}")
            time.sleep(0.1)
        raise RuntimeError(f"worker not ready after {timeout} s: {self.log_path}")

    def kill(self) -> None:
        """SIGKILL to the whole group (the main process and its pool children)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


# --- Set-up --------------------------------------------------------------------------


@dataclass
class Batch:
    """One batch of one kind: its campaigns, the operations' floor and its units."""

    kind: str
    tag: str
    campaign_ids: list[int]
    first_op_id: int  # operations of the batch have larger ids (set-up ones do not)
    units: int  # HITs to publish, or assignments to approve / bonus
    assignment_ids: list[int] = field(default_factory=list)
    hit_ids: list[int] = field(default_factory=list)
    requested_at: float = 0.0


def _campaign(tag: str) -> Any:
    from django.contrib.auth.models import User

    from campaigns.models import Campaign, CampaignState

    owner, _ = User.objects.get_or_create(username="faults")
    return Campaign.objects.create(
        owner=owner,
        name=f"Faults {tag}",
        slug=f"faults-{tag}",
        provider="mturk",
        state=CampaignState.LIVE,
        budget_cap=None,
    )


def _stage(campaign: Any, position: int, items: int, review_rules: list[dict[str, Any]]) -> Any:
    from campaigns.models import Item, ItemSource, Stage

    stage = Stage.objects.create(
        campaign=campaign,
        name=f"Write questions {position}",
        position=position,
        task_type="question_writing",
        config={"questions_per_hit": 1},
        reward=Decimal("0.50"),
        assignments_per_hit=1,
        items_per_hit=1,
        review_rules=review_rules,
    )
    Item.objects.bulk_create(
        Item(
            stage=stage,
            external_id=f"cell-{n}",
            data={"topic": f"topic {n}", "complexity_type": "comparative"},
            source=ItemSource.UPLOADED,
        )
        for n in range(items)
    )
    return stage


def _execute_inline(op: Any) -> None:
    """Set-up operations run here, not in the worker (their queued messages are purged)."""
    from campaigns.models import OperationState
    from campaigns.platforms.operations import operation_execute

    done = operation_execute(operation_id=op.pk)
    if done is None or done.state != OperationState.DONE:
        raise RuntimeError(f"set-up operation {op.pk}: {done and done.last_error}")


def _submitted_work(fake: Any, tag: str, units: int, review_rules: list[dict[str, Any]]) -> Any:
    """A published stage of ``units`` HITs, each with one assignment submitted on MTurk
    and stored by the page; returns (campaign, assignments)."""
    from campaigns.models import HIT
    from campaigns.platforms.publishing import stage_provider_publish
    from tests.campaigns.platforms.mturk_helpers import page_submit

    campaign = _campaign(tag)
    stage = _stage(campaign, 0, units, review_rules)
    op = stage_provider_publish(stage=stage)
    assert op is not None
    _execute_inline(op)
    hits = HIT.objects.filter(stage=stage).order_by("pk")
    assignments = [page_submit(fake, hit, f"AFAULT{n:06d}") for n, hit in enumerate(hits)]
    return campaign, assignments


def batch_prepare(*, kind: str, fake: Any, tag: str, units: int) -> Batch:
    """Everything a batch of ``kind`` needs, made and executed inline (nothing requested
    yet); ``batch_request`` then asks for the batch's operations."""
    from campaigns.models import ProviderOperation
    from campaigns.platforms.mturk.sync import mturk_hits_sync

    assert kind in KINDS, kind
    campaign_ids: list[int] = []
    assignment_ids: list[int] = []
    if kind == "publish":
        campaign = _campaign(tag)
        stages = max(1, units // ITEMS_PER_STAGE)
        for position in range(stages):
            _stage(campaign, position, ITEMS_PER_STAGE, [])
        campaign_ids.append(campaign.pk)
    elif kind == "sync":
        # One sync task, and one bulk approval, per campaign of SYNC_HITS HITs.
        for part, start in enumerate(range(0, units, SYNC_HITS)):
            size = min(SYNC_HITS, units - start)
            campaign, assignments = _submitted_work(
                fake, f"{tag}-{part}", size, [{"rule": "auto_approve"}]
            )
            campaign_ids.append(campaign.pk)
            assignment_ids += [a.pk for a in assignments]
    else:
        campaign, assignments = _submitted_work(fake, tag, units, [])
        # Confirm the page submissions: approving and paying bonuses need it.
        stats = mturk_hits_sync(campaign_id=campaign.pk)
        if stats.errors or stats.approvals_requested:
            raise RuntimeError(f"set-up sync: {stats}")
        campaign_ids.append(campaign.pk)
        assignment_ids += [a.pk for a in assignments]
    last = ProviderOperation.objects.order_by("-pk").values_list("pk", flat=True).first()
    return Batch(
        kind=kind,
        tag=tag,
        campaign_ids=campaign_ids,
        first_op_id=(last or 0) + 1,
        units=len(assignment_ids) or units,
        assignment_ids=assignment_ids,
    )


def batch_request(batch: Batch) -> None:
    """Ask for the batch: its operations are queued for the worker on commit (a sync
    batch queues ``campaigns.platform_sync`` of MTurk, whose approvals become the operations)."""
    from campaigns.models import HIT, Assignment, Stage
    from campaigns.platforms.publishing import stage_provider_publish
    from campaigns.platforms.review import paid_assignment_approve
    from campaigns.platforms.worker_actions import assignment_bonus_pay
    from campaigns.tasks import platform_sync_task

    batch.requested_at = time.monotonic()
    if batch.kind == "publish":
        for stage in Stage.objects.filter(campaign_id__in=batch.campaign_ids).order_by("pk"):
            stage_provider_publish(stage=stage)
        batch.hit_ids = list(
            HIT.objects.filter(stage__campaign_id__in=batch.campaign_ids).values_list(
                "pk", flat=True
            )
        )
        return
    if batch.kind == "sync":
        for cid in batch.campaign_ids:
            platform_sync_task.delay("mturk", str(cid))
        return
    for assignment in Assignment.objects.filter(pk__in=batch.assignment_ids).order_by("pk"):
        if batch.kind == "approve":
            paid_assignment_approve(assignment=assignment, source="faults")
        else:
            assignment_bonus_pay(
                assignment=assignment,
                amount=Decimal("0.25"),
                reason="Thanks for careful work",
                key=f"faults:{batch.tag}:{assignment.pk}",
            )


# --- Progress, settling --------------------------------------------------------------


def batch_operations(batch: Batch) -> Any:
    from campaigns.models import ProviderOperation

    return ProviderOperation.objects.filter(
        campaign_id__in=batch.campaign_ids, pk__gte=batch.first_op_id
    )


def batch_progress(batch: Batch) -> tuple[int, int]:
    """(units done, units in all): HITs published or assignments approved / paid."""
    from campaigns.models import HIT, Assignment, AssignmentStatus, HITStatus, LedgerStatus

    if batch.kind == "publish":
        done = HIT.objects.filter(pk__in=batch.hit_ids, status=HITStatus.PUBLISHED).count()
        return done, len(batch.hit_ids) or batch.units
    if batch.kind == "bonus":
        done = (
            batch_operations(batch)
            .filter(ledger__kind="bonus", ledger__status=LedgerStatus.PAID)
            .count()
        )
        return done, batch.units
    done = Assignment.objects.filter(
        pk__in=batch.assignment_ids, status=AssignmentStatus.APPROVED
    ).count()
    return done, batch.units


def effects_unrecorded(batch: Batch, fake: Any) -> int:
    """Effects MTurk holds that qaportal has not recorded yet (right after a crash: the
    window where doing it again would double it)."""
    with fake.lock:
        hits = len(fake.state.hits)
        approved = {a for a, n in fake.state.approvals.items() if n}
        bonuses = len(fake.state.bonuses)
    done, _ = batch_progress(batch)
    if batch.kind == "publish":
        return max(0, hits - done)  # a publish batch's set-up makes no MTurk HIT
    if batch.kind == "bonus":
        return max(0, bonuses - done)
    from campaigns.models import Assignment, AssignmentStatus

    recorded = set(
        Assignment.objects.filter(
            pk__in=batch.assignment_ids, status=AssignmentStatus.APPROVED
        ).values_list("provider_assignment_id", flat=True)
    )
    return len(approved - recorded)


def batch_open(batch: Batch) -> int:
    """Operations of the batch still pending or running (plus, for a sync batch, the
    assignments no operation approves yet)."""
    from campaigns.models import Assignment, AssignmentStatus, OperationState

    open_ops = batch_operations(batch).filter(
        state__in=[OperationState.PENDING, OperationState.RUNNING]
    )
    count = open_ops.count()
    if batch.kind == "sync":
        unasked = Assignment.objects.filter(
            pk__in=batch.assignment_ids, status=AssignmentStatus.SUBMITTED
        ).exclude(ledger__kind="reward")
        count += unasked.count()
    return count


def wait_for_share(batch: Batch, share: float, *, timeout: float = 120) -> tuple[int, int]:
    """Wait until ``share`` of the batch's units are done; (done, total) then."""
    deadline = time.monotonic() + timeout
    while True:
        done, total = batch_progress(batch)
        if done >= share * total or time.monotonic() > deadline:
            return done, total
        time.sleep(0.01)


def batch_settle(
    batch: Batch, *, interval: float = 1.0, timeout: float = 180, beat: Callable[[], None]
) -> bool:
    """Play beat every ``interval`` (``beat``: the reconcile, plus the sync for a sync
    batch) until nothing of the batch is open; False on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if batch_open(batch) == 0 and batch_progress(batch)[0] >= _expected_done(batch):
            return True
        beat()
        time.sleep(interval)
    return batch_open(batch) == 0


def _expected_done(batch: Batch) -> int:
    from campaigns.models import OperationState

    failed = batch_operations(batch).filter(state=OperationState.FAILED).exists()
    return 0 if failed else batch_progress(batch)[1]


def beat_for(batch: Batch) -> Callable[[], None]:
    """What Celery beat would do for this batch: reconcile (and sync MTurk)."""
    from campaigns.tasks import platform_sync_task, reconcile_operations_task

    def beat() -> None:
        reconcile_operations_task()
        if batch.kind == "sync":
            for cid in batch.campaign_ids:
                platform_sync_task.delay("mturk", str(cid))

    return beat


# --- Checks --------------------------------------------------------------------------


@dataclass
class Outcome:
    ops: int = 0
    done: int = 0
    failed: int = 0
    open: int = 0
    failed_without_reason: int = 0
    duplicates: int = 0
    lost: int = 0
    ledger_problems: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.open
            or self.failed_without_reason
            or self.duplicates
            or self.lost
            or self.ledger_problems
        )


def batch_check(batch: Batch, fake: Any) -> Outcome:
    """The batch's end state against the fake's own record (see the module docstring)."""
    from campaigns.models import (
        HIT,
        Assignment,
        AssignmentStatus,
        HITStatus,
        LedgerEntry,
        LedgerStatus,
        OperationState,
    )

    out = Outcome()
    states = Counter(batch_operations(batch).values_list("state", flat=True))
    out.ops = sum(states.values())
    out.done = states[OperationState.DONE]
    out.failed = states[OperationState.FAILED]
    out.open = states[OperationState.PENDING] + states[OperationState.RUNNING]
    out.failed_without_reason = (
        batch_operations(batch).filter(state=OperationState.FAILED, last_error="").count()
    )
    with fake.lock:
        fake_hits = {h["HITId"]: h for h in fake.state.hits.values()}
        approvals = Counter(fake.state.approvals)
        bonuses = list(fake.state.bonuses)
    if batch.kind == "publish":
        by_note = Counter(h.get("RequesterAnnotation", "") for h in fake_hits.values())
        out.duplicates += sum(n - 1 for n in by_note.values() if n > 1)
        hits = HIT.objects.filter(pk__in=batch.hit_ids)
        mapped = set()
        for pk, status, provider_hit_id in hits.values_list("pk", "status", "provider_hit_id"):
            if status != HITStatus.PUBLISHED or provider_hit_id not in fake_hits:
                out.lost += 1
                out.problems.append(f"HIT {pk} {status} {provider_hit_id}")
            mapped.add(provider_hit_id)
        extra = set(fake_hits) - mapped  # made on MTurk, unknown to qaportal
        out.duplicates += len(extra)
        if extra:
            out.problems.append(f"{len(extra)} MTurk HITs no qaportal HIT knows")
    else:
        assignments = Assignment.objects.filter(pk__in=batch.assignment_ids)
        for pk, aid, status in assignments.values_list("pk", "provider_assignment_id", "status"):
            if batch.kind == "bonus":
                paid = [b for b in bonuses if b["AssignmentId"] == aid]
                if len(paid) > 1:
                    out.duplicates += len(paid) - 1
                    out.problems.append(f"assignment {pk}: {len(paid)} bonuses")
                elif not paid:
                    out.lost += 1
                    out.problems.append(f"assignment {pk}: no bonus")
            else:
                if approvals[aid] > 1:
                    out.duplicates += approvals[aid] - 1
                if approvals[aid] == 0 or status != AssignmentStatus.APPROVED:
                    out.lost += 1
                    out.problems.append(f"assignment {pk} {status}: {approvals[aid]} approvals")
        tokens = Counter(b.get("UniqueRequestToken") for b in bonuses)
        out.duplicates += sum(n - 1 for n in tokens.values() if n > 1)
    # Ledger: two rows per unit (reward + fee, or bonus + fee), all paid, none doubled.
    ledger = LedgerEntry.objects.filter(campaign_id__in=batch.campaign_ids)
    expected = 0 if batch.kind == "publish" else 2 * batch.units
    rows = ledger.count()
    unpaid = ledger.exclude(status=LedgerStatus.PAID).count()
    per_unit = Counter(ledger.values_list("assignment_id", "kind"))
    doubled = sum(n - 1 for n in per_unit.values() if n > 1)
    if rows != expected or unpaid or doubled:
        out.ledger_problems = abs(rows - expected) + unpaid + doubled
        out.problems.append(f"ledger: {rows} rows (want {expected}), {unpaid} unpaid")
    return out
