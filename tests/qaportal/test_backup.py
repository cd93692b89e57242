"""``manage.py backup`` and ``manage.py restore``, as docs/deployment.md tells an
operator to use them: a backup of the real PostgreSQL database and of the stored job
files, restored into a fresh database and an empty storage by another process, which
then serves the campaign and its export, byte for byte."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import psycopg2
import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from campaigns import jobs as job_service
from campaigns.models import JobStatus
from tests.factories import AssignmentFactory, CampaignFactory, HITFactory, StageFactory
from tests.infra.conftest import REPO_ROOT, clean_env, run_in_repo

pytestmark = [pytest.mark.slow(seconds=15), pytest.mark.django_db(transaction=True)]

_SERVES = """
import hashlib, json, sys
import django
django.setup()
from django.contrib.auth.models import User
from django.test import Client
client = Client()
client.force_login(User.objects.get(username=sys.argv[1]))
campaign = client.get(f"/api/v1/campaigns/{sys.argv[2]}/")
download = client.get(f"/api/v1/jobs/{sys.argv[3]}/download/")
body = b"".join(download.streaming_content) if download.status_code == 200 else b""
print(json.dumps({"campaign": campaign.status_code, "name": campaign.json().get("name"),
                  "download": download.status_code, "sha": hashlib.sha256(body).hexdigest()}))
"""


def _admin(sql: str) -> None:
    db = connection.settings_dict
    admin = psycopg2.connect(
        host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, user=db["USER"], dbname="postgres"
    )
    admin.autocommit = True
    try:
        with admin.cursor() as cursor:
            cursor.execute(sql)
    finally:
        admin.close()


def test_a_backup_restored_into_a_fresh_database_serves_the_campaign(tmp_path: Path, settings):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    campaign = CampaignFactory.create(slug=f"backup-{uuid.uuid4().hex[:6]}", name="Backed up")
    hit = HITFactory.create(stage=StageFactory.create(campaign=campaign))
    now = timezone.now()
    AssignmentFactory.create_batch(
        3,
        hit=hit,
        status="submitted",
        answers={"q": "Why?"},
        accepted_at=now - timedelta(minutes=2),
        submitted_at=now,
    )
    job = job_service.job_export_start(
        campaign=campaign, export_format="mturk-csv", actor=campaign.owner, download_name="b.csv"
    )
    job.refresh_from_db()
    assert job.status == JobStatus.DONE

    call_command("backup", str(tmp_path / "backup"))
    manifest = json.loads((tmp_path / "backup" / "manifest.json").read_text())
    assert list(manifest["objects"]) == [job.file_name]
    with pytest.raises(CommandError, match="not empty"):
        call_command("backup", str(tmp_path / "backup"))

    fresh = f"qaportal_restore_{uuid.uuid4().hex[:8]}"
    _admin(f'CREATE DATABASE "{fresh}"')
    try:
        db = connection.settings_dict
        address = f"{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
        env = clean_env(
            DJANGO_SETTINGS_MODULE="qaportal.settings",
            DEBUG="0",
            SECRET_KEY=django_settings.SECRET_KEY,
            ALLOWED_HOSTS="testserver",
            SECURE_SSL_REDIRECT="0",
            QAPORTAL_VAR_DIR=str(tmp_path / "var"),
            MEDIA_ROOT=str(tmp_path / "restored-media"),
            DATABASE_URL=f"postgres://{db['USER']}@{address}/{fresh}",
            LOG_LEVEL="WARNING",
        )

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return run_in_repo(*args, env=env, timeout=120)

        restored = run("manage.py", "restore", str(tmp_path / "backup"))
        assert restored.returncode == 0, restored.stderr
        again = run("manage.py", "restore", str(tmp_path / "backup"))
        assert again.returncode != 0
        assert "restore into a fresh one" in again.stderr
        served = run("-c", _SERVES, campaign.owner.username, campaign.slug, str(job.pk))
        assert served.returncode == 0, served.stderr
    finally:
        _admin(f'DROP DATABASE IF EXISTS "{fresh}" WITH (FORCE)')
    answer = json.loads(served.stdout.strip().splitlines()[-1])
    assert answer == {"campaign": 200, "name": "Backed up", "download": 200, "sha": job.checksum}
    stored = (tmp_path / "restored-media" / job.file_name).read_bytes()
    assert hashlib.sha256(stored).hexdigest() == job.checksum


def test_a_damaged_backup_is_refused(tmp_path: Path, settings) -> None:
    settings.MEDIA_ROOT = str(tmp_path / "media")
    call_command("backup", str(tmp_path / "backup"))
    with (tmp_path / "backup" / "database.dump").open("ab") as dump:
        dump.write(b"x")

    with pytest.raises(CommandError, match="does not match its checksum"):
        call_command("restore", str(tmp_path / "backup"))


_SQLITE_WRITE = """
import django
django.setup()
from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
User.objects.create_user("kept", password="x")
print(default_storage.save("jobs/j/1/export.csv", ContentFile(b"a,b\\n1,2\\n")))
"""

_SQLITE_READ = """
import django
django.setup()
from django.contrib.auth.models import User
from django.core.files.storage import default_storage
kept = User.objects.filter(username="kept").exists()
print(kept, default_storage.open("jobs/j/1/export.csv").read())
"""


@pytest.mark.slow(seconds=40)
def test_the_embedded_default_backs_up_and_restores_too(tmp_path: Path) -> None:
    def run(where: str, *args: str) -> str:
        env = clean_env(
            DJANGO_SETTINGS_MODULE="qaportal.settings",
            DEBUG="1",
            QAPORTAL_VAR_DIR=str(tmp_path / where),
            MEDIA_ROOT=str(tmp_path / where / "media"),
        )
        result = subprocess.run(
            [sys.executable, *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    run("first", "manage.py", "migrate", "-v", "0")
    run("first", "-c", _SQLITE_WRITE)
    run("first", "manage.py", "backup", str(tmp_path / "backup"))
    run("second", "manage.py", "restore", str(tmp_path / "backup"))

    assert run("second", "-c", _SQLITE_READ).strip() == "True b'a,b\\n1,2\\n'"
