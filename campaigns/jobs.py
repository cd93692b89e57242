"""Background jobs: exports written to Django's storage and large item uploads, run
by a Celery worker with their progress on record.

A job is a row (``campaigns.models.Job``) committed before any work starts; the
request that asks for it answers at once. Dispatch goes to Celery after commit; a
broker that is down only delays it: ``jobs_reconcile`` (beat) dispatches queued jobs
again and restarts running jobs whose worker stopped sending heartbeats (a killed
worker), up to ``JOB_MAX_ATTEMPTS`` times.

Exactly once: a worker claims a job by raising its ``attempt`` under the row lock and
writes its outcome only while the attempt is still its own. An upload's items and its
"done" are committed in one transaction that checks the attempt, so a restarted
upload can never store its rows twice; an export's file is named by its attempt and
only the attempt that finishes is kept.

The object store may be down for a while: a job waits for it (``_stored``: retries
with back-off for ``JOB_STORAGE_RETRY_SECONDS``, its heartbeat kept), then goes back
to the queue for the reconcile to send again; it fails only after ``JOB_MAX_ATTEMPTS``.
Requests that need the store answer 503 at once (``StorageUnavailable``) instead of
hanging: the S3 client's timeouts and retries are bounded in settings.

Live progress goes to the cache (Redis in production), not the database: an upload
runs inside one transaction, so its progress must be visible from outside it.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import shutil
import tempfile
import time
import uuid
import zipfile
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.cache import cache
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.http import FileResponse, Http404
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.reverse import reverse

from campaigns.design.access import campaign_can_manage
from campaigns.design.items import items_upload
from campaigns.design.selectors import campaign_list_visible
from campaigns.exports import ExportFormat, export_format_get
from campaigns.exports.common import Tally
from campaigns.exports.services import export_reveal_check
from campaigns.models import Assignment, Campaign, Job, JobKind, JobStatus, Stage
from qaportal.dbrouter import replica_reads
from qaportal.errors import DomainError, StorageUnavailable, UploadRejected, storage_unavailable
from qaportal.outbox import task_send

logger = logging.getLogger(__name__)

# How often a running job refreshes its progress and heartbeat (seconds).
TICK_SECONDS = 0.5
COPY_BLOCK = 1024 * 1024


class JobSupersededError(Exception):
    """This worker's attempt is no longer the job's: another worker took it over."""


class _StoreDownError(Exception):
    """The object store stayed unavailable for ``JOB_STORAGE_RETRY_SECONDS``."""


def _stored(call: Callable[[], Any], *, job: Job, ticker: _Ticker | None) -> Any:
    """``call()`` (a storage operation), tried again with back-off while the object store
    is unavailable, the job's heartbeat kept; ``_StoreDownError`` past the limit."""
    deadline = time.monotonic() + settings.JOB_STORAGE_RETRY_SECONDS
    pause = 0.5
    while True:
        try:
            return call()
        except Exception as exc:
            if not storage_unavailable(exc):
                raise
            if time.monotonic() + pause > deadline:
                raise _StoreDownError(type(exc).__name__) from exc
            logger.warning("job %s: storage unavailable (%s); retrying", job.id, type(exc).__name__)
        if ticker is not None:
            ticker.report("waiting for storage", 0, force=True)
        time.sleep(pause)
        pause = min(pause * 2, 8.0)


def _request_stored(call: Callable[[], Any]) -> Any:
    """``call()`` within a request: ``StorageUnavailable`` (503) when the store is down."""
    try:
        return call()
    except Exception as exc:
        if storage_unavailable(exc):
            logger.warning("storage unavailable (%s)", type(exc).__name__)
            raise StorageUnavailable("The file store is unavailable; try again shortly.") from exc
        raise


