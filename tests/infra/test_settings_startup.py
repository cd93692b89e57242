"""Start-up refuses an unsafe production configuration, with a message that says what to set."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.infra.conftest import REPO_ROOT, clean_env


def manage_check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        pytest.param(
            {"DEBUG": "0", "ALLOWED_HOSTS": "qa.example.org"},
            "SECRET_KEY is not set",
            id="no-secret-key",
        ),
        pytest.param(
            {"DEBUG": "0", "SECRET_KEY": "x" * 50},
            "ALLOWED_HOSTS is not set",
            id="no-allowed-hosts",
        ),
        pytest.param(
            {"DEBUG": "0", "SECRET_KEY": "x" * 50, "ALLOWED_HOSTS": " , "},
            "ALLOWED_HOSTS is not set",
            id="blank-allowed-hosts",
        ),
        # DEBUG defaults to off: an unconfigured server is a production one.
        pytest.param({}, "SECRET_KEY is not set", id="nothing-set"),
    ],
)
def test_start_up_stops_without_secret_key_or_allowed_hosts_when_debug_is_off(
    tmp_path: Path, env: dict[str, str], message: str
) -> None:
    result = manage_check(clean_env(QAPORTAL_VAR_DIR=str(tmp_path), **env))

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr


def test_debug_off_starts_with_secret_key_and_allowed_hosts(tmp_path: Path) -> None:
    env = clean_env(
        DEBUG="0",
        SECRET_KEY="x" * 50,
        ALLOWED_HOSTS="qa.example.org",
        QAPORTAL_VAR_DIR=str(tmp_path),
    )
    result = manage_check(env)

    assert result.returncode == 0, result.stderr


def test_debug_on_starts_with_nothing_set(tmp_path: Path) -> None:
    """The embedded default: a development server needs no configuration at all."""
    result = manage_check(clean_env(DEBUG="1", QAPORTAL_VAR_DIR=str(tmp_path)))

    assert result.returncode == 0, result.stderr


def _settings_value(name: str, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    code = f"import qaportal.settings as s; print(repr(s.{name}))"
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=clean_env(DEBUG="0", QAPORTAL_VAR_DIR=str(tmp_path / "var"), **env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _django_setting(name: str, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    code = (
        "import django; from django.conf import settings; django.setup(); "
        f"print(repr(settings.{name}))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=clean_env(
            DEBUG="0",
            QAPORTAL_VAR_DIR=str(tmp_path / "var"),
            DJANGO_SETTINGS_MODULE="qaportal.settings",
            **env,
        ),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_secrets_can_come_from_files(tmp_path: Path) -> None:
    (tmp_path / "secret_key").write_text("from-a-docker-secret\n")
    (tmp_path / "token").write_text("prolific-token")
    env = {
        "SECRET_KEY_FILE": str(tmp_path / "secret_key"),
        "PROLIFIC_API_TOKEN_FILE": str(tmp_path / "token"),
        "ALLOWED_HOSTS": "qa.example.org",
    }

    assert _settings_value("SECRET_KEY", env, tmp_path).stdout.strip() == "'from-a-docker-secret'"
    # A platform's own key (campaigns/platforms/prolific/conf.py) is read from the
    # environment the file filled, when the platform registers.
    token = _django_setting("PROLIFIC_API_TOKEN", env, tmp_path)
    assert token.stdout.strip() == "'prolific-token'", token.stderr
    # The variable itself wins over its file.
    direct = _settings_value("SECRET_KEY", {**env, "SECRET_KEY": "direct"}, tmp_path)
    assert direct.stdout.strip() == "'direct'"


def test_an_unreadable_secret_file_stops_start_up_naming_it(tmp_path: Path) -> None:
    env = {"SECRET_KEY_FILE": str(tmp_path / "missing"), "ALLOWED_HOSTS": "qa.example.org"}

    result = _settings_value("SECRET_KEY", env, tmp_path)

    assert result.returncode != 0
    assert "SECRET_KEY_FILE=" in result.stderr
    assert "cannot be read" in result.stderr
