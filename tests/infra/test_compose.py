"""docker-compose.yml is valid for Debian's docker-compose and describes the production stack.

There is no Docker engine on CI machines: ``docker-compose config`` validates
and resolves the file without one.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest
import yaml

from tests.infra.conftest import REPO_ROOT, clean_env

REQUIRED = {"SECRET_KEY": "tests-only-secret", "POSTGRES_PASSWORD": "tests-only-password"}


def docker_compose(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    executable = shutil.which("docker-compose")
    if executable is None:
        pytest.fail(
            "docker-compose is not installed: install Debian's package "
            "(apt-get install docker-compose); .ci/run does this on CI machines"
        )
    return subprocess.run(
        [executable, "--project-directory", str(REPO_ROOT), "-f", "docker-compose.yml", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_compose_file_validates() -> None:
    result = docker_compose("config", "-q", env=clean_env(**REQUIRED))

    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("missing", sorted(REQUIRED))
def test_compose_refuses_to_start_without_secrets(missing: str) -> None:
    env = clean_env(**{name: value for name, value in REQUIRED.items() if name != missing})
    result = docker_compose("config", "-q", env=env)

    assert result.returncode != 0
    assert f"{missing} must be set" in result.stderr


@pytest.fixture(scope="module")
def resolved() -> dict[str, Any]:
    result = docker_compose("config", env=clean_env(**REQUIRED))
    assert result.returncode == 0, result.stderr
    config: dict[str, Any] = yaml.safe_load(result.stdout)
    return config


def test_compose_describes_the_production_stack(resolved: dict[str, Any]) -> None:
    services = resolved["services"]

    assert set(services) == {"postgres", "redis", "migrate", "web", "worker", "beat"}
    assert services["postgres"]["image"] == "postgres:15"
    assert services["redis"]["image"] == "redis:7"
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    assert "ping" in services["redis"]["healthcheck"]["test"]
    assert "gunicorn qaportal.wsgi" in " ".join(services["web"]["command"])
    assert "/healthz" in " ".join(services["web"]["healthcheck"]["test"])
    assert services["worker"]["command"][:4] == ["celery", "-A", "qaportal", "worker"]
    assert services["beat"]["command"][:4] == ["celery", "-A", "qaportal", "beat"]
    assert services["migrate"]["command"] == ["python", "manage.py", "migrate", "--noinput"]
    assert set(resolved["volumes"]) >= {"postgres-data", "redis-data"}


@pytest.mark.parametrize("service", ["web", "worker", "beat"])
def test_app_services_start_after_healthy_services_and_migrations(
    resolved: dict[str, Any], service: str
) -> None:
    config = resolved["services"][service]

    assert "build" in config
    assert config["depends_on"] == {
        "postgres": {"condition": "service_healthy"},
        "redis": {"condition": "service_healthy"},
        "migrate": {"condition": "service_completed_successfully"},
    }
    env = config["environment"]
    assert env["DEBUG"] == "0"
    assert env["SECRET_KEY"] == REQUIRED["SECRET_KEY"]
    assert env["DATABASE_URL"].startswith("postgres://")
    assert env["DATABASE_URL"].endswith("@postgres:5432/qaportal")
    assert env["CELERY_BROKER_URL"].startswith("redis://redis:6379/")
    assert env["REDIS_URL"].startswith("redis://redis:6379/")
    assert env["ALLOWED_HOSTS"]