def _dispatch(job_id: uuid.UUID) -> None:
    """Send the job to Celery; a broker that refuses leaves it queued for the reconcile."""
    try:
        task_send("campaigns.job_run", str(job_id))
    except Exception as exc:  # the broker is down: beat dispatches it again
        logger.warning("job %s not dispatched (%s); the reconcile will", job_id, type(exc).__name__)


def _dispatch_on_commit(job_id: uuid.UUID) -> None:
    transaction.on_commit(lambda: _dispatch(job_id))


def export_rows_estimate(
    *, campaign: Campaign, fmt: ExportFormat, at_most: int | None = None
) -> int:
    """About how many rows ``fmt``'s export of ``campaign`` has: the format's own
    ``estimate`` if it has one, else the campaign's assignments (the progress bar's
    scale, and what decides whether an export may still be streamed). ``at_most``
    stops counting past it (a cheap answer to "more than N?")."""
    estimate = getattr(fmt, "estimate", None)
    if estimate is not None:
        return int(estimate(campaign=campaign))
    assignments = Assignment.objects.filter(hit__stage__campaign=campaign)
    if at_most is not None:
        return assignments.order_by()[: at_most + 1].count()
    return assignments.count()


def job_export_start(
    *,
    campaign: Campaign,
    export_format: str,
    actor: AbstractBaseUser | AnonymousUser | None,
    download_name: str,
    reveal: bool = False,
    via: str = "api",
    **options: Any,
) -> Job:
    """Record an export job of ``campaign`` in ``export_format`` and dispatch it after
    commit. Real worker ids (``reveal``) are checked and audited now, by who asked."""
    fmt = export_format_get(export_format)
    if reveal:
        export_reveal_check(campaign=campaign, actor=actor, export_format=export_format, via=via)
    folder = getattr(fmt, "folder", None) is not None
    with transaction.atomic():
        job = Job.objects.create(
            kind=JobKind.EXPORT,
            campaign=campaign,
            created_by_id=actor.pk if isinstance(actor, AbstractBaseUser) else None,
            export_format=fmt.name,
            options={**options, "reveal": reveal},
            download_name=f"{download_name}.zip" if folder else download_name,
            content_type="application/zip" if folder else fmt.content_type,
        )
        _dispatch_on_commit(job.id)
    return job


def job_upload_start(
    *,
    stage: Stage,
    content: bytes,
    filename: str,
    actor: AbstractBaseUser | AnonymousUser | None,
) -> Job:
    """Keep an item file in storage and record a job that uploads it (all or nothing,
    as ``items_upload``), dispatched after commit."""
    job_id = uuid.uuid4()
    name = _request_stored(
        lambda: default_storage.save(f"jobs/{job_id}/input", ContentFile(content))
    )
    with transaction.atomic():
        job = Job.objects.create(
            id=job_id,
            kind=JobKind.UPLOAD,
            campaign_id=stage.campaign_id,
            stage=stage,
            created_by_id=actor.pk if isinstance(actor, AbstractBaseUser) else None,
            input_name=name,
            input_filename=filename[:200],
            rows_total=content.count(b"\n") or 1,
            byte_count=len(content),
            checksum=hashlib.sha256(content).hexdigest(),
        )
        _dispatch_on_commit(job.id)
    return job


# --- Live progress --------------------------------------------------------------------


def _live_key(job_id: uuid.UUID | str) -> str:
    return f"qaportal:job:{job_id}:live"


def job_live(job: Job) -> dict[str, Any]:
    """What the job's worker last reported (``phase``, ``rows``, ``attempt``), or {}."""
    if job.finished:
        return {}
    live: dict[str, Any] | None = cache.get(_live_key(job.id))
    return live or {}


