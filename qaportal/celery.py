"""The Celery app. Tasks live in each app's ``tasks.py``; see campaigns/tasks.py.

Configuration comes from Django settings (``CELERY_*``); run a worker with
``celery -A qaportal worker`` and the scheduler with ``celery -A qaportal beat``.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")

app = Celery("qaportal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
