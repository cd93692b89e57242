"""docker-compose.yml is valid for Debian's docker-compose and describes the production stack.

There is no Docker engine on CI machines: ``docker-compose config`` validates
and resolves the file without one.
"""

from __future__ import annotations

import ipaddress
import shutil
import subprocess
from typing import Any

import pytest
import yaml

from tests.infra.conftest import REPO_ROOT, clean_env

REQUIRED = {
    "SECRET_KEY": "tests-only-secret",
    "POSTGRES_PASSWORD": "tests-only-password",
    "MINIO_ROOT_PASSWORD": "tests-only-store-password",
}
# The settings file every service reads (env_file): the example, as an operator copies it.
ENV_FILE = {"QAPORTAL_ENV_FILE": ".env.example"}
APP_SERVICES = ("migrate", "web", "worker", "worker-payments", "worker-heavy", "beat")


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
    result = docker_compose("config", "-q", env=clean_env(**REQUIRED, **ENV_FILE))

    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("missing", sorted(REQUIRED))
def test_compose_refuses_to_start_without_secrets(missing: str) -> None:
    env = clean_env(
        **{name: value for name, value in REQUIRED.items() if name != missing}, **ENV_FILE
    )
    result = docker_compose("config", "-q", env=env)

    assert result.returncode != 0
    assert f"{missing} must be set" in result.stderr


@pytest.fixture(scope="module")
def resolved() -> dict[str, Any]:
    return _resolved()


def _resolved(*args: str, **env: str) -> dict[str, Any]:
    result = docker_compose(*args, "config", env=clean_env(**REQUIRED, **ENV_FILE, **env))
    assert result.returncode == 0, result.stderr
    config: dict[str, Any] = yaml.safe_load(result.stdout)
    return config


def test_compose_describes_the_production_stack(resolved: dict[str, Any]) -> None:
    services = resolved["services"]

    assert set(services) == {
        "proxy",
        "postgres",
        "redis",
        "minio",
        "storage-init",
        *APP_SERVICES,
    }
    assert services["postgres"]["image"] == "postgres:15"
    assert services["redis"]["image"] == "redis:7"
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    assert "ping" in services["redis"]["healthcheck"]["test"]
    assert "gunicorn qaportal.wsgi" in " ".join(services["web"]["command"])
    assert "/healthz" in " ".join(services["web"]["healthcheck"]["test"])
    assert "celery -A qaportal worker -Q default " in services["worker"]["command"][-1]
    assert services["beat"]["command"][:4] == ["celery", "-A", "qaportal", "beat"]
    assert services["migrate"]["command"] == ["python", "manage.py", "migrate", "--noinput"]
    assert set(resolved["volumes"]) >= {"postgres-data", "redis-data", "minio-data", "caddy-data"}


@pytest.mark.parametrize("service", [s for s in APP_SERVICES if s != "migrate"])
def test_app_services_start_after_healthy_services_and_migrations(
    resolved: dict[str, Any], service: str
) -> None:
    config = resolved["services"][service]

    assert "build" in config
    assert config["depends_on"] == {
        "postgres": {"condition": "service_healthy"},
        "redis": {"condition": "service_healthy"},
        "migrate": {"condition": "service_completed_successfully"},
        "storage-init": {"condition": "service_completed_successfully"},
    }
    env = config["environment"]
    assert env["DEBUG"] == "0"
    assert env["SECRET_KEY"] == REQUIRED["SECRET_KEY"]
    assert env["DATABASE_URL"].startswith("postgres://")
    assert env["DATABASE_URL"].endswith("@postgres:5432/qaportal")
    assert env["CELERY_BROKER_URL"].startswith("redis://redis:6379/")
    assert env["REDIS_URL"].startswith("redis://redis:6379/")
    assert env["ALLOWED_HOSTS"]


