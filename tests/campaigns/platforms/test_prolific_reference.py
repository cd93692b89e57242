"""Every Prolific call qaportal makes, against the fake held to Prolific's published
OpenAPI document (``reference/openapi.yml``): the request qaportal builds is accepted
with the documented status, and a request the schema (or the documented behaviour)
refuses is refused with Prolific's error body, which the client turns into a
``PermanentProviderError`` naming the field.

docs/providers.md ("Prolific: the calls") lists the reference page of each call.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
import requests

from campaigns.design.platform_rules import RequirementRefused
from campaigns.models import Stage
from campaigns.platforms.base import (
    OperationCall,
    PermanentProviderError,
    TransientProviderError,
)
from campaigns.platforms.prolific.client import ProlificClient
from campaigns.platforms.prolific.provider import (
    ProlificProvider,
    maximum_allowed_minutes,
    study_body,
)
from campaigns.platforms.prolific.rules import ProlificRules
from campaigns.platforms.prolific.studies import prolific_time_allowed

CODES = {"completed": "C0DE1", "failed_check": "C0DE2", "screened_out": "C0DE3"}


@pytest.fixture
def client(fake) -> ProlificClient:
    return ProlificClient(token="test-token", base_url=fake.url, backoff_base=0.001)


def _body(**changes):
    body = study_body(
        key="publish:stage:1:hits:1-2:2",
        name="Campaign: Write questions",
        description="Write five questions.",
        stage_id=1,
        places=4,
        reward=Decimal("1.00"),
        duration_minutes=60,
        estimated_minutes=5,
        codes=CODES,
        filters=ProlificRules().study_filters(
            # a choice id of the fake's catalogue: the ISO codes need the catalogue
            [{"kind": "approval_rate", "min": 95}, {"kind": "locale", "countries": ["1"]}]
        ),
        site_url="https://qaportal.example.org",
        max_per_participant=3,
    )
    body.update(changes)
    return body


def _raw(fake, method, path, body):
    return requests.request(
        method, f"{fake.url}{path}", json=body, headers={"Authorization": "Token test-token"}
    )


def test_study_create_get_list_update_transition(client, fake):
    study = client.study_create(_body())
    assert fake.calls("POST", r"/api/v1/studies/$")[-1].status == 201
    assert study["status"] == "UNPUBLISHED"
    assert study["reward"] == 100  # pence
    assert study["submissions_config"] == {"max_submissions_per_participant": 3}
    assert [s["internal_name"] for s in client.studies_list()] == [
        "qaportal:publish:stage:1:hits:1-2:2"
    ]
    assert client.study_get(study["id"])["id"] == study["id"]
    client.study_transition(study["id"], "PUBLISH")
    assert (
        client.study_update(study["id"], {"total_available_places": 6})["total_available_places"]
        == 6
    )
    for action, status in (("PAUSE", "PAUSED"), ("START", "ACTIVE"), ("STOP", "COMPLETED")):
        assert client.study_transition(study["id"], action)["status"] == status
    # Growing a finished study makes it recruit again (update-study).
    grown = client.study_update(study["id"], {"total_available_places": 8})
    assert grown["status"] == "ACTIVE"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"reward": "one pound"}, "reward"),  # a number (the currency's minor unit)
        ({"prolific_id_option": "url"}, "prolific_id_option"),
        (
            {
                "completion_codes": [
                    {"code": "X", "code_type": "COMPLETED", "actions": [{"action": "PAY"}]}
                ]
            },
            "completion_codes",
        ),
        (  # RequestReturn requires its return_reason
            {
                "completion_codes": [
                    {"code": "X", "code_type": "OTHER", "actions": [{"action": "REQUEST_RETURN"}]}
                ]
            },
            "return_reason",
        ),
        ({"filters": [{"filter_id": "approval_rate", "selected_values": [95]}]}, "filters"),
        (  # oneOf [integer, string, number]: a whole number matches two branches
            {"filters": [{"filter_id": "approval_rate", "selected_range": {"lower": 95}}]},
            "lower",
        ),
        (
            {"filters": [{"filter_id": "current-country-of-residence", "selected_values": ["US"]}]},
            "filters",
        ),
        ({"filters": [{"filter_id": "masters", "selected_values": ["1"]}]}, "filters"),
        ({"device_compatibility": ["phone"]}, "device_compatibility"),
        ({"maximum_allowed_time": 10}, "maximum_allowed_time"),  # estimate 5: at least 17
        ({"reward": 40}, "reward"),  # 40p for 5 minutes: £4.80 an hour
        ({"submissions_config": {"max_submissions_per_participant": "all"}}, "submissions_config"),
    ],
)
def test_study_create_refuses_what_the_reference_refuses(client, fake, changes, field):
    with pytest.raises(PermanentProviderError, match=field):
        client.study_create(_body(**changes))
    answer = _raw(fake, "POST", "/api/v1/studies/", _body(**changes))
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["status"] == 400
    assert error["title"]
    assert field in str(error["detail"])
    assert not fake.state.studies


def test_required_fields_are_named(fake):
    answer = _raw(fake, "POST", "/api/v1/studies/", {"name": "x"})
    detail = str(answer.json()["error"]["detail"])
    for field in ("description", "reward", "total_available_places", "external_study_url"):
        assert field in detail


def test_operations_and_parameters_not_in_the_reference_are_refused(client, fake):
    study = client.study_create(_body())
    unknown = _raw(fake, "GET", "/api/v1/filters/current-country-of-residence/choices/", None)
    assert unknown.status_code == 404
    assert "not an operation" in unknown.json()["error"]["detail"]
    paged = _raw(fake, "GET", f"/api/v1/studies/{study['id']}/submissions/?page=2", None)
    assert paged.status_code == 400
    assert "page" in str(paged.json()["error"]["detail"])
    documented = _raw(fake, "GET", f"/api/v1/submissions/?study={study['id']}&page=2", None)
    assert documented.status_code == 200


def test_maximum_allowed_time_is_prolifics_minimum():
    body = _body()
    assert body["estimated_completion_time"] == 5
    assert body["maximum_allowed_time"] == 60  # the stage allows more than the least, 17
    assert maximum_allowed_minutes(estimated=30, wanted=60) == 73  # 2 + 60 + 2·√30
    assert maximum_allowed_minutes(estimated=5, wanted=10) == 17
    # qaportal's own deadline for a participant's task is the study's maximum, not less.
    stage = Stage(config={"estimated_minutes": 30}, assignment_duration=timedelta(hours=1))
    assert prolific_time_allowed(stage=stage) == timedelta(minutes=73)


def test_published_study_only_grows(client, fake):
    study = client.study_create(_body())
    client.study_transition(study["id"], "PUBLISH")
    with pytest.raises(PermanentProviderError, match="only be increased"):
        client.study_update(study["id"], {"total_available_places": 2})
    with pytest.raises(PermanentProviderError, match="reward"):
        client.study_update(study["id"], {"reward": 200})
    with pytest.raises(PermanentProviderError, match="action"):
        client.study_transition(study["id"], "RESUME")


def test_submission_transition_bulk_approve_and_reject(client, fake):
    study = client.study_create(_body())
    client.study_transition(study["id"], "PUBLISH")
    subs = [fake.start_submission(study["id"]) for _ in range(3)]
    for s in subs:
        fake.complete_submission(s["id"], "C0DE1")
    assert (
        client.submission_transition(subs[0]["id"], {"action": "APPROVE"})["status"] == "APPROVED"
    )
    # Idempotent, as documented: the same request again is fine.
    assert (
        client.submission_transition(subs[0]["id"], {"action": "APPROVE"})["status"] == "APPROVED"
    )
    with pytest.raises(PermanentProviderError, match="message"):
        client.submission_transition(
            subs[1]["id"],
            {"action": "REJECT", "message": "short", "rejection_category": "LOW_EFFORT"},
        )
    with pytest.raises(PermanentProviderError, match="rejection_category"):
        client.submission_transition(
            subs[1]["id"], {"action": "REJECT", "message": "x" * 100, "rejection_category": "BAD"}
        )
    with pytest.raises(PermanentProviderError, match="action"):
        client.submission_transition(subs[1]["id"], {"action": "ACCEPT"})
    fake.async_lag = 2
    assert client.submissions_bulk_approve([subs[1]["id"], subs[2]["id"]]) == (
        "The request to bulk approve has been made successfully."
    )
    # Asynchronous: in progress for the next requests, then done.
    assert client.submission_get(subs[1]["id"])["status"] == "AWAITING REVIEW"
    assert client.submission_get(subs[1]["id"])["status"] == "AWAITING REVIEW"
    assert client.submission_get(subs[1]["id"])["status"] == "APPROVED"
    assert {fake.submission(s["id"])["status"] for s in subs} == {"APPROVED"}
    both = _raw(
        fake,
        "POST",
        "/api/v1/submissions/bulk-approve/",
        {"submission_ids": [subs[0]["id"]], "study_id": study["id"], "participant_ids": ["p"]},
    )
    assert both.status_code == 400
    records = ProlificProvider(client).sync_submissions(study_id=study["id"])
    assert {r.status for r in records} == {"APPROVED"}
    assert {r.entered_code for r in records} == {"C0DE1"}


def test_bonus_setup_and_pay(client, fake):
    study = client.study_create(_body())
    client.study_transition(study["id"], "PUBLISH")
    sub = fake.start_submission(study["id"])
    setup = client.bonus_setup(study_id=study["id"], csv_bonuses=f"{sub['id']},0.50")
    assert setup["amount"] == 50  # cents, as the reference says
    fake.async_lag = 1
    assert setup["id"] in client.bonus_pay(setup["id"])  # the 202 names the bulk bonus
    assert fake.calls("POST", r"/api/v1/bulk-bonus-payments/")[-1].status == 202
    assert client.submission_get(sub["id"])["bonus_payments"] == []  # in progress
    assert client.submission_get(sub["id"])["bonus_payments"] == [50]
    with pytest.raises(PermanentProviderError, match="Not in this study"):
        client.bonus_setup(study_id=study["id"], csv_bonuses="0123456789abcdef01234567,0.50")
    with pytest.raises(PermanentProviderError, match="amount like"):
        client.bonus_setup(study_id=study["id"], csv_bonuses=f"{sub['id']},50p")


def test_messages_groups_and_their_refusals(client, fake):
    study = client.study_create(_body())
    client.message_bulk(participant_ids=["a" * 24], body="Thanks!", study_id=study["id"])
    assert fake.calls("POST", r"/api/v1/messages/bulk/")[-1].status == 204
    with pytest.raises(PermanentProviderError, match="body"):
        client.message_bulk(participant_ids=["a" * 24], body="", study_id=study["id"])
    group = client.participant_group_create(workspace_id="workspace-1", name="qaportal-qual-1")
    assert [g["id"] for g in client.participant_groups(workspace_id="workspace-1")] == [group["id"]]
    client.participant_group_add(group["id"], ["b" * 24])
    client.participant_group_remove(group["id"], ["b" * 24])
    with pytest.raises(PermanentProviderError, match="workspace"):
        client.participant_group_create(workspace_id="", name="x")
    listing = _raw(fake, "GET", "/api/v1/participant-groups/", None)
    assert listing.status_code == 400  # the filter (workspace_id or project_id) is required


def test_hooks_subscribe_confirm_and_are_idempotent(fake):
    client = ProlificClient(token="test-token", base_url=fake.url, backoff_base=0.001)
    provider = ProlificProvider(client, workspace_id="workspace-1")
    url = "https://qaportal.example.org/work/prolific/hooks/"
    out = provider.hooks_setup(target_url=url, new_secret=True)
    assert out["secret"] == fake.state.hook_secrets["workspace-1"]["value"]
    assert [s["event_type"] for s in out["subscriptions"]] == [
        "study.status.change",
        "submission.status.change",
    ]
    assert all(h["is_enabled"] for h in fake.state.hooks.values())
    again = provider.hooks_setup(target_url=url)
    assert [s["new"] for s in again["subscriptions"]] == [False, False]
    assert "secret" not in again  # the workspace has one: not replaced unless asked
    assert len(fake.state.hooks) == 2
    # An unconfirmed subscription (listed only with is_enabled=false) is replaced, not doubled.
    study_hook = next(h for h in fake.state.hooks.values() if h["event_type"].startswith("study"))
    study_hook["is_enabled"] = False
    listed = client.hook_subscriptions(workspace_id="workspace-1", is_enabled=True)
    assert study_hook["id"] not in {h["id"] for h in listed}
    third = provider.hooks_setup(target_url=url)
    assert [s["new"] for s in third["subscriptions"]] == [True, False]
    assert len(fake.state.hooks) == 2
    assert all(h["is_enabled"] for h in fake.state.hooks.values())
    with pytest.raises(PermanentProviderError, match="https"):
        provider.hooks_setup(target_url="http://localhost/hooks/")
    refused = _raw(
        fake,
        "POST",
        "/api/v1/hooks/subscriptions/",
        {"workspace_id": "workspace-1", "event_type": "study.created", "target_url": url},
    )
    assert "event_type" in str(refused.json()["error"]["detail"])


def test_test_participant_and_test_study(client, fake):
    provider = ProlificProvider(client, workspace_id="workspace-1")
    draft = client.study_create(_body())
    with pytest.raises(PermanentProviderError, match="test participant"):
        client.study_test(draft["id"])
    pid = provider.test_participant_create(email="tester@example.org")
    assert fake.state.test_participants == {pid: "tester@example.org"}
    with pytest.raises(PermanentProviderError, match="email"):
        provider.test_participant_create(email="not-an-email")
    call = OperationCall(
        operation_id=1,
        kind="create_study",
        key="k",
        payload={"study": _body(), "hit_ids": [7], "test": True},
    )
    result = provider.publish_hits(call)
    assert result["test"] is True
    assert fake.state.studies[result["study_id"]]["is_test"] is True
    assert result["hits"] == {
        "7": {"provider_hit_id": f"{result['study_id']}:7", "group_id": result["study_id"]}
    }
    assert fake.state.studies[result["draft_study_id"]]["status"] == "UNPUBLISHED"


def test_requirement_mapping_refuses_what_prolific_cannot_express():
    rules = ProlificRules()
    for req, message in (
        ({"kind": "masters"}, "no Masters"),
        ({"kind": "locale", "countries": ["US-NY"]}, "not regions"),
        ({"kind": "locale", "countries": ["US"], "exclude": True}, "cannot exclude"),
        ({"kind": "locale", "countries": ["XX"]}, "ISO 3166"),
        ({"kind": "approval_rate", "min": 120}, "0 to 100"),
        ({"kind": "hit_count"}, "no filter"),
        ({"kind": "locale", "countries": "12"}, "must be a list"),
        ({"kind": "approved_count", "min": "many"}, "whole number"),
    ):
        with pytest.raises(RequirementRefused, match=message):
            rules.study_filters([req])
        (note,) = rules.requirement_notes([req])
        assert message in note.refused
    notes = rules.requirement_notes([{"kind": "adult"}, {"quiz_stage": 3}])
    assert [n.platform_filter for n in notes] == ["", "participant_group_allowlist"]
    assert rules.study_filters([{"kind": "adult"}]) == []


def test_country_codes_resolve_through_the_filters_catalogue(client, fake):
    provider = ProlificProvider(client, workspace_id="workspace-1")
    catalogue = provider.filters(refresh=True)
    rules = ProlificRules(catalogue=catalogue)
    filters = rules.study_filters([{"kind": "country", "countries": ["US", "GB", "CA"]}])
    assert filters == [
        {"filter_id": "current-country-of-residence", "selected_values": ["1", "0", "45"]}
    ]
    (note,) = rules.requirement_notes([{"kind": "locale", "countries": ["GB"]}])
    assert "United Kingdom (choice 0)" in note.note
    with pytest.raises(RequirementRefused, match="offers no country for JP"):
        rules.study_filters([{"kind": "country", "countries": ["JP"]}])
    # Cached: a second read asks Prolific nothing; refresh reads again.
    before = len(fake.calls("GET", r"/api/v1/filters/"))
    provider.filters()
    assert len(fake.calls("GET", r"/api/v1/filters/")) == before
    provider.filters(refresh=True)
    assert len(fake.calls("GET", r"/api/v1/filters/")) == before + 1
    # Without a catalogue the codes cannot be sent.
    with pytest.raises(RequirementRefused, match="filters catalogue"):
        ProlificRules().study_filters([{"kind": "country", "countries": ["US"]}])
    names = {c["code"]: c for c in rules.requirement_choices()["countries"]}
    assert names["CA"] == {"code": "CA", "name": "Canada", "choice": "45"}


def test_bursts_of_study_creation_and_payment_get_429_with_retry_after(fake):
    fake.rate_limits = {"studies": (2, 60.0), "payments": (1, 60.0)}
    slept: list[float] = []
    client = ProlificClient(
        token="test-token", base_url=fake.url, max_retries=1, sleep=slept.append
    )
    client.study_create(_body())
    client.study_create(_body())
    with pytest.raises(TransientProviderError) as caught:
        client.study_create(_body())
    assert caught.value.unprocessed
    assert caught.value.retry_after is not None
    assert caught.value.retry_after > 0
    assert slept
    assert slept[0] > 0
    assert len(fake.state.studies) == 2
    throttled = fake.calls("POST", r"/api/v1/studies/$")[-1]
    assert throttled.status == 429


def test_error_bodies_reach_the_requester_shortened_without_the_token(client, fake):
    with pytest.raises(PermanentProviderError) as caught:
        client.study_create(_body(reward="none"))
    text = str(caught.value)
    assert text.startswith("Prolific answered 400")
    assert "reward" in text
    assert "test-token" not in text
    bad = ProlificClient(token="wrong", base_url=fake.url)
    with pytest.raises(PermanentProviderError, match="401"):
        bad.study_get("x")
