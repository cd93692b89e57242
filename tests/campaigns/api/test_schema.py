"""The OpenAPI schema generates cleanly and the docs page works offline."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from django.contrib.staticfiles import finders
from django.core.management import call_command
from drf_spectacular.validation import validate_schema

pytestmark = pytest.mark.django_db

EXPECTED_PATHS = {
    "/api/v1/campaigns/": {"get", "post"},
    "/api/v1/campaigns/{slug}/": {"get", "patch", "delete"},
    "/api/v1/campaigns/{slug}/transition/": {"post"},
    "/api/v1/campaigns/{slug}/cost-estimate/": {"get"},
    "/api/v1/campaigns/{slug}/stages/": {"get", "post"},
    "/api/v1/stages/{stage_id}/": {"get", "patch"},
    "/api/v1/stages/{stage_id}/link/": {"post"},
    "/api/v1/stages/{stage_id}/items/": {"get"},
    "/api/v1/stages/{stage_id}/items/upload/": {"post"},
    "/api/v1/campaigns/{slug}/invites/": {"get", "post"},
    "/api/v1/invites/{invite_id}/revoke/": {"post"},
    "/api/v1/campaigns/{slug}/grants/": {"get", "post"},
    "/api/v1/campaigns/{slug}/grants/{username}/": {"delete"},
    "/api/v1/stages/{stage_id}/publish/": {"post"},
    "/api/v1/campaigns/{slug}/assignments/": {"get"},
    "/api/v1/campaigns/{slug}/assignments/bulk-review/": {"post"},
    "/api/v1/assignments/{assignment_id}/approve/": {"post"},
    "/api/v1/assignments/{assignment_id}/reject/": {"post"},
    "/api/v1/assignments/{assignment_id}/override/": {"post"},
    "/api/v1/stages/{stage_id}/review/": {"post"},
    "/api/v1/stages/{stage_id}/quality/": {"get"},
    "/api/v1/stages/{stage_id}/labels/": {"get"},
    "/api/v1/campaigns/{slug}/link-review/": {"get"},
    "/api/v1/link-review/{item_id}/decide/": {"post"},
    "/api/v1/campaigns/{slug}/costs/": {"get"},
    "/api/v1/campaigns/{slug}/ledger/": {"get"},
    "/api/v1/campaigns/{slug}/workers/": {"get"},
    "/api/v1/campaigns/{slug}/workers/{pseudonym}/block/": {"post"},
    "/api/v1/campaigns/{slug}/workers/{pseudonym}/unblock/": {"post"},
    "/api/v1/campaigns/{slug}/workers/{pseudonym}/qualify/": {"post"},
    "/api/v1/campaigns/{slug}/workers/{pseudonym}/message/": {"post"},
    "/api/v1/campaigns/{slug}/messages/": {"post"},
    "/api/v1/campaigns/{slug}/hits/": {"get"},
    "/api/v1/hits/{hit_id}/": {"get"},
    "/api/v1/assignments/{assignment_id}/": {"get"},
    "/api/v1/assignments/{assignment_id}/bonus/": {"post"},
    "/api/v1/campaigns/{slug}/qualifications/": {"get", "post"},
    "/api/v1/campaigns/{slug}/qualifications/grants/": {"get"},
}


def test_schema_generates_without_warnings(tmp_path: Path):
    out = tmp_path / "schema.yaml"

    # --fail-on-warn turns every drf-spectacular warning into an error.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))

    schema = yaml.safe_load(out.read_text())
    paths = {p: set(ops) - {"parameters"} for p, ops in schema["paths"].items()}
    assert {p: ops for p, ops in paths.items() if p in EXPECTED_PATHS} == EXPECTED_PATHS


def test_schema_endpoint_serves_a_valid_schema(token_client):
    response = token_client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")

    assert response.status_code == 200
    schema = response.json()
    validate_schema(schema)
    components = schema["components"]
    assert {"tokenAuth", "cookieAuth"} <= set(components["securitySchemes"])
    # Durations are documented as whole seconds.
    duration = components["schemas"]["StageCreateInputRequest"]["properties"]["lifetime"]
    assert duration["type"] == "integer"
    assert "seconds" in duration["description"]
    # Every operation requires authentication.
    for path in EXPECTED_PATHS:
        for method, operation in schema["paths"][path].items():
            assert {} not in operation["security"], (path, method)


def test_docs_page_uses_bundled_swagger_ui(token_client):
    response = token_client.get("/api/v1/docs/")

    assert response.status_code == 200
    html = response.content.decode()
    assert "drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "cdn.jsdelivr.net" not in html
    assert finders.find("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")