class _Ticker:
    """Reports progress at most every ``TICK_SECONDS``; each report is a heartbeat."""

    def __init__(self, job: Job) -> None:
        self.job_id, self.attempt = job.id, job.attempt
        self.last = 0.0
        self.report("starting", 0, force=True)

    def report(self, phase: str, rows: int, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < TICK_SECONDS:
            return
        self.last = now
        cache.set(
            _live_key(self.job_id),
            {"phase": phase, "rows": rows, "attempt": self.attempt},
            timeout=settings.JOB_STALE_SECONDS,
        )


# --- Running ----------------------------------------------------------------------------


def _claim(job_id: uuid.UUID | str) -> Job | None:
    """Take the job for this worker (``attempt`` + 1), or None when it is finished or
    another worker is on it (its heartbeat is fresh)."""
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.finished:
            return None
        if job.status == JobStatus.RUNNING and cache.get(_live_key(job.id)) is not None:
            return None
        if job.attempt >= settings.JOB_MAX_ATTEMPTS:
            _fail(job, f"The job stopped {job.attempt} times without finishing; start it again.")
            return None
        job.attempt += 1
        job.status = JobStatus.RUNNING
        job.started_at = job.heartbeat_at = timezone.now()
        job.save(update_fields=["attempt", "status", "started_at", "heartbeat_at"])
    return job


def _fail(job: Job, message: str, errors: list[Any] | None = None) -> None:
    # Only a job not finished, on this attempt: a committed "done" is never turned to failed.
    unfinished = (JobStatus.QUEUED, JobStatus.RUNNING)
    Job.objects.filter(pk=job.pk, attempt=job.attempt, status__in=unfinished).update(
        status=JobStatus.FAILED, error=message, errors=errors or [], finished_at=timezone.now()
    )


def _requeue(job: Job) -> None:
    """Back to the queue: the reconcile sends it again (a new attempt) once the store is up."""
    Job.objects.filter(pk=job.pk, attempt=job.attempt, status=JobStatus.RUNNING).update(
        status=JobStatus.QUEUED
    )


def job_run(*, job_id: uuid.UUID | str) -> str:
    """Run the job if it is this worker's to run; its status afterwards.

    Idempotent: a finished job, or one another worker is running, is left alone.
    """
    job = _claim(job_id)
    if job is None:
        current = Job.objects.filter(pk=job_id).values_list("status", flat=True).first()
        return str(current or "missing")
    try:
        if job.kind == JobKind.EXPORT:
            _run_export(job)
        else:
            _run_upload(job)
    except JobSupersededError:
        logger.info("job %s attempt %s superseded", job.id, job.attempt)
    except _StoreDownError as exc:
        logger.warning("job %s: storage still unavailable (%s); back to the queue", job.id, exc)
        _requeue(job)
    except UploadRejected as exc:
        _fail(job, str(exc), exc.errors if isinstance(exc.errors, list) else [])
    except DomainError as exc:
        _fail(job, str(exc))
    except Exception as exc:
        logger.exception("job %s failed", job.id)
        _fail(job, f"The job failed unexpectedly ({type(exc).__name__}); start it again.")
    cache.delete(_live_key(job.id))
    status = str(Job.objects.filter(pk=job.pk).values_list("status", flat=True).first())
    logger.info("job %s (%s, attempt %s): %s", job.id, job.kind, job.attempt, status)
    return status


def _temp_prefix(job: Job) -> str:
    return f"qaportal-job-{job.id}-"


def _temp_dir() -> str:
    return str(settings.FILE_UPLOAD_TEMP_DIR or tempfile.gettempdir())


def _temp_sweep(job: Job) -> int:
    """Remove what earlier attempts of ``job`` left in the temporary folder (a worker
    killed mid-export leaves its part-written file: 150 MB for a million rows); how
    many. Called when an attempt starts, before it makes its own."""
    removed = 0
    for path in Path(_temp_dir()).glob(f"{_temp_prefix(job)}*"):
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed += 1
    return removed


class _ExportTempFile(UploadedFile):
    """Django's ``TemporaryUploadedFile``, named after its job and attempt so that the
    next attempt can remove it when a killed worker left it behind. The local storage
    moves it into place (``temporary_file_path``) instead of copying it."""

    def __init__(self, job: Job) -> None:
        file = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed by UploadedFile
            prefix=f"{_temp_prefix(job)}{job.attempt}-", suffix=".part", dir=_temp_dir()
        )
        super().__init__(file, job.download_name, job.content_type, 0, None)
        self._path = file.name

    def temporary_file_path(self) -> str:
        return str(self._path)

    def close(self) -> None:
        with contextlib.suppress(FileNotFoundError):  # moved into place by the storage
            if self.file is not None:
                self.file.close()


