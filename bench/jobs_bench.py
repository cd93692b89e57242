"""Background jobs at size: a 200,000-row item upload and a 1,000,000-row export, each
run by a real Celery worker while the requests that start and follow them stay short.

    .venv/bin/python bench/jobs_bench.py                 # 200,000 rows in, 1,000,000 out
    .venv/bin/python bench/jobs_bench.py --quick         # 20,000 in, 20,000 out
    .venv/bin/python bench/jobs_bench.py --reuse         # measure an earlier build again

Recreates the database named in ``DATABASE_URL`` (default below; the name must hold
"bench"), builds a campaign of ``--export-rows`` submitted assignments (SQL, seconds),
starts ``celery worker --pool solo`` on a queue of its own (Redis db 9 by
default) and measures, through the same views the API serves:

- the upload: POST of a 200,000-row CSV (answered 202), the job's rows per second
  (worker start to finish) and the longest status request while it runs;
- the export: POST of a ``collection-metadata`` job (1 row per assignment), its rows
  per second, the longest status request, then the download (checked against the
  job's SHA-256 and row count);
- the worker's peak resident memory (VmHWM) after each job: memory stays bounded.

Targets (issue 21): every request under 1 s, >= 20,000 rows/s each way, memory flat.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/qaportal_jobs_bench")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/9")
os.environ["CELERY_BROKER_URL"] = os.environ["REDIS_URL"]
os.environ["CELERY_TASK_ALWAYS_EAGER"] = "0"
os.environ["DEBUG"] = "0"  # no query log growing in memory
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret")
os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1")
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
os.environ.setdefault("MEDIA_ROOT", tempfile.mkdtemp(prefix="qaportal-jobs-bench-"))

import money_workers_bench as base  # noqa: E402 - after the path and the environment


def build(assignments: int, workers: int) -> None:
    """A local campaign "bench": one question-writing stage, ``assignments`` HITs with
    one submitted assignment each over ``workers`` workers, written by SQL in seconds."""
    from django.contrib.auth.models import User
    from django.db import connection

    from campaigns.models import Campaign, Stage, Worker

    owner = User.objects.create(username="bench")
    campaign = Campaign.objects.create(owner=owner, name="Bench", slug="bench", state="live")
    stage = Stage.objects.create(campaign=campaign, name="Write", task_type="question_writing")
    Worker.objects.bulk_create(
        Worker(provider="local", external_id=f"L{n:08d}", pseudonym=f"w_{n:016x}")
        for n in range(workers)
    )
    first = Worker.objects.order_by("pk").values_list("pk", flat=True).first()
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO campaigns_hit (stage_id, provider, provider_group_id, max_assignments,"
            " places_left, reward, status, created_at) SELECT %s, 'local', '', 1, 0, 0.50,"
            " 'published', now() FROM generate_series(1, %s)",
            [stage.pk, assignments],
        )
        cursor.execute(
            "INSERT INTO campaigns_assignment (hit_id, worker_id, provider, status, answers,"
            " accepted_at, submitted_at, work_seconds, telemetry, decision_source,"
            " decision_reason, feedback, review_details)"
            " SELECT h.id, %s + (h.id %% %s), 'local', 'submitted',"
            " jsonb_build_object('question', 'Which river is longer, number ' || h.id || '?'),"
            " now() - interval '1 hour', now(), 3600, '{}', '', '', '', '{}'"
            " FROM campaigns_hit h WHERE h.stage_id = %s",
            [first, workers, stage.pk],
        )


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _load() -> str:
    return "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def _vm_hwm_mb(pid: int) -> float:
    text = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"VmHWM:\s+(\d+) kB", text)
    return int(match.group(1)) / 1024 if match else float("nan")


class Worker:
    def __init__(self, queue: str, log: Path) -> None:
        command = [sys.executable, "-m", "celery", "-A", "qaportal", "worker", "--pool", "solo"]
        command += ["--queues", queue, "--hostname", f"{queue}@%h", "--loglevel", "WARNING"]
        command += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.log = log.open("wb")
        self.proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=self.log, stderr=self.log)
        time.sleep(4)
        if self.proc.poll() is not None:
            raise SystemExit(f"the worker exited; see {log}")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


def _follow(client: Any, url: str, label: str) -> tuple[dict[str, Any], float]:
    """Poll the job until it is finished; the job and the slowest status request."""
    slowest = 0.0
    while True:
        started = time.perf_counter()
        job = client.get(url, HTTP_HOST="127.0.0.1").json()
        slowest = max(slowest, time.perf_counter() - started)
        if job["status"] in ("done", "failed"):
            return job, slowest
        print(f"  {label}: {job['status']} {job['phase']} {job['rows_done']:,} rows", flush=True)
        time.sleep(2)


def _rate(job: dict[str, Any], rows: int, cpu: float) -> tuple[float, str]:
    """Rows per second from the worker's start to its finish, and the line that says so
    with the worker process's CPU seconds over the job."""
    from campaigns.models import Job

    row = Job.objects.get(pk=job["id"])
    assert row.finished_at is not None
    assert row.started_at is not None
    seconds = (row.finished_at - row.started_at).total_seconds()
    rate = rows / seconds
    return rate, (
        f"{rows:,} rows in {seconds:.1f} s = {rate:,.0f} rows/s "
        f"(worker CPU {cpu:.1f} s = {rows / cpu:,.0f} rows per CPU second)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upload-rows", type=int, default=200_000)
    parser.add_argument("--export-rows", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=5000)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="measure an earlier build")
    args = parser.parse_args()
    if args.quick:
        args.upload_rows, args.export_rows, args.workers = 20_000, 20_000, 500
    if not args.reuse:
        base.recreate_database(os.environ["DATABASE_URL"])

    import django
    from django.core.management import call_command
    from django.db import connection

    django.setup()
    call_command("migrate", verbosity=0)
    if not args.reuse:
        started = time.perf_counter()
        build(args.export_rows, args.workers)
        print(f"built {args.export_rows:,} assignments in {time.perf_counter() - started:.1f} s")
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")

    from django.test import Client
    from rest_framework.authtoken.models import Token

    from campaigns.models import Campaign, Stage
    from qaportal.celery import app

    campaign = Campaign.objects.get(slug="bench")
    client = Client()
    token, _ = Token.objects.get_or_create(user=campaign.owner)
    client.defaults["HTTP_AUTHORIZATION"] = f"Token {token.key}"
    queue = f"qaportal-jobs-bench-{uuid.uuid4().hex[:8]}"
    app.conf.task_default_queue = queue
    worker = Worker(queue, Path(os.environ["MEDIA_ROOT"]) / "worker.log")
    # The first request imports every view (a cold start, not a request's work); then
    # what qaportal/wsgi.py does before a web process serves (qaportal.warmup).
    from qaportal.warmup import process_warm_up

    client.get("/api/v1/campaigns/", HTTP_HOST="127.0.0.1")
    process_warm_up()
    summary: list[str] = []
    slowest_request = 0.0
    try:
        # --- Upload ---------------------------------------------------------------
        stage = Stage.objects.filter(campaign=campaign).order_by("position").first()
        assert stage is not None
        Campaign.objects.filter(pk=campaign.pk).update(state="live")
        header = "id,topic,complexity_type\n"
        tag = uuid.uuid4().hex[:6]
        lines = "".join(f"bench-{tag}-{n},topic {n % 97},count\n" for n in range(args.upload_rows))
        content = (header + lines).encode()
        print(f"upload: {args.upload_rows:,} rows, {len(content) / 2**20:.1f} MB; {_load()}")
        cpu = _cpu_seconds(worker.proc.pid)
        started = time.perf_counter()
        response = client.post(
            f"/api/v1/stages/{stage.pk}/items/upload/",
            content,
            content_type="text/csv",
            HTTP_HOST="127.0.0.1",
        )
        post_seconds = time.perf_counter() - started
        assert response.status_code == 202, response.content[:500]
        job, slowest = _follow(client, response["Location"], "upload")
        assert job["status"] == "done", job["error"]
        assert job["row_count"] == args.upload_rows
        rate, line = _rate(job, job["row_count"], _cpu_seconds(worker.proc.pid) - cpu)
        slowest_request = max(slowest_request, post_seconds, slowest)
        summary.append(f"upload {rate:,.0f} rows/s (POST {post_seconds * 1000:.0f} ms)")
        print(
            f"upload: POST answered {response.status_code} in {post_seconds * 1000:.0f} ms; "
            f"{line}; slowest status request {slowest * 1000:.0f} ms; "
            f"worker peak RSS {_vm_hwm_mb(worker.proc.pid):.0f} MB; {_load()}"
        )

        # --- Export ---------------------------------------------------------------
        cpu = _cpu_seconds(worker.proc.pid)
        started = time.perf_counter()
        response = client.post(
            f"/api/v1/campaigns/{campaign.slug}/exports/collection-metadata/jobs/",
            HTTP_HOST="127.0.0.1",
        )
        post_seconds = time.perf_counter() - started
        assert response.status_code == 202, response.content[:500]
        job, slowest = _follow(client, response["Location"], "export")
        assert job["status"] == "done", job["error"]
        assert job["row_count"] == args.export_rows
        rate, line = _rate(job, job["row_count"], _cpu_seconds(worker.proc.pid) - cpu)
        slowest_request = max(slowest_request, post_seconds, slowest)
        summary.append(f"export {rate:,.0f} rows/s (POST {post_seconds * 1000:.0f} ms)")
        peak = _vm_hwm_mb(worker.proc.pid)
        print(
            f"export: POST answered {response.status_code} in {post_seconds * 1000:.0f} ms; "
            f"{line}; slowest status request {slowest * 1000:.0f} ms; "
            f"worker peak RSS {peak:.0f} MB; {_load()}"
        )
        started = time.perf_counter()
        download: Any = client.get(job["download_url"], HTTP_HOST="127.0.0.1")
        digest, size, lines_seen = hashlib.sha256(), 0, 0
        for block in download.streaming_content:
            digest.update(block)
            size += len(block)
            lines_seen += block.count(b"\n")
        seconds = time.perf_counter() - started
        assert digest.hexdigest() == download["X-Checksum-SHA256"] == job["checksum_sha256"]
        assert size == int(download["Content-Length"])
        print(
            f"download: {size / 2**20:.0f} MB, {lines_seen:,} lines (X-Row-Count "
            f"{download['X-Row-Count']}), SHA-256 checked, in {seconds:.1f} s "
            "(a file transfer, sent with sendfile by gunicorn)"
        )
        assert lines_seen == args.export_rows + 1  # the header and every row
        print(
            f"SUMMARY {args.upload_rows:,} rows in, {args.export_rows:,} out: "
            f"{'; '.join(summary)}; slowest request {slowest_request * 1000:.0f} ms "
            f"(targets: >= 20,000 rows/s each way, every request < 1,000 ms); "
            f"worker peak RSS {peak:.0f} MB; {_load()}"
        )
    finally:
        worker.stop()


if __name__ == "__main__":
    main()
