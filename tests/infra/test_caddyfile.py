"""deploy/Caddyfile, as Caddy itself reads it (`caddy adapt`, Debian's caddy) under the
variables docker-compose.yml gives it: every web replica by DNS, HTTPS by ACME for a
public name or an internal CA for a campus host, the upload limit, a log without
worker ids."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from tests.infra.conftest import REPO_ROOT, clean_env

CADDYFILE = REPO_ROOT / "deploy" / "Caddyfile"


def adapt(**env: str) -> dict[str, Any]:
    caddy = shutil.which("caddy")
    if caddy is None:
        pytest.fail("caddy is not installed: apt-get install caddy (.ci/run does)")
    result = subprocess.run(
        [caddy, "adapt", "--config", str(CADDYFILE), "--adapter", "caddyfile"],
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    config: dict[str, Any] = json.loads(result.stdout)
    return config


def _handlers(config: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "handler" in node:
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(config["apps"]["http"])
    return found


def _one(config: dict[str, Any], handler: str) -> dict[str, Any]:
    (found,) = [h for h in _handlers(config) if h["handler"] == handler]
    return found


COMPOSE = {  # what docker-compose.yml's proxy service sets
    "SITE_ADDRESS": "qa.example.org",
    "CADDY_TLS": "",
    "UPSTREAM_MODE": "dynamic",
    "UPSTREAM_NAME": "web",
    "UPSTREAM_PORT": "8000",
    "HEALTH_HOST": "qa.example.org",
    "MAX_BODY_SIZE": "55MiB",
}


def test_compose_shape_reaches_every_web_replica_by_dns() -> None:
    proxy = _one(adapt(**COMPOSE), "reverse_proxy")

    assert proxy["dynamic_upstreams"] == {
        "source": "a",
        "name": "web",
        "port": "8000",
        "refresh": 5_000_000_000,
    }
    assert proxy["load_balancing"]["selection_policy"]["policy"] == "round_robin"
    assert proxy["health_checks"]["passive"]["fail_duration"] > 0


def test_a_public_name_gets_a_certificate_by_acme() -> None:
    config = adapt(**COMPOSE)

    routes = config["apps"]["http"]["servers"]["srv0"]
    assert routes["listen"] == [":443"]
    assert routes["routes"][0]["match"] == [{"host": ["qa.example.org"]}]
    # No internal issuer: Caddy's automatic HTTPS (ACME) manages the name.
    assert "tls" not in config["apps"] or "automation" not in config["apps"]["tls"]


def test_a_campus_host_gets_the_internal_ca() -> None:
    config = adapt(**{**COMPOSE, "SITE_ADDRESS": "qa.campus.internal", "CADDY_TLS": "tls internal"})

    (policy,) = config["apps"]["tls"]["automation"]["policies"]
    assert policy["subjects"] == ["qa.campus.internal"]
    assert [issuer["module"] for issuer in policy["issuers"]] == ["internal"]


def test_request_bodies_are_limited_as_uploads_are() -> None:
    limit = _one(adapt(**COMPOSE), "request_body")["max_size"]

    # ITEM_UPLOAD_MAX_BYTES (50 MiB) and a multipart envelope fit; much more does not.
    assert 50 * 1024 * 1024 < limit < 60 * 1024 * 1024


def test_the_access_log_drops_worker_ids_and_credentials() -> None:
    logs = adapt(**COMPOSE)["logging"]["logs"]
    (log,) = [log for name, log in logs.items() if name != "default"]
    fields = log["encoder"]["fields"]

    replaced = {action["parameter"] for action in fields["request>uri"]["actions"]}
    assert replaced == {"workerId", "assignmentId", "PROLIFIC_PID"}
    for header in ("Referer", "Cookie", "Authorization"):
        assert fields[f"request>headers>{header}"]["filter"] == "delete"


def test_the_access_log_can_be_left_to_gunicorn() -> None:
    config = adapt(**{**COMPOSE, "CADDY_ACCESS_LOG": "off"})

    assert "logging" not in config
    assert "logs" not in config["apps"]["http"]["servers"]["srv0"]
    # The rest of the entry is as with the log.
    for handler in ("reverse_proxy", "request_body", "encode", "static_response"):
        assert _one(config, handler) == _one(adapt(**COMPOSE), handler)


def test_metrics_are_not_served_to_the_outside() -> None:
    (blocked,) = [h for h in _handlers(adapt(**COMPOSE)) if h["handler"] == "static_response"]
    assert blocked["status_code"] == 404
    routes = adapt(**COMPOSE)["apps"]["http"]["servers"]["srv0"]["routes"][0]["handle"][0]
    text = json.dumps(routes)
    # The 404 comes before the proxy in the route's order.
    assert text.index('"/metrics"') < text.index('"reverse_proxy"')