def _write_folder(fmt: ExportFormat, job: Job, ticker: _Ticker, out: IO[bytes]) -> int:
    """A folder format (``fmt.folder(directory=…)``) written to a temporary directory,
    then zipped into ``out``; rows as the format counts them."""
    tally = Tally()
    options = dict(job.options)
    reveal = bool(options.pop("reveal", False))
    with tempfile.TemporaryDirectory(
        prefix=f"{_temp_prefix(job)}{job.attempt}-dir-", dir=_temp_dir()
    ) as tmp:
        folder: Callable[..., Any] = fmt.folder  # type: ignore[attr-defined]
        folder(
            campaign=job.campaign,
            directory=Path(tmp),
            reveal=reveal,
            tally=tally,
            progress=lambda rows: ticker.report("writing", rows),
            **options,
        )
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(Path(tmp).rglob("*")):
                if path.is_file():
                    archive.write(path, path.relative_to(tmp).as_posix())
    return tally.rows


def _run_export(job: Job) -> None:
    fmt = export_format_get(job.export_format)
    ticker = _Ticker(job)
    if job.rows_total is None:  # counted here, not in the request that asked for the job
        with replica_reads(ignore_earlier_writes=True):
            job.rows_total = export_rows_estimate(campaign=job.campaign, fmt=fmt)
        Job.objects.filter(pk=job.pk).update(rows_total=job.rows_total)
    options = dict(job.options)
    reveal = bool(options.pop("reveal", False))
    _temp_sweep(job)
    # A named temporary file: the local storage moves it into place instead of copying
    # it (a million-row file is some 150 MB); S3 reads it like any file.
    with _ExportTempFile(job) as stored:
        raw = stored.file
        assert raw is not None  # opened by the constructor
        # The export reads the replica when there is one fresh enough (qaportal/dbrouter.py):
        # the job's own writes so far touched only its Job row, which no export reads.
        with replica_reads(ignore_earlier_writes=True):
            if getattr(fmt, "folder", None) is not None:
                rows = _write_folder(fmt, job, ticker, raw)
            else:
                tally = Tally()
                for chunk in fmt.stream(
                    campaign=job.campaign, reveal=reveal, tally=tally, **options
                ):
                    # A binary format (the hf zip) yields bytes, the others text.
                    raw.write(chunk if fmt.binary else chunk.encode("utf-8"))
                    ticker.report("writing", tally.rows)
                rows = tally.rows
        # The digest of exactly the bytes stored (for a zip, of the zip file).
        raw.seek(0)
        sha, size = hashlib.sha256(), 0
        while block := raw.read(COPY_BLOCK):
            sha.update(block)
            size += len(block)
        raw.seek(0)
        stored.size = size
        ticker.report("saving", rows, force=True)
        target = f"jobs/{job.id}/{job.attempt}/{job.download_name}"

        def save() -> str:
            raw.seek(0)  # a failed try may have read part of it
            saved: str = default_storage.save(target, stored)
            return saved

        name = _stored(save, job=job, ticker=ticker)
    with transaction.atomic():
        updated = Job.objects.filter(
            pk=job.pk, attempt=job.attempt, status=JobStatus.RUNNING
        ).update(
            status=JobStatus.DONE,
            file_name=name,
            row_count=rows,
            rows_done=rows,
            byte_count=size,
            checksum=sha.hexdigest(),
            finished_at=timezone.now(),
        )
    if not updated:
        _delete_quietly(job, name)
        raise JobSupersededError


