"""Set up the Turkle peer's database for bench/worker_cycles.py.

Run with the Turkle venv's python, cwd = the folder holding ``turkle_site``,
DJANGO_SETTINGS_MODULE=turkle_site.settings, after ``migrate``. Creates worker
users, one project with a one-text-input template, one batch with ``--tasks``
tasks (one assignment per task), and a logged-in session per worker (the same
rows Django's login view writes; passwords are unusable, so no PBKDF2 cost).
Prints one JSON object: batch id, session cookies, answer field name.

With ``--queries``, instead measures database queries per worker request
through Django's test client (CaptureQueriesContext) on a scratch worker.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "turkle_site.settings")
django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.contrib.sessions.backends.db import SessionStore  # noqa: E402
from django.db import transaction  # noqa: E402
from turkle.models import Batch, Project, Task  # noqa: E402

TEMPLATE = """<p>Read the sentence and type one word from it.</p>
<p><b>${text}</b></p>
<input type="text" name="answer" required>
"""


def setup(n_workers: int, n_tasks: int) -> dict:
    admin = User.objects.create(username="bench_admin", is_staff=True, is_superuser=True)
    admin.set_unusable_password()
    admin.save()
    project = Project(
        name="bench project",
        html_template=TEMPLATE,
        created_by=admin,
        updated_by=admin,
        login_required=True,
        assignments_per_task=1,
    )
    project.process_template()
    project.save()
    batch = Batch.objects.create(
        project=project,
        name="bench batch",
        filename="bench.csv",
        created_by=admin,
        assignments_per_task=1,
        login_required=True,
        active=True,
        published=True,
    )
    with transaction.atomic():
        Task.objects.bulk_create(
            [
                Task(batch=batch, input_csv_fields={"text": f"sentence number {i} of the batch"})
                for i in range(n_tasks)
            ],
            batch_size=2000,
        )
    users = User.objects.bulk_create(
        [User(username=f"worker{i:04d}", password="!unusable") for i in range(n_workers)]
    )
    sessions = []
    for user in User.objects.filter(username__startswith="worker").order_by("username"):
        s = SessionStore()
        s[SESSION_KEY] = str(user.pk)
        s[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
        s[HASH_SESSION_KEY] = user.get_session_auth_hash()
        s.create()
        sessions.append({settings.SESSION_COOKIE_NAME: s.session_key})
    assert len(sessions) == len(users)
    return {"batch_id": batch.id, "tasks": n_tasks, "sessions": sessions, "field": "answer"}


def queries(batch_id: int) -> dict:
    """Queries per worker request, as the load generator does them, via the test client."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, setup_test_environment

    setup_test_environment()
    user = User.objects.create(username="queries_probe", password="!unusable")
    client = Client()
    client.force_login(user)
    out: dict[str, list[int]] = {"accept": [], "page": [], "iframe": [], "submit": []}
    for _ in range(3):
        with CaptureQueriesContext(connection) as ctx:
            r = client.get(f"/batch/{batch_id}/accept_next_task/")
        out["accept"].append(len(ctx))
        page = r["Location"]
        with CaptureQueriesContext(connection) as ctx:
            r = client.get(page)
        assert r.status_code == 200, r.status_code
        out["page"].append(len(ctx))
        task_id, assignment_id = page.strip("/").split("/")[1::2]
        with CaptureQueriesContext(connection) as ctx:
            r = client.get(f"/task/{task_id}/assignment/iframe/{assignment_id}/")
        assert r.status_code == 200, r.status_code
        out["iframe"].append(len(ctx))
        with CaptureQueriesContext(connection) as ctx:
            r = client.post(page, {"answer": "word"})
        assert r.status_code == 302, r.status_code
        out["submit"].append(len(ctx))
    # the steady state: the last cycle (sessions exist, caches warm)
    return {k: v[-1] for k, v in out.items()}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=50)
    p.add_argument("--tasks", type=int, default=3000)
    p.add_argument("--queries", type=int, metavar="BATCH_ID", default=0)
    a = p.parse_args()
    result = queries(a.queries) if a.queries else setup(a.workers, a.tasks)
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
