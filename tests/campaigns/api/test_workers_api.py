"""Workers table and worker actions (block, unblock, qualify, message), bonuses,
Idempotency-Key and rate limits, HITs and qualifications: permissions and bad input."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from campaigns.models import (
    AssignmentStatus,
    CampaignWorker,
    IdempotencyRecord,
    LedgerEntry,
    OperationKind,
    OperationState,
    ProviderOperation,
    QualificationGrant,
    QualificationType,
    WorkerBlock,
)
from campaigns.work.decisions import assignment_approve, assignment_reject
from tests.factories import (
    AssignmentFactory,
    CampaignFactory,
    HITFactory,
    StageFactory,
    UserFactory,
    WorkerFactory,
)
from tests.helpers import local_pipeline, submitted_assignment

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(requester):
    """A local campaign with three workers: one approved, one rejected, one awaiting."""
    campaign, writing, _ = local_pipeline(requester, slug="team", topics=("a", "b", "c"))
    good = submitted_assignment(writing, question="Which river is longer?")
    bad = submitted_assignment(writing, question="Which lake is deeper?")
    waiting = submitted_assignment(writing, question="Which peak is higher?")
    assignment_approve(assignment=good, decided_by=requester, source="requester")
    assignment_reject(assignment=bad, decided_by=requester, source="requester", reason="off")
    CampaignWorker.objects.update_or_create(
        campaign=campaign, worker=good.worker, defaults={"arm": "JUSTIFICATION"}
    )
    return campaign, writing, good, bad, waiting


def _url(campaign, tail=""):
    return f"/api/v1/campaigns/{campaign.slug}/{tail}"


# --- The table -------------------------------------------------------------------------


def test_worker_table_rows(team, token_client):
    campaign, _, good, bad, waiting = team
    body = token_client.get(_url(campaign, "workers/")).json()
    assert body["count"] == 3
    rows = {r["pseudonym"]: r for r in body["results"]}
    assert set(rows) == {good.worker.pseudonym, bad.worker.pseudonym, waiting.worker.pseudonym}
    row = rows[good.worker.pseudonym]
    assert row["arm"] == "JUSTIFICATION"
    assert (row["submitted"], row["approved"], row["rejected"], row["awaiting"]) == (1, 1, 0, 0)
    assert row["approval_rate"] == 1.0
    assert row["paste_share"] == 1.0  # the helper's telemetry has two pastes
    assert row["median_work_seconds"] == float(good.work_seconds)
    assert row["earnings"] == "0.00"  # the local workforce moves no reward money
    assert rows[waiting.worker.pseudonym]["approval_rate"] is None
    assert good.worker.external_id not in str(body)


def test_worker_table_filters_and_ordering(team, token_client):
    campaign, _, good, bad, waiting = team
    url = _url(campaign, "workers/")

    def names(query):
        response = token_client.get(url, query)
        assert response.status_code == 200, response.content
        return [r["pseudonym"] for r in response.json()["results"]]

    assert names({"min_approval": "0.5"}) == [good.worker.pseudonym]
    assert names({"status": "rejected"}) == [bad.worker.pseudonym]
    assert names({"arm": "JUSTIFICATION"}) == [good.worker.pseudonym]
    WorkerBlock.objects.create(requester=campaign.owner, worker=bad.worker, reason="spam")
    assert names({"blocked": "true"}) == [bad.worker.pseudonym]
    assert bad.worker.pseudonym not in names({"blocked": "false"})
    ordered = names({"ordering": "-approval_rate"})
    assert ordered[:2] == [good.worker.pseudonym, bad.worker.pseudonym]
    assert ordered[2] == waiting.worker.pseudonym  # no rate: last


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"ordering": "external_id"}, "ordering"),
        ({"min_approval": "2"}, "min_approval"),
        ({"status": "done"}, "status"),
        ({"blocked": "maybe"}, "blocked"),
    ],
)
def test_worker_table_bad_query_names_the_field(team, token_client, query, field):
    response = token_client.get(_url(team[0], "workers/"), query)
    assert response.status_code == 400
    assert field in response.json()


def _crowd(owner, n: int):
    campaign = CampaignFactory.create(owner=owner, slug=f"crowd-{n}")
    stage = StageFactory.create(campaign=campaign, name="s", position=0)
    now = timezone.now()
    for i in range(n):
        hit = HITFactory.create(stage=stage)
        AssignmentFactory.create(
            hit=hit,
            worker=WorkerFactory.create(),
            status=AssignmentStatus.APPROVED if i % 2 else AssignmentStatus.SUBMITTED,
            accepted_at=now - timedelta(seconds=60 + i),
            submitted_at=now,
            work_seconds=60 + i,
            telemetry={"paste_count": i % 3},
        )
    return campaign


def test_worker_table_query_count_does_not_grow_with_workers(
    requester, token_client, django_assert_max_num_queries
):
    cache.clear()
    small, large = _crowd(requester, 3), _crowd(requester, 40)
    with CaptureQueriesContext(connection) as few:
        assert token_client.get(_url(small, "workers/")).json()["count"] == 3
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert token_client.get(_url(large, "workers/")).json()["count"] == 40


def test_worker_table_permissions(team, client_for, other_requester, api_client, collaborator):
    url = _url(team[0], "workers/")
    assert client_for(other_requester).get(url).status_code == 404
    assert api_client.get(url).status_code == 401
    team[0].collaborators.add(collaborator)
    assert client_for(collaborator).get(url).status_code == 200


@pytest.fixture
def collaborator():
    return UserFactory.create(username="carol")


# --- Block, unblock, qualify, message --------------------------------------------------


def test_owner_blocks_and_unblocks_through_provider_operations(team, token_client):
    campaign, _, _, bad, _ = team
    pseudonym = bad.worker.pseudonym
    url = _url(campaign, f"workers/{pseudonym}/block/")
    response = token_client.post(url, {"reason": "copied answers"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["blocked"] is True
    block = WorkerBlock.objects.get(worker=bad.worker, lifted_at__isnull=True)
    assert block.requester == campaign.owner
    op = ProviderOperation.objects.get(kind=OperationKind.BLOCK)
    assert op.provider == "local"
    assert response.json()["operation"]["id"] == op.pk
    again = token_client.post(url, {"reason": "copied answers"}, format="json")
    assert again.json()["operation"]["id"] == op.pk  # blocking a blocked worker: nothing new

    lifted = token_client.post(_url(campaign, f"workers/{pseudonym}/unblock/"))
    assert lifted.status_code == 200
    assert lifted.json()["blocked"] is False
    assert WorkerBlock.objects.get(pk=block.pk).lifted_at is not None
    assert ProviderOperation.objects.filter(kind=OperationKind.UNBLOCK).count() == 1
    nothing = token_client.post(_url(campaign, f"workers/{pseudonym}/unblock/"))
    assert nothing.json()["operation"] is None


def test_block_needs_a_reason_and_the_owner(team, token_client, client_for, collaborator):
    campaign, _, _, bad, _ = team
    url = _url(campaign, f"workers/{bad.worker.pseudonym}/block/")
    response = token_client.post(url, {"reason": ""}, format="json")
    assert response.status_code == 400
    assert "reason" in response.json()
    campaign.collaborators.add(collaborator)
    refused = client_for(collaborator).post(url, {"reason": "spam"}, format="json")
    assert refused.status_code == 403
    assert not WorkerBlock.objects.exists()


def test_worker_actions_answer_404_outside_the_campaign(
    team, token_client, client_for, other_requester, api_client
):
    campaign, _, good, _, _ = team
    stranger = WorkerFactory.create()
    for action, body in (("block", {"reason": "x"}), ("message", {"body": "hi"})):
        unknown = _url(campaign, f"workers/{stranger.pseudonym}/{action}/")
        assert token_client.post(unknown, body, format="json").status_code == 404
        known = _url(campaign, f"workers/{good.worker.pseudonym}/{action}/")
        assert client_for(other_requester).post(known, body, format="json").status_code == 404
        assert api_client.post(known, body, format="json").status_code == 401
    assert not ProviderOperation.objects.filter(kind__in=["block", "notify"]).exists()


def test_qualify_grants_and_revokes(team, token_client, other_requester):
    campaign, _, good, _, _ = team
    qual = QualificationType.objects.create(owner=campaign.owner, name="Round 2", kind="round")
    url = _url(campaign, f"workers/{good.worker.pseudonym}/qualify/")
    granted = token_client.post(url, {"qualification_type": qual.pk, "value": 3}, format="json")
    assert granted.status_code == 200, granted.content
    assert granted.json()["granted"] is True
    assert QualificationGrant.objects.get(worker=good.worker).value == 3
    table = token_client.get(_url(campaign, "workers/"), {"ordering": "-approved"}).json()
    assert table["results"][0]["qualifications"] == [
        {"qualification_type_id": qual.pk, "name": "Round 2", "value": 3}
    ]
    revoked = token_client.post(
        url, {"qualification_type": qual.pk, "action": "revoke"}, format="json"
    )
    assert revoked.json()["granted"] is False
    kinds = list(ProviderOperation.objects.order_by("pk").values_list("kind", flat=True))
    assert kinds[-2:] == [OperationKind.GRANT, OperationKind.REVOKE]
    foreign = QualificationType.objects.create(owner=other_requester, name="X", kind="manual")
    response = token_client.post(url, {"qualification_type": foreign.pk}, format="json")
    assert response.status_code == 400
    assert "qualification_type" in response.json()


def test_message_is_a_local_notify_operation_and_idempotent(team, token_client):
    campaign, _, good, _, _ = team
    url = _url(campaign, f"workers/{good.worker.pseudonym}/message/")
    body = {"subject": "Round 2", "body": "Thanks <b>for</b> your work"}
    first = token_client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="msg-1")
    assert first.status_code == 201, first.content
    op = ProviderOperation.objects.get(kind=OperationKind.NOTIFY)
    assert op.provider == "local"
    assert op.payload["worker_ids"] == [good.worker.pk]
    assert op.payload["body"] == body["body"]
    replay = token_client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="msg-1")
    assert replay.status_code == 201
    assert replay.json() == first.json()
    assert replay["Idempotent-Replayed"] == "true"
    assert ProviderOperation.objects.filter(kind=OperationKind.NOTIFY).count() == 1
    changed = {**body, "body": "Something else"}
    conflict = token_client.post(url, changed, format="json", HTTP_IDEMPOTENCY_KEY="msg-1")
    assert conflict.status_code == 422
    assert "Idempotency-Key" in conflict.json()["errors"]
    assert ProviderOperation.objects.filter(kind=OperationKind.NOTIFY).count() == 1
    token_client.post(url, body, format="json")
    token_client.post(url, body, format="json")
    assert ProviderOperation.objects.filter(kind=OperationKind.NOTIFY).count() == 3


def test_message_to_many_workers(team, token_client):
    campaign, _, good, bad, _ = team
    url = _url(campaign, "messages/")
    names = [good.worker.pseudonym, bad.worker.pseudonym]
    response = token_client.post(url, {"workers": names, "body": "Hello"}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["workers"] == names
    op = ProviderOperation.objects.get(kind=OperationKind.NOTIFY)
    assert op.payload["worker_ids"] == [good.worker.pk, bad.worker.pk]
    stranger = WorkerFactory.create().pseudonym
    refused = token_client.post(url, {"workers": [stranger], "body": "Hi"}, format="json")
    assert refused.status_code == 400
    assert "workers" in refused.json()
    empty = token_client.post(url, {"workers": names, "body": ""}, format="json")
    assert empty.status_code == 400
    assert "body" in empty.json()
    assert ProviderOperation.objects.filter(kind=OperationKind.NOTIFY).count() == 1


# --- Bonuses ---------------------------------------------------------------------------


def test_local_bonus_is_recorded_once_per_key(
    team, token_client, django_capture_on_commit_callbacks
):
    campaign, _, good, _, _ = team
    url = f"/api/v1/assignments/{good.pk}/bonus/"
    body = {"amount": "0.50", "reason": "Great questions"}
    with django_capture_on_commit_callbacks(execute=True):
        first = token_client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="b-1")
    assert first.status_code == 201, first.content
    assert first.json()["amount"] == "0.50"
    assert first.json()["fee"] == "0.00"
    entry = LedgerEntry.objects.get(kind="bonus")
    assert entry.amount == Decimal("0.50")
    assert entry.worker == good.worker
    assert entry.status == "paid"  # the local operation ran after commit
    assert ProviderOperation.objects.get(kind="bonus").state == OperationState.DONE
    replay = token_client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="b-1")
    assert replay.json() == first.json()
    assert LedgerEntry.objects.filter(kind="bonus").count() == 1
    # The key names the payment too: even with the record gone it pays once.
    IdempotencyRecord.objects.all().delete()
    token_client.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="b-1")
    assert LedgerEntry.objects.filter(kind="bonus").count() == 1
    costs = token_client.get(_url(campaign, "costs/")).json()
    assert costs["by_kind"]["bonus"]["paid"] == "0.50"


@pytest.mark.parametrize(
    "change",
    [{"assignment": "other"}, {"amount": "5.00"}, {"reason": "Another reason"}],
)
def test_a_bonus_key_reused_after_expiry_with_other_content_is_422(team, token_client, change):
    """The payment's key outlives the idempotency record: reused after expiry on
    another assignment, amount or reason it answered 201 with the first payment and
    paid nobody. Now 422, at any age, and the first payment stays the only one."""
    _campaign, _, good, _bad, other = team
    body = {"amount": "0.50", "reason": "Great questions"}
    first = token_client.post(
        f"/api/v1/assignments/{good.pk}/bonus/", body, format="json", HTTP_IDEMPOTENCY_KEY="k-7"
    )
    assert first.status_code == 201
    IdempotencyRecord.objects.all().delete()  # the record expired
    target = other if change.get("assignment") else good
    again = {**body, **{k: v for k, v in change.items() if k != "assignment"}}
    reused = token_client.post(
        f"/api/v1/assignments/{target.pk}/bonus/", again, format="json", HTTP_IDEMPOTENCY_KEY="k-7"
    )
    assert reused.status_code == 422, reused.content
    assert reused.json()["code"] == "idempotency_key_reused"
    assert [(e.assignment_id, e.amount) for e in LedgerEntry.objects.filter(kind="bonus")] == [
        (good.pk, Decimal("0.50"))
    ]
    # The same content again is still the same payment.
    same = token_client.post(
        f"/api/v1/assignments/{good.pk}/bonus/", body, format="json", HTTP_IDEMPOTENCY_KEY="k-7"
    )
    assert same.status_code == 201
    assert same.json()["operation"] == first.json()["operation"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"amount": "0.001", "reason": "x"}, "amount"),
        ({"amount": "abc", "reason": "x"}, "amount"),
        ({"amount": "0", "reason": "x"}, "amount"),
        ({"amount": "1.00"}, "reason"),
        ({"amount": "1.00", "reason": "x", "worker": "A1"}, "worker"),
    ],
)
def test_bonus_bad_input_names_the_field(team, token_client, body, field):
    response = token_client.post(f"/api/v1/assignments/{team[2].pk}/bonus/", body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not LedgerEntry.objects.exists()


def test_bonus_over_budget_is_refused(team, token_client):
    campaign, _, good, _, _ = team
    campaign.budget_cap = Decimal("1.00")
    campaign.save(update_fields=["budget_cap"])
    body = {"amount": "5.00", "reason": "Great"}
    response = token_client.post(f"/api/v1/assignments/{good.pk}/bonus/", body, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "budget_exceeded"
    assert not LedgerEntry.objects.exists()


def test_bonus_permissions(team, client_for, other_requester, api_client):
    url = f"/api/v1/assignments/{team[2].pk}/bonus/"
    body = {"amount": "0.50", "reason": "x"}
    assert client_for(other_requester).post(url, body, format="json").status_code == 404
    assert api_client.post(url, body, format="json").status_code == 401


# --- Idempotency on review actions and rate limits -------------------------------------


def test_approve_with_idempotency_key_replays_and_refuses_another_body(team, token_client):
    waiting = team[4]
    url = f"/api/v1/assignments/{waiting.pk}/approve/"
    first = token_client.post(url, {"reason": "fine"}, format="json", HTTP_IDEMPOTENCY_KEY="k")
    assert first.status_code == 200, first.content
    decided_at = first.json()["decided_at"]
    replay = token_client.post(url, {"reason": "fine"}, format="json", HTTP_IDEMPOTENCY_KEY="k")
    assert replay.json()["decided_at"] == decided_at
    assert replay["Idempotent-Replayed"] == "true"
    other = token_client.post(url, {"reason": "else"}, format="json", HTTP_IDEMPOTENCY_KEY="k")
    assert other.status_code == 422
    assert other.json()["code"] == "idempotency_key_reused"


def test_refused_requests_are_not_remembered(team, token_client):
    bad = team[3]  # rejected: approving it is a conflict
    url = f"/api/v1/assignments/{bad.pk}/approve/"
    response = token_client.post(url, {}, format="json", HTTP_IDEMPOTENCY_KEY="again")
    assert response.status_code == 409
    assert not IdempotencyRecord.objects.exists()


def test_expired_keys_run_again(team, token_client):
    campaign, _, good, _, _ = team
    url = _url(campaign, f"workers/{good.worker.pseudonym}/message/")
    token_client.post(url, {"body": "one"}, format="json", HTTP_IDEMPOTENCY_KEY="old")
    IdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(hours=25))
    again = token_client.post(url, {"body": "two"}, format="json", HTTP_IDEMPOTENCY_KEY="old")
    assert again.status_code == 201
    assert ProviderOperation.objects.filter(kind=OperationKind.NOTIFY).count() == 2


def test_keys_are_per_user(team, token_client, client_for):
    campaign, _, good, _, _ = team
    carol = UserFactory.create(username="carol")
    campaign.collaborators.add(carol)
    url = _url(campaign, f"workers/{good.worker.pseudonym}/message/")
    token_client.post(url, {"body": "one"}, format="json", HTTP_IDEMPOTENCY_KEY="same")
    theirs = client_for(carol).post(
        url, {"body": "two"}, format="json", HTTP_IDEMPOTENCY_KEY="same"
    )
    assert theirs.status_code == 201


def test_too_long_idempotency_key_is_400(team, token_client):
    url = f"/api/v1/assignments/{team[4].pk}/approve/"
    response = token_client.post(url, {}, format="json", HTTP_IDEMPOTENCY_KEY="k" * 201)
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["errors"]


@override_settings(API_THROTTLE_RATES={"read": "3/min", "write": "2/min"})
def test_rate_limit_per_token_answers_429_with_retry_after(team, token_client, client_for):
    cache.clear()
    url = _url(team[0], "workers/")
    assert [token_client.get(url).status_code for _ in range(3)] == [200, 200, 200]
    limited = token_client.get(url)
    assert limited.status_code == 429
    assert int(limited["Retry-After"]) > 0
    assert "detail" in limited.json()
    # Another token has its own count; writes have theirs.
    carol = UserFactory.create(username="carol")
    team[0].collaborators.add(carol)
    assert client_for(carol).get(url).status_code == 200
    cache.clear()


def test_purge_task_deletes_only_expired_records(team, token_client):
    from campaigns.tasks import purge_idempotency_records_task

    campaign, _, good, _, _ = team
    url = _url(campaign, f"workers/{good.worker.pseudonym}/message/")
    for key in ("old", "new"):
        token_client.post(url, {"body": key}, format="json", HTTP_IDEMPOTENCY_KEY=key)
    IdempotencyRecord.objects.filter(key="old").update(
        created_at=timezone.now() - timedelta(hours=25)
    )
    assert purge_idempotency_records_task() == 1
    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["new"]


def test_stage_quality_is_reused_until_work_or_decisions_change(team, token_client, requester):
    campaign, _, _, _, waiting = team
    cache.clear()
    url = _url(campaign, "workers/")
    with CaptureQueriesContext(connection) as cold:
        first = token_client.get(url).json()
    with CaptureQueriesContext(connection) as warm:
        assert token_client.get(url).json() == first
    assert len(warm.captured_queries) < len(cold.captured_queries)
    assignment_approve(assignment=waiting, decided_by=requester, source="requester")
    with CaptureQueriesContext(connection) as changed:
        rows = {r["pseudonym"]: r for r in token_client.get(url).json()["results"]}
    assert len(changed.captured_queries) == len(cold.captured_queries)
    assert rows[waiting.worker.pseudonym]["approved"] == 1


def _python_ordered(rows, ordering):
    """The table's order as the rows say it: by one column, empty values last, ties by
    pseudonym (what the SQL must give, page after page)."""
    name = ordering.lstrip("-")
    by_name = sorted(
        rows, key=lambda r: r.pseudonym, reverse=name == "pseudonym" and ordering[0] == "-"
    )
    present = [r for r in by_name if getattr(r, name) is not None]
    missing = [r for r in by_name if getattr(r, name) is None]
    present.sort(key=lambda r: getattr(r, name), reverse=ordering.startswith("-"))
    return [r.pseudonym for r in present + missing]


def test_worker_table_pages_are_cut_in_the_database_in_the_table_order(requester):
    from campaigns.insights.workers import ORDERING_FIELDS, campaign_worker_table

    campaign = _crowd(requester, 9)
    CampaignWorker.objects.create(campaign=campaign, worker=WorkerFactory.create(), arm="B")
    table = campaign_worker_table(campaign=campaign)
    assert table.count() == len(table) == 10
    rows = list(table)
    assert {r.awaiting + r.approved for r in rows} == {0, 1}
    for field in ORDERING_FIELDS:
        for ordering in (field, f"-{field}"):
            table = campaign_worker_table(campaign=campaign, ordering=ordering)
            pages = [r.pseudonym for start in range(0, 10, 3) for r in table[start : start + 3]]
            assert pages == _python_ordered(rows, ordering), ordering
    assert table[9].pseudonym == pages[9]
    assert campaign_worker_table(campaign=campaign, status="approved").count() == 4
    assert campaign_worker_table(campaign=campaign, arm="B").count() == 1
    with pytest.raises(ValueError, match="Unknown ordering"):
        campaign_worker_table(campaign=campaign, ordering="external_id")


def test_worker_table_quality_is_computed_in_the_background_once(requester, monkeypatch):
    """Outside eager mode the page never computes the slow numbers: it sends the refresh
    task once (a lock holds until it runs) and shows the snapshot it has."""
    from campaigns.insights import workers

    campaign = _crowd(requester, 3)
    sent = []
    monkeypatch.setattr(workers, "task_send", lambda *a, **k: sent.append((a, k)))
    cache.clear()
    with override_settings(CELERY_TASK_ALWAYS_EAGER=False):
        table = workers.campaign_worker_table(campaign=campaign)
        assert table.quality_as_of is None
        assert [r.median_work_seconds for r in table] == [None] * 3
        workers.campaign_worker_table(campaign=campaign)
    assert sent == [((workers.REFRESH_TASK, campaign.pk), {"countdown": None})]
    assert workers.worker_quality_refresh(campaign_id=campaign.pk) == 3
    table = workers.campaign_worker_table(campaign=campaign)
    assert table.quality_as_of is not None
    assert sorted(r.median_work_seconds or 0 for r in table) == [60.0, 61.0, 62.0]
    assert len(sent) == 1