def _delete_quietly(job: Job, name: str) -> None:
    """Delete a file whose job's outcome is already committed; a store that is down
    leaves it for ``job_files_purge`` (the outcome stands)."""
    try:
        default_storage.delete(name)
    except Exception as exc:
        logger.warning("job %s: %s not deleted (%s)", job.id, name, type(exc).__name__)


def _run_upload(job: Job) -> None:
    ticker = _Ticker(job)
    assert job.stage is not None

    def read() -> bytes:
        with default_storage.open(job.input_name, "rb") as handle:
            data: bytes = handle.read()
            return data

    content = _stored(read, job=job, ticker=ticker)
    with transaction.atomic():
        result = items_upload(
            stage=job.stage,
            content=content,
            filename=job.input_filename or "upload",
            progress=ticker.report,
        )
        # The items and "done" commit together, and only for the attempt that holds
        # the job: a restarted upload cannot store its rows twice.
        locked = Job.objects.select_for_update().get(pk=job.pk)
        if locked.attempt != job.attempt or locked.status != JobStatus.RUNNING:
            transaction.set_rollback(True)
            raise JobSupersededError
        locked.status = JobStatus.DONE
        locked.row_count = locked.rows_done = result.created
        locked.result = {"created": result.created, "batch": str(result.batch)}
        locked.finished_at = timezone.now()
        locked.save(update_fields=["status", "row_count", "rows_done", "result", "finished_at"])
    _delete_quietly(job, job.input_name)


# --- Beat ---------------------------------------------------------------------------------


def jobs_reconcile() -> int:
    """Dispatch again what the broker may have lost: queued jobs older than
    ``JOB_REDISPATCH_SECONDS``, and running jobs whose worker stopped reporting for
    ``JOB_STALE_SECONDS`` (restarted from the start by the next worker). Jobs sent."""
    now = timezone.now()
    sent = 0
    queued = Job.objects.filter(
        status=JobStatus.QUEUED,
        created_at__lt=now - timedelta(seconds=settings.JOB_REDISPATCH_SECONDS),
    ).values_list("pk", flat=True)
    running = Job.objects.filter(
        status=JobStatus.RUNNING,
        started_at__lt=now - timedelta(seconds=settings.JOB_STALE_SECONDS),
    ).values_list("pk", flat=True)
    for job_id in list(queued[:500]):
        _dispatch(job_id)
        sent += 1
    for job_id in list(running[:500]):
        if cache.get(_live_key(job_id)) is None:
            _dispatch(job_id)
            sent += 1
    return sent


def job_files_purge(*, now: Any = None) -> int:
    """Delete from storage the files of exports that finished, and the inputs of
    uploads that were rejected, more than ``JOB_FILES_RETENTION_DAYS`` ago (beat, daily;
    0 keeps them). The job rows stay, with their row count and checksum; a purged
    export's download answers that the file is gone. Files deleted."""
    days = settings.JOB_FILES_RETENTION_DAYS
    if days <= 0:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=days)
    old = Job.objects.filter(finished_at__lt=cutoff)
    deleted = 0
    for field, jobs in (
        ("file_name", old.filter(kind=JobKind.EXPORT).exclude(file_name="")),
        ("input_name", old.filter(kind=JobKind.UPLOAD).exclude(input_name="")),
    ):
        for pk, name in list(jobs.values_list("pk", field)[:1000]):
            try:
                default_storage.delete(name)
            except Exception as exc:  # the store is down: the next run tries again
                logger.warning("job %s: %s not deleted (%s)", pk, field, type(exc).__name__)
                continue
            Job.objects.filter(pk=pk).update(**{field: ""})
            deleted += 1
    return deleted


