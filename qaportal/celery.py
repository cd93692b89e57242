"""The Celery app. Tasks live in each app's ``tasks.py``; see campaigns/tasks.py.

Configuration comes from Django settings (``CELERY_*``); run a worker with
``celery -A qaportal worker`` and the scheduler with ``celery -A qaportal beat``.
"""

from __future__ import annotations

import os

from celery import Celery, signals

from qaportal.db_timeout import statement_timeout_install
from qaportal.heartbeat import worker_seen_now
from qaportal.logs import celery_signals_connect

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")

app = Celery("qaportal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
celery_signals_connect()  # request ids travel with tasks; the worker logs JSON lines


@signals.worker_ready.connect
@signals.task_postrun.connect
def _worker_seen(**_: object) -> None:
    """Note that a worker is alive (``/healthz`` reports it): when it starts and after
    each task it runs; beat sends ``qaportal.ping`` every 30 s so an idle worker is
    seen too."""
    worker_seen_now()


@signals.worker_init.connect
def _jobs_statement_timeout(**_: object) -> None:
    """A worker's queries may run longer than a web request's (``qaportal.db_timeout``);
    installed before the pool starts, so every pool process inherits it."""
    statement_timeout_install(role="job")
