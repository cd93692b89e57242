"""With DEBUG off and the documented defaults, ``manage.py check --deploy`` is clean, and
responses carry HSTS and the Content-Security-Policy; plain HTTP is redirected to HTTPS
but /healthz. In the test settings too, every page carries the CSP and no requester
page runs an inline script (which the policy would block)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from tests.infra.conftest import REPO_ROOT, clean_env, run_python

PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": "deploy-check-" + "k" * 50,
    "ALLOWED_HOSTS": "qa.example.org",
}

_HEADERS = """
import json
import django
django.setup()
from django.test import Client
client = Client(HTTP_HOST="qa.example.org")
plain = client.get("/accounts/login/")
secure = client.get("/healthz", secure=True)  # no static files: nothing collected here
health = client.get("/healthz")
print(json.dumps({
    "plain": [plain.status_code, plain.get("Location", "")],
    "hsts": secure.get("Strict-Transport-Security", ""),
    "csp": secure.get("Content-Security-Policy", ""),
    "health": health.status_code,
}))
"""


def test_check_deploy_is_clean(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO_ROOT,
        env=clean_env(QAPORTAL_VAR_DIR=str(tmp_path), **PRODUCTION),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_headers_and_https_redirect(tmp_path: Path) -> None:
    env = clean_env(
        QAPORTAL_VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="qaportal.settings", **PRODUCTION
    )
    result = run_python(_HEADERS, env=env)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["plain"] == [301, "https://qa.example.org/accounts/login/"]
    assert seen["hsts"] == "max-age=31536000; includeSubDomains; preload"
    assert "script-src 'self'" in seen["csp"]
    assert "frame-ancestors 'none'" in seen["csp"]
    assert seen["health"] in (200, 503)  # never redirected


@pytest.mark.django_db
def test_every_page_carries_the_policy(requester) -> None:
    client = Client()
    client.force_login(requester)
    response = client.get("/")
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert "Content-Security-Policy" not in Client().get("/api/v1/docs/")


def test_no_template_runs_an_inline_script() -> None:
    inline = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>")
    offenders = [
        str(path.relative_to(REPO_ROOT))
        for root in ("frontend", "campaigns", "linking", "validation")
        for path in (REPO_ROOT / root).rglob("*.html")
        if inline.search(path.read_text(encoding="utf-8"))
        or re.search(r"\son(click|submit|change|load|input)=", path.read_text(encoding="utf-8"))
    ]
    assert not offenders, offenders