def job_file_open(job: Job) -> IO[bytes]:
    """The finished export's file, from storage (``StorageUnavailable`` when it is down)."""
    handle: IO[bytes] = _request_stored(lambda: default_storage.open(job.file_name, "rb"))
    return handle


def job_as_dict(job: Job, request: Request | Any) -> dict[str, Any]:
    """The job as the API and the job page show it, with live progress when running."""
    live = job_live(job)
    rows_done = int(live.get("rows", job.rows_done))
    phase = str(live.get("phase", "")) or (
        "waiting for a worker" if job.status == JobStatus.QUEUED else ""
    )
    total = job.rows_total or 0
    if job.status == JobStatus.DONE:
        progress = 1.0
    elif total:
        # An upload checks every row, then stores every row: two halves.
        if phase == "storing":
            progress = 0.5 + rows_done / total / 2
        elif phase == "checking":
            progress = rows_done / total / 2
        else:
            progress = rows_done / total
        progress = min(progress, 0.99)
    else:
        progress = 0.0
    done = job.status == JobStatus.DONE and bool(job.file_name)
    return {
        "id": job.id,
        "kind": job.kind,
        "status": job.status,
        "phase": phase,
        "export_format": job.export_format,
        "rows_done": rows_done,
        "rows_total": job.rows_total,
        "progress": round(progress, 4),
        "row_count": job.row_count,
        "byte_count": job.byte_count,
        "checksum_sha256": job.checksum,
        "result": job.result,
        "error": job.error,
        "errors": job.errors,
        "attempt": job.attempt,
        "created_at": job.created_at,
        "finished_at": job.finished_at,
        "url": reverse("api-job", kwargs={"job_id": job.id}, request=request),
        "download_url": reverse("api-job-download", kwargs={"job_id": job.id}, request=request)
        if done
        else None,
    }


def job_or_404(*, user: Any, job_id: Any) -> Job:
    """The job if ``user`` started it and may still see its campaign (or is staff); 404
    otherwise. Checked at every look and download, not when the job started: a
    collaborator removed from the campaign no longer gets her earlier exports, and a
    file that reveals worker ids needs the user still to manage the campaign."""
    jobs = Job.objects.select_related("campaign")
    if not getattr(user, "is_staff", False):
        jobs = jobs.filter(created_by_id=user.pk, campaign__in=campaign_list_visible(user=user))
    job = jobs.filter(pk=job_id).first()
    if job is None:
        raise Http404("No job with this id.")
    if (job.options or {}).get("reveal") and not campaign_can_manage(
        campaign=job.campaign, user=user
    ):
        raise Http404("No job with this id.")
    return job


def job_download_response(job: Job) -> FileResponse:
    """The finished file, with its row count and checksum in the headers."""
    if job.status != JobStatus.DONE:
        raise Http404("This job has no file (yet).")
    if not job.file_name:
        raise Http404(
            f"The file was deleted {settings.JOB_FILES_RETENTION_DAYS:g} days after the export "
            "finished; start the export again."
        )
    response = FileResponse(
        job_file_open(job),
        as_attachment=True,
        filename=job.download_name,
        content_type=job.content_type or "application/octet-stream",
    )
    response["Content-Length"] = str(job.byte_count)
    # no-transform: a proxy must not compress it (Caddy's ``encode`` would drop the
    # Content-Length, and a download cut by a node's death would then end like a whole
    # one); with the length, every client sees a cut download as incomplete.
    response["Cache-Control"] = "private, no-store, no-transform"
    response["X-Row-Count"] = str(job.row_count)
    response["X-Checksum-SHA256"] = job.checksum
    digest = base64.b64encode(bytes.fromhex(job.checksum)).decode()
    response["Repr-Digest"] = f"sha-256=:{digest}:"
    response["Access-Control-Expose-Headers"] = "X-Row-Count, X-Checksum-SHA256, Repr-Digest"
    return response