@pytest.mark.parametrize("service", [*APP_SERVICES, "proxy"])
def test_every_service_of_ours_reads_the_one_env_file(
    resolved: dict[str, Any], service: str
) -> None:
    # docker-compose 1.29 resolves env_file into environment: a setting only the file
    # holds (the example's SITE_ADDRESS) reaches the service.
    assert resolved["services"][service]["environment"]["SITE_ADDRESS"] == "localhost"


def test_the_proxy_is_the_only_published_entry(resolved: dict[str, Any]) -> None:
    services = resolved["services"]
    published = {name for name, config in services.items() if config.get("ports")}
    assert published == {"proxy"}
    targets = sorted({(p["target"], p.get("protocol", "tcp")) for p in services["proxy"]["ports"]})
    assert targets == [(80, "tcp"), (443, "tcp"), (443, "udp")]
    volumes = [str(v) for v in services["proxy"]["volumes"]]
    assert any("deploy/Caddyfile:/etc/caddy/Caddyfile" in v for v in volumes), volumes
    assert services["web"]["expose"] == ["8000"]


def test_the_proxy_keeps_its_access_log_and_one_go_thread(resolved: dict[str, Any]) -> None:
    env = resolved["services"]["proxy"]["environment"]
    # docs/scaling.md, "The proxy's CPU": Caddy's Go runtime on the VM's shared cores.
    assert env["CADDY_ACCESS_LOG"] == "on"
    assert env["GOMAXPROCS"] == "1"
    assert env["GOGC"] == "400"
    tuned = _resolved(CADDY_GOMAXPROCS="4", CADDY_ACCESS_LOG="off")
    assert tuned["services"]["proxy"]["environment"]["GOMAXPROCS"] == "4"
    assert tuned["services"]["proxy"]["environment"]["CADDY_ACCESS_LOG"] == "off"


def test_the_app_believes_the_proxy_alone(resolved: dict[str, Any]) -> None:
    proxy = resolved["services"]["proxy"]["networks"]["default"]["ipv4_address"]
    for service in APP_SERVICES:
        assert resolved["services"][service]["environment"]["TRUSTED_PROXIES"] == f"{proxy}/32"
    (pool,) = resolved["networks"]["default"]["ipam"]["config"]
    # The proxy's address is outside the range other containers are given.
    assert ipaddress.ip_address(proxy) not in ipaddress.ip_network(pool["ip_range"])
    assert ipaddress.ip_address(proxy) in ipaddress.ip_network(pool["subnet"])


def test_job_files_go_to_the_object_store(resolved: dict[str, Any]) -> None:
    services = resolved["services"]
    for service in APP_SERVICES:
        env = services[service]["environment"]
        assert env["AWS_STORAGE_BUCKET_NAME"] == "qaportal"
        assert env["AWS_S3_ENDPOINT_URL"] == "http://minio:9000"
        assert env["AWS_S3_SECRET_ACCESS_KEY"] == REQUIRED["MINIO_ROOT_PASSWORD"]
    init = services["storage-init"]
    assert init["command"] == ["python", "manage.py", "storage_init"]
    assert init["depends_on"] == {"minio": {"condition": "service_healthy"}}
    assert init["environment"]["AWS_STORAGE_BUCKET_NAME"] == "qaportal"


def test_a_worker_service_per_queue(resolved: dict[str, Any]) -> None:
    services = resolved["services"]
    queues = {
        name: services[name]["command"][-1].split(" -Q ")[1].split()[0]
        for name in ("worker", "worker-payments", "worker-heavy")
    }
    assert queues == {"worker": "default", "worker-payments": "payments", "worker-heavy": "heavy"}


def test_web_and_workers_scale() -> None:
    """`--scale web=3 --scale worker=2`: nothing that must be unique per container
    (a container name, a published port, a fixed address) on the scaled services."""
    config = _resolved()
    for service in ("web", "worker", "worker-payments", "worker-heavy"):
        spec = config["services"][service]
        assert "container_name" not in spec
        assert not spec.get("ports")
        networks = spec.get("networks") or {}
        assert not any((n or {}).get("ipv4_address") for n in networks.values())
