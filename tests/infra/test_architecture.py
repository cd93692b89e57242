"""The house's rules of structure, checked on the code itself (docs/architecture.md).

- imports go one way (import-linter's contracts in ``.importlinter``), and a wrong
  import makes ``lint-imports`` fail;
- no import cycle between application modules (``tools/import_cycles.py``);
- no provider name compared outside ``campaigns/platforms/``, and nothing there asks
  which kind of platform it has (``pays_workers``); no task-type name compared outside
  ``campaigns/tasktypes/``;
- no import of an application module inside a function, but in Celery task modules,
  management commands, ``AppConfig.ready()`` and the lazily loaded API clients.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tools.import_cycles import import_cycles

ROOT = Path(__file__).resolve().parents[2]
APPS = ("qaportal", "campaigns", "linking", "validation", "frontend")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _sources(*, outside: tuple[str, ...] = ()) -> list[Path]:
    files = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if "/migrations/" in rel or rel.startswith(outside):
                continue
            files.append(path)
    return files


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / ".importlinter"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.slow
def test_the_import_contracts_hold_and_a_wrong_import_breaks_them(tmp_path: Path) -> None:
    kept = _lint_imports(ROOT)
    assert kept.returncode == 0, kept.stdout[-3000:] + kept.stderr[-2000:]
    assert "BROKEN" not in kept.stdout

    # The same tree with one import reaching up (work importing the platforms).
    for name in (*APPS, ".importlinter"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, tmp_path / name)
    wrong = tmp_path / "campaigns" / "work" / "handoff.py"
    wrong.write_text(wrong.read_text() + "\nfrom campaigns.platforms import operations  # wrong\n")
    broken = _lint_imports(tmp_path)
    assert broken.returncode != 0
    assert "campaigns.work.handoff -> campaigns.platforms" in broken.stdout.replace("\n", " ")


def test_no_import_cycle_between_application_modules() -> None:
    assert import_cycles() == []


# A comparison with a provider name: ``== Provider.MTURK``, ``!= "prolific"``, ``in (…)``.
PROVIDER_NAME = r"(Provider\.(MTURK|PROLIFIC|LOCAL)|[\"'](mturk|prolific|local)[\"'])"
PROVIDER_COMPARISON = re.compile(
    rf"(==|!=|\bin\b|\bnot in\b)\s*\(?[^\n#]*{PROVIDER_NAME}|{PROVIDER_NAME}\s*(==|!=)"
)


def _templates() -> list[Path]:
    return [p for app in APPS for p in sorted((ROOT / app).rglob("templates/**/*.html"))]


def test_no_provider_name_is_compared_outside_the_platforms() -> None:
    found = []
    for path in [*_sources(outside=("campaigns/platforms/",)), *_templates()]:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if PROVIDER_COMPARISON.search(code):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == [], "\n".join(found)


# Asking which kind of platform a campaign runs on, instead of what it does.
PLATFORM_KIND = re.compile(r"\bpays_workers\b")


def test_nothing_asks_which_kind_of_platform_outside_the_platforms() -> None:
    found = []
    for path in _sources(outside=("campaigns/platforms/",)):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if PLATFORM_KIND.search(line.split("#", 1)[0]):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == [], "\n".join(found)


TASK_TYPE_COMPARISON = re.compile(
    r"task_type\s*(==|!=|\bin\b|\bnot in\b)|(==|!=)\s*[^\n]*\.task_type\b"
)


def test_no_task_type_name_is_compared_outside_the_task_types() -> None:
    found = []
    for path in _sources(outside=("campaigns/tasktypes/",)):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if TASK_TYPE_COMPARISON.search(line.split("#", 1)[0]):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == [], "\n".join(found)


# Imports inside functions that are allowed, and why.
LAZY_ALLOWED = {
    # the paid platforms' API clients (requests, boto3) and stored credentials
    # (cryptography) load on first use, so the local workforce never loads them
    ("campaigns/platforms/platform.py", "campaigns.platforms.credentials"),
    ("campaigns/platforms/prolific/platform.py", "campaigns.platforms.prolific.provider"),
    ("campaigns/platforms/mturk/platform.py", "campaigns.platforms.mturk.provider"),
    ("campaigns/platforms/mturk/platform.py", "campaigns.platforms.mturk.sync"),
    # the Celery app reads Django's settings: loaded when a task is first sent
    ("qaportal/health.py", "qaportal.celery"),
    ("qaportal/outbox.py", "qaportal.celery"),
}


def test_no_application_import_inside_a_function_but_the_allowed() -> None:
    found = []
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        if rel.endswith(("/tasks.py", "/apps.py")) or "/management/commands/" in rel:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for sub in ast.walk(node):
                if isinstance(sub, ast.ImportFrom) and sub.module:
                    names, line = [sub.module], sub.lineno
                elif isinstance(sub, ast.Import):
                    names, line = [a.name for a in sub.names], sub.lineno
                else:
                    continue
                for name in names:
                    if name.split(".")[0] in APPS and (rel, name) not in LAZY_ALLOWED:
                        found.append(f"{rel}:{line}: {name}")
    assert found == [], "\n".join(found)
