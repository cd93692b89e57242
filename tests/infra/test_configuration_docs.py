"""docs/configuration.md documents every environment variable that settings.py reads."""

from __future__ import annotations

import re

from tests.infra.conftest import REPO_ROOT

SETTINGS = REPO_ROOT / "qaportal" / "settings.py"
DOC = REPO_ROOT / "docs" / "configuration.md"

# os.environ.get("X" / os.environ["X"] / os.getenv("X" / env_bool("X" / env_list("X" / env_*("X"
_READS = re.compile(
    r"""(?:os\.environ\.get|os\.getenv|os\.environ\[|env_\w+)\(?\s*["']([A-Z][A-Z0-9_]*)["']"""
)


def environment_variables_read_by_settings() -> set[str]:
    return set(_READS.findall(SETTINGS.read_text()))


def test_the_pattern_finds_the_well_known_variables() -> None:
    assert {"DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL"} <= (
        environment_variables_read_by_settings()
    )


def test_every_variable_is_documented() -> None:
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]*)`", DOC.read_text()))

    missing = environment_variables_read_by_settings() - documented
    assert not missing, f"add to docs/configuration.md: {sorted(missing)}"
