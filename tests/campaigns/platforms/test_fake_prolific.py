"""The fake held to Prolific's published OpenAPI document (``prolific_contract``): what
the schema refuses is refused, whatever qaportal's code would send."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import requests

from tests.campaigns.platforms.prolific_contract import operation_find, request_problems

HEADERS = {"Authorization": "Token test-token"}
STUDY = {
    "name": "A study",
    "description": "Write questions.",
    "external_study_url": "https://qaportal.example.org/work/prolific/",
    "prolific_id_option": "url_parameters",
    "completion_codes": [
        {"code": "C1", "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}
    ],
    "total_available_places": 2,
    "estimated_completion_time": 5,
    "reward": 100,
}


def test_operations_are_found_by_method_and_path_literal_first():
    bulk = operation_find("POST", "/api/v1/submissions/bulk-approve/")
    assert bulk is not None
    assert bulk.operation_id == "bulk-approve-submissions"
    one = operation_find("GET", "/api/v1/submissions/abc/")
    assert one is not None
    assert one.operation_id == "get-submission"
    assert operation_find("PUT", "/api/v1/studies/abc/") is None


def test_the_fake_refuses_a_body_the_schema_refuses(fake):
    body: dict[str, Any] = {
        **STUDY,
        "completion_codes": [
            {"code": "R1", "code_type": "OTHER", "actions": [{"action": "REQUEST_RETURN"}]}
        ],
    }
    op, problems = request_problems("POST", "/api/v1/studies/", {}, body, has_body=True)
    assert op is not None
    assert problems == ["body.completion_codes/0/actions/0: 'return_reason' is a required property"]
    answer = requests.post(f"{fake.url}/api/v1/studies/", json=body, headers=HEADERS, timeout=5)
    assert answer.status_code == 400
    assert answer.json()["error"]["detail"] == problems
    assert not fake.state.studies
    body["completion_codes"][0]["actions"][0]["return_reason"] = "Not for you."
    accepted = requests.post(f"{fake.url}/api/v1/studies/", json=body, headers=HEADERS, timeout=5)
    assert accepted.status_code == 201


def test_the_fake_refuses_query_parameters_and_bodies_the_reference_does_not_list(fake):
    hooks = requests.get(
        f"{fake.url}/api/v1/hooks/subscriptions/?is_enabled=maybe", headers=HEADERS, timeout=5
    )
    assert hooks.status_code == 400
    assert "is_enabled" in str(hooks.json()["error"]["detail"])
    pay = requests.post(
        f"{fake.url}/api/v1/bulk-bonus-payments/abc/pay/", json={"x": 1}, headers=HEADERS, timeout=5
    )
    assert pay.status_code == 400
    assert "takes no request body" in str(pay.json()["error"]["detail"])
    email = requests.post(
        f"{fake.url}/api/v1/researchers/participants/",
        json={"email": "not-an-email"},
        headers=HEADERS,
        timeout=5,
    )
    assert email.status_code == 400
    assert "email" in str(email.json()["error"]["detail"])


def test_hooks_are_listed_by_is_enabled(fake):
    fake.state.hooks["h1"] = {
        "id": "h1",
        "workspace_id": "w",
        "event_type": "study.status.change",
        "target_url": "https://example.org/hooks/",
        "is_enabled": False,
    }
    url = f"{fake.url}/api/v1/hooks/subscriptions/?workspace_id=w"
    assert requests.get(url, headers=HEADERS, timeout=5).json()["results"] == []
    disabled = requests.get(f"{url}&is_enabled=false", headers=HEADERS, timeout=5).json()
    assert [h["id"] for h in disabled["results"]] == ["h1"]


def test_every_call_in_the_docs_is_the_operation_it_names():
    """docs/providers.md's table of calls: each method and path is, in the reference, the
    operation the row names, and its link is that operation's reference page."""
    docs = (Path(__file__).parents[3] / "docs" / "providers.md").read_text()
    table = docs.split("### The calls", 1)[1].split("\n\n", 2)[2].split("\n\n", 1)[0]
    rows = [r for r in table.splitlines() if r.startswith("| `")]
    assert len(rows) >= 26
    for row in rows:
        call, operation = (c.strip() for c in row.split("|")[1:3])
        method, path = call.strip("`").split(" ", 1)
        path = path.split("?", 1)[0].replace("{id}", "abc")
        op = operation_find(method, path)
        assert op is not None, row
        assert operation.startswith(f"`{op.operation_id}`"), (row, op.operation_id)
        tag = op.spec["tags"][0]
        assert f"api-reference/{tag}/{op.operation_id})" in operation, row
