"""The Dockerfile's build steps, checked without a Docker engine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.infra.conftest import REPO_ROOT, clean_env, run_in_repo

DOCKERFILE = (REPO_ROOT / "Dockerfile").read_text()


def test_image_is_slim_python_and_runs_gunicorn_as_a_non_root_user() -> None:
    assert re.search(r"^FROM python:3\.11-slim\b", DOCKERFILE, re.MULTILINE)
    users = re.findall(r"^USER (\S+)", DOCKERFILE, re.MULTILINE)
    assert users, "the image must switch to a non-root user"
    assert users[-1] not in {"root", "0"}
    assert re.search(r"^HEALTHCHECK .*/healthz", DOCKERFILE, re.MULTILINE | re.DOTALL)
    assert "gunicorn qaportal.wsgi" in DOCKERFILE


@pytest.mark.slow
def test_collectstatic_succeeds_as_at_image_build(tmp_path: Path) -> None:
    """The build runs collectstatic with DEBUG off (manifest storage), which fails on
    any missing file a stylesheet refers to: find that here, not in a docker build."""
    assert "DEBUG=0" in DOCKERFILE
    assert "python manage.py collectstatic --noinput" in DOCKERFILE
    static_root = tmp_path / "staticfiles"
    env = clean_env(
        SECRET_KEY="build-only-not-a-secret",
        ALLOWED_HOSTS="build.invalid",
        DEBUG="0",
        QAPORTAL_VAR_DIR=str(tmp_path / "var"),
        STATIC_ROOT=str(static_root),
    )
    result = run_in_repo("manage.py", "collectstatic", "--noinput", env=env, timeout=300)

    assert result.returncode == 0, result.stderr
    assert (static_root / "staticfiles.json").is_file()
    assert list(static_root.glob("admin/css/base.*.css"))
