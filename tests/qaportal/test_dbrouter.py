"""Reads off the primary (qaportal/dbrouter.py), against two real PostgreSQL databases:
the test primary and a second database (the ``replica`` alias of tests/settings.py)
holding a copy of it that differs visibly: an extra pending item in the linking stage,
and the approved assignment rejected.
Dashboard reads come from the copy; writes, reads after a write and reads when the copy
lags too far behind come from the primary. With nothing set, the embedded SQLite
default has no second alias and no replica reads."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connections, transaction
from django.http import HttpRequest, JsonResponse
from django.test import Client
from django.urls import path, reverse

from campaigns import jobs
from campaigns.insights.money import campaign_costs
from campaigns.insights.progress import campaign_progress
from campaigns.models import Assignment, AssignmentStatus, Campaign, Item, ItemSource, Stage
from campaigns.work.decisions import assignment_approve
from qaportal import dbrouter
from qaportal.dbrouter import (
    REPLICA,
    PrimaryReplicaRouter,
    replica_lag_forget,
    replica_lag_measure,
    replica_reads,
    writes_forget,
)
from tests.helpers import local_pipeline, submitted_assignment
from tests.infra.conftest import REPO_ROOT, clean_env

pytestmark = pytest.mark.django_db(databases=["default", REPLICA])


@pytest.fixture(autouse=True)
def _fresh_measure():
    replica_lag_forget()
    yield
    replica_lag_forget()


@pytest.fixture
def copied(requester, settings, tmp_path: Path) -> tuple[Campaign, Stage]:
    """A campaign with one approved assignment on the primary, copied to the replica;
    on the copy, one more pending item in the linking stage and that assignment
    rejected."""
    campaign, writing, linking = local_pipeline(requester, slug="replicated")
    done = submitted_assignment(writing)
    assignment_approve(assignment=done, decided_by=requester, source="requester")
    dump = tmp_path / "copy.json"
    call_command(
        "dumpdata",
        exclude=["contenttypes", "auth.permission", "sessions", "admin"],
        output=str(dump),
        verbosity=0,
    )
    call_command("loaddata", str(dump), database=REPLICA, verbosity=0)
    Item.objects.using(REPLICA).create(
        stage_id=linking.pk, external_id="only-on-replica", data={}, source=ItemSource.UPLOADED
    )
    Assignment.objects.using(REPLICA).filter(pk=done.pk).update(status=AssignmentStatus.REJECTED)
    settings.DATABASE_REPLICA_READS = True
    writes_forget()  # what follows is a new request: nothing written in it yet
    return campaign, linking


def _linking_items(campaign: Campaign) -> dict[str, int]:
    return campaign_progress(campaign=campaign).stages[1].items


def test_dashboard_reads_come_from_the_replica(copied, requester):
    campaign, _linking = copied

    assert _linking_items(campaign) == {"pending": 1}  # the copy's extra item
    with replica_reads():
        assert Item.objects.filter(external_id="only-on-replica").exists()
    # Outside a scope, the primary, which never had it.
    assert not Item.objects.filter(external_id="only-on-replica").exists()
    # The costs page's selector reads the same copy: no approved work there.
    assert campaign_costs(campaign=campaign).stages[0].approved == 0

    client = Client()
    client.force_login(requester)
    api = client.get(f"/api/v1/campaigns/{campaign.slug}/progress/").json()
    page = client.get(reverse("frontend:campaign-progress", kwargs={"slug": campaign.slug}))

    assert api["stages"][1]["items"] == {"pending": 1}
    assert page.status_code == 200
    assert _approved_on_costs_page(client, campaign) == "0"


def _approved_on_costs_page(client: Client, campaign: Campaign) -> str:
    html = client.get(reverse("frontend:campaign-costs", kwargs={"slug": campaign.slug}))
    writing = campaign.stages.get(position=0)
    row = html.content.decode().split(f'id="stage-costs-{writing.pk}"')[1].split("</tr>")[0]
    cells = re.findall(r'<td class="num">([^<]*)</td>', row)
    return cells[-2]  # approved, then per accepted


def test_without_replica_reads_the_dashboard_reads_the_primary(copied, settings, requester):
    campaign, _linking = copied
    settings.DATABASE_REPLICA_READS = False

    assert _linking_items(campaign) == {}
    assert campaign_costs(campaign=campaign).stages[0].approved == 1
    client = Client()
    client.force_login(requester)
    assert _approved_on_costs_page(client, campaign) == "1"


def test_writes_go_to_the_primary_even_in_a_scope(copied):
    _campaign, linking = copied

    with replica_reads():
        Item.objects.create(
            stage=linking, external_id="written", data={}, source=ItemSource.UPLOADED
        )

    assert Item.objects.using("default").filter(external_id="written").exists()
    assert not Item.objects.using(REPLICA).filter(external_id="written").exists()
    router = PrimaryReplicaRouter()
    assert router.db_for_write(Item) == "default"
    assert router.allow_migrate("default", "campaigns") is True
    assert router.allow_migrate(REPLICA, "campaigns") is False


def _linking_items_view(request: HttpRequest, slug: str) -> JsonResponse:
    """A request that writes first when asked (``?write=1``), then reads the dashboard."""
    campaign = Campaign.objects.get(slug=slug)
    if request.GET.get("write"):
        Item.objects.create(
            stage=campaign.stages.get(position=1),
            external_id="mine",
            data={},
            source=ItemSource.UPLOADED,
        )
    progress = campaign_progress(campaign=campaign)
    return JsonResponse({"items": progress.stages[1].items, "work": progress.stages[0].assignments})


urlpatterns = [path("linking-items/<slug:slug>/", _linking_items_view)]


@pytest.mark.urls(__name__)
def test_a_write_then_a_read_in_one_request_reads_the_primary(copied):
    campaign, _linking = copied
    url = f"/linking-items/{campaign.slug}/"

    wrote = Client().get(url, {"write": "1"}).json()
    # The primary: its approved work and the one item just written (not the copy's).
    assert wrote == {"items": {"pending": 1}, "work": {"approved": 1}}
    assert Item.objects.using("default").filter(external_id="mine").exists()

    # The next request starts unmarked: the copy again (its item; no "mine" there).
    assert Client().get(url).json() == {"items": {"pending": 1}, "work": {"rejected": 1}}
    # Outside a request too (a task, a command): after a write, a scope reads the primary.
    with replica_reads():
        assert not Item.objects.filter(external_id="mine").exists()
    campaign.save(update_fields=["name"])
    with replica_reads():
        assert Item.objects.filter(external_id="mine").exists()


def _exported_statuses(campaign: Campaign, requester) -> list[str]:
    job = jobs.job_export_start(
        campaign=campaign,
        export_format="collection-metadata",
        actor=requester,
        download_name="metadata.csv",
    )
    writes_forget()  # a worker process runs the job, not this request
    assert jobs.job_run(job_id=job.id) == "done"
    job.refresh_from_db()
    with jobs.job_file_open(job) as stored:
        rows = list(csv.DictReader(io.StringIO(stored.read().decode("utf-8"))))
    return [row["rejected"] for row in rows]


def test_an_export_job_reads_the_replica(copied, requester, settings, tmp_path, monkeypatch):
    campaign, _linking = copied
    settings.MEDIA_ROOT = str(tmp_path / "media")
    monkeypatch.setattr(jobs, "_dispatch", lambda job_id: None)

    from_replica = _exported_statuses(campaign, requester)
    settings.DATABASE_REPLICA_READS = False
    from_primary = _exported_statuses(campaign, requester)

    assert (from_replica, from_primary) == (["yes"], ["no"])


def test_a_transaction_on_the_primary_reads_the_primary(copied):
    campaign, _linking = copied

    with transaction.atomic():
        assert _linking_items(campaign) == {}
    assert _linking_items(campaign) == {"pending": 1}


def test_a_replica_behind_the_bound_is_not_read(copied, settings, monkeypatch):
    campaign, _linking = copied
    settings.DATABASE_REPLICA_MAX_LAG_SECONDS = 30
    measures: list[float] = []

    def lag(value: float):
        def measure() -> float:
            measures.append(value)
            return value

        return measure

    monkeypatch.setattr(dbrouter, "replica_lag_measure", lag(120.0))
    assert _linking_items(campaign) == {}
    assert _linking_items(campaign) == {}
    assert measures == [120.0]  # measured once, then trusted for LAG_CHECK_SECONDS

    replica_lag_forget()
    monkeypatch.setattr(dbrouter, "replica_lag_measure", lag(12.0))
    assert _linking_items(campaign) == {"pending": 1}

    replica_lag_forget()
    monkeypatch.setattr(dbrouter, "replica_lag_measure", lag(float("inf")))  # down
    assert _linking_items(campaign) == {}


def test_the_lag_of_a_database_that_is_no_standby_is_zero(copied):
    assert replica_lag_measure() == 0.0
    assert (
        connections[REPLICA].settings_dict["NAME"] != connections["default"].settings_dict["NAME"]
    )


def _settings_in_a_fresh_process(tmp_path: Path, **env: str) -> dict[str, object]:
    code = (
        "import json; from qaportal import settings as s; "
        "print(json.dumps({'aliases': sorted(s.DATABASES), "
        "'engines': {k: v['ENGINE'] for k, v in s.DATABASES.items()}, "
        "'reads': s.DATABASE_REPLICA_READS, 'lag': s.DATABASE_REPLICA_MAX_LAG_SECONDS, "
        "'test': {k: v.get('TEST', {}) for k, v in s.DATABASES.items()}, "
        "'hosts': {k: v.get('HOST', '') for k, v in s.DATABASES.items()}}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=clean_env(QAPORTAL_VAR_DIR=str(tmp_path), DEBUG="1", **env),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    loaded: dict[str, object] = json.loads(result.stdout)
    return loaded


@pytest.mark.django_db(databases=[])
def test_nothing_set_keeps_the_embedded_sqlite_default(tmp_path):
    loaded = _settings_in_a_fresh_process(tmp_path)

    assert loaded["aliases"] == ["default"]
    assert loaded["engines"] == {"default": "django.db.backends.sqlite3"}
    assert loaded["reads"] is False


@pytest.mark.django_db(databases=[])
def test_a_replica_url_adds_the_alias_also_from_a_file(tmp_path):
    secret = tmp_path / "replica-url"
    secret.write_text("postgres://reader:pw@standby:5432/qaportal\n")
    loaded = _settings_in_a_fresh_process(
        tmp_path,
        DATABASE_URL="postgres://qaportal:pw@primary:5432/qaportal",
        DATABASE_REPLICA_URL_FILE=str(secret),
        DATABASE_REPLICA_MAX_LAG_SECONDS="10",
    )

    assert loaded["aliases"] == ["default", "replica"]
    assert loaded["hosts"] == {"default": "primary", "replica": "standby"}
    assert loaded["reads"] is True
    assert loaded["lag"] == 10.0
    assert loaded["test"]["replica"] == {"MIRROR": "default"}  # type: ignore[index]
