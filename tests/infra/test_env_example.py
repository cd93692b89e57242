""".env.example, the one settings file of docker-compose.yml, lists every setting
qaportal/settings.py reads (and docs/configuration.md documents) with settings.py's own
default, and every variable docker-compose.yml reads; nothing else."""

from __future__ import annotations

import ast
import re

from tests.infra.conftest import REPO_ROOT
from tests.infra.test_configuration_docs import environment_variables_read_by_settings

EXAMPLE = REPO_ROOT / ".env.example"
SETTINGS = REPO_ROOT / "qaportal" / "settings.py"
COMPOSE = REPO_ROOT / "docker-compose.yml"
DOC = REPO_ROOT / "docs" / "configuration.md"


def _listed() -> dict[str, str]:
    """NAME -> value of each `NAME=value` line, commented out or not."""
    found: dict[str, str] = {}
    for line in EXAMPLE.read_text().splitlines():
        match = re.fullmatch(r"#? ?([A-Z][A-Z0-9_]*)=(.*)", line)
        if match:
            assert match[1] not in found, f"{match[1]} is listed twice"
            found[match[1]] = match[2]
    return found


def _literal_defaults() -> dict[str, str]:
    """The defaults settings.py writes as literals: os.environ.get("X", "d"),
    env_bool("X", default=True), os.environ.get("X", str(<constant expression>)); and
    those of each platform's settings keys (``campaigns/platforms/<name>/conf.py``)."""
    defaults: dict[str, str] = {}
    for call in ast.walk(ast.parse(SETTINGS.read_text())):
        if not isinstance(call, ast.Call) or not call.args:
            continue
        name = call.args[0]
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            continue
        func = ast.unparse(call.func)
        default = call.args[1] if len(call.args) > 1 else None
        if default is None:
            default = next((k.value for k in call.keywords if k.arg == "default"), None)
        if func == "os.environ.get" and isinstance(default, ast.Constant):
            defaults[name.value] = str(default.value)
        elif func == "os.environ.get" and isinstance(default, ast.Call):
            if ast.unparse(default.func) == "str" and not any(
                isinstance(node, ast.Name) for node in ast.walk(default.args[0])
            ):
                defaults[name.value] = str(eval(ast.unparse(default.args[0])))
        elif func == "env_bool" and isinstance(default, ast.Constant):
            defaults[name.value] = "1" if default.value else "0"
    # Each platform's own keys: SettingKey("X", default, kind) in its folder's conf.py.
    for conf in sorted((REPO_ROOT / "campaigns" / "platforms").glob("*/conf.py")):
        for call in ast.walk(ast.parse(conf.read_text())):
            if not (isinstance(call, ast.Call) and ast.unparse(call.func) == "SettingKey"):
                continue
            if len(call.args) < 2:
                continue
            first, second = call.args[0], call.args[1]
            if not (isinstance(first, ast.Constant) and isinstance(second, ast.Constant)):
                continue
            key, value = first.value, second.value
            if not isinstance(key, str):
                continue
            if isinstance(value, bool):
                defaults[key] = "1" if value else "0"
            elif isinstance(value, int | float):
                defaults[key] = f"{value:g}"
            else:
                defaults[key] = str(value)
    return defaults


def _documented() -> set[str]:
    """The variables of docs/configuration.md's tables of the app's settings."""
    app_part = DOC.read_text().split("## Variables of the tooling")[0]
    names: set[str] = set()
    for line in app_part.splitlines():
        if line.startswith("| `"):
            names |= set(re.findall(r"`([A-Z][A-Z0-9_]*)`", line.split("|")[1]))
    return names


def test_every_setting_is_listed() -> None:
    missing = (environment_variables_read_by_settings() | _documented()) - set(_listed())
    assert not missing, f"add to .env.example: {sorted(missing)}"


def test_every_variable_compose_reads_is_listed() -> None:
    compose = set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", COMPOSE.read_text()))
    missing = compose - set(_listed()) - {"QAPORTAL_ENV_FILE"}  # names the file itself
    assert not missing, f"add to .env.example: {sorted(missing)}"


def test_nothing_is_listed_that_nobody_reads() -> None:
    compose = set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", COMPOSE.read_text()))
    # (_documented() adds what libraries read themselves: HF_TOKEN, HF_ENDPOINT.)
    unknown = set(_listed()) - environment_variables_read_by_settings() - compose - _documented()
    assert not unknown, f"neither settings.py nor docker-compose.yml reads {sorted(unknown)}"


def test_the_defaults_are_settings_py_s() -> None:
    listed = _listed()
    defaults = _literal_defaults()
    assert {"LOG_LEVEL", "JOB_FILES_RETENTION_DAYS", "MTURK_SANDBOX"} <= set(defaults)
    wrong = {
        name: (listed[name], default)
        for name, default in defaults.items()
        if name in listed and listed[name] and listed[name] != default
    }
    assert not wrong, f"(.env.example, settings.py): {wrong}"
    # A commented line without a value is a default settings.py computes (it says so).
    required = {"SECRET_KEY", "POSTGRES_PASSWORD", "MINIO_ROOT_PASSWORD", "CADDY_TLS"}
    for name, value in listed.items():
        if not value and name in defaults and defaults[name] and name not in required:
            raise AssertionError(f"{name}: write settings.py's default {defaults[name]!r}")


def test_the_secrets_are_left_to_fill_in() -> None:
    lines = EXAMPLE.read_text().splitlines()
    for name in ("SECRET_KEY", "POSTGRES_PASSWORD", "MINIO_ROOT_PASSWORD"):
        assert f"{name}=" in lines  # not commented out, and empty
