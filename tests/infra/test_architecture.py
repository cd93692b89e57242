"""The house's rules of structure, checked on the code itself (docs/architecture.md).

- imports go one way (import-linter's contracts in ``.importlinter``), and a wrong
  import makes ``lint-imports`` fail;
- no import cycle between application modules (``tools/import_cycles.py``);
- no provider name compared outside ``campaigns/platforms/``, and nothing there asks
  which kind of platform it has (``pays_workers``); no task-type name compared outside
  ``campaigns/tasktypes/``;
- no import of an application module inside a function, but in Celery task modules,
  management commands, ``AppConfig.ready()`` and the lazily loaded API clients;
- no ledger row written outside ``campaigns/payments/``.
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

from campaigns.tasktypes import task_type_get, task_type_names
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
    # A selector inside a selectors package writing: the contract names it by pattern.
    writing = tmp_path / "validation" / "selectors" / "ten_way.py"
    writing.write_text(writing.read_text() + "\nfrom validation import services  # wrong\n")
    broken = _lint_imports(tmp_path)
    assert broken.returncode != 0
    out = broken.stdout.replace("\n", " ")
    assert "campaigns.work.handoff -> campaigns.platforms" in out
    assert "validation.selectors.ten_way -> validation.services" in out


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


def _task_type_comparison() -> re.Pattern[str]:
    """A comparison with a task type's name or answer shape, in code or in a query:

    - ``task_type == …``, ``… != stage.task_type``, ``task_type in (…)``;
    - an ORM lookup on a task-type name, ``stage__task_type=…`` or
      ``task_type__in=…``, but through ``task_type_names(<attribute>=…)``;
    - a task-type class's name (``QuestionWriting.name``) or a registered name of
      two words or more in quotes (``"answer_entity_linking"``) given to anything but
      ``task_type=`` (the recipes name the task type of the stages they create);
    - an answer shape named outside the task types (``answer_shape``): what an answer
      means is asked of the task type (``label_of``, ``is_no_answer``, ``gold_correct``).
    """
    # Names of one word ("quiz", "translation") are also ordinary answer keys and kinds.
    names = "|".join(sorted((n for n in task_type_names() if "_" in n), key=len, reverse=True))
    classes = "|".join(sorted({type(task_type_get(n)).__name__ for n in task_type_names()}))
    return re.compile(
        r"task_type\s*(==|!=|\bin\b|\bnot in\b)|(==|!=)\s*[^\n]*\.task_type\b"
        r"|(__task_type|\btask_type__\w+)\s*=(?!\s*task_type_names\()"
        r"|\b(filter|exclude|get)\(\s*task_type\s*="
        rf"|\b({classes})\.name\b"
        rf"|(?<!task_type=)(?<!\"task_type\": )[\"']({names})[\"']"
        r"|\b(answer_shape|task_type_shape)\b"
    )


# Where a registered task-type name is data, not a comparison: the recipes' hand-off
# targets (the task type a writing stage feeds) and a template tag's usage note.
TASK_TYPE_NAME_ALLOWED = {
    "campaigns/recipes/mintaka.py",
    "campaigns/recipes/nangia.py",
    "campaigns/templatetags/tasktype_tags.py",
}


def test_no_task_type_name_is_compared_outside_the_task_types() -> None:
    pattern = _task_type_comparison()
    found = []
    for path in _sources(outside=("campaigns/tasktypes/",)):
        rel = path.relative_to(ROOT).as_posix()
        for n, line in enumerate(path.read_text().splitlines(), 1):
            match = pattern.search(line.split("#", 1)[0])
            if match and not (rel in TASK_TYPE_NAME_ALLOWED and match.group(0)[0] in "\"'"):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert found == [], "\n".join(found)


@pytest.mark.parametrize(
    "line",
    [
        'if stage.task_type == "quiz":',
        "        sql, [campaign.pk, QuestionWriting.name, AssignmentStatus.APPROVED]",
        "            stage__task_type=Translation.name,",
        "            item__stage__task_type=task_type,",
        '        answer_links = _links(campaign, "answer_entity_linking", ids)',
        "    Stage.objects.filter(task_type=name)",
        '    return task_type_shape(stage.task_type) == "sentences"',
    ],
)
def test_the_task_type_check_catches_comparisons_by_name(line: str) -> None:
    assert _task_type_comparison().search(line)


@pytest.mark.parametrize(
    "line",
    [
        "    stage__task_type__in=task_type_names(dataset_part=part),",
        '    task_type="question_writing",',
        "    task_type = task_type_get(stage.task_type)",
        '    if entry.get("translation"):',
    ],
)
def test_the_task_type_check_lets_lookups_by_attribute_pass(line: str) -> None:
    assert not _task_type_comparison().search(line)


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


# The ledger has one writer, ``campaigns/payments/`` (docs/architecture.md, "One door
# for money and decisions"): nowhere else is a ``LedgerEntry`` row made, changed or
# deleted, through the model, a related manager (``….ledger.create``) or raw SQL.
LEDGER_WRITES = {
    "create",
    "bulk_create",
    "get_or_create",
    "update_or_create",
    "update",
    "bulk_update",
    "delete",
    "save",
}
LEDGER_SQL = re.compile(r"\b(insert\s+into|update|delete\s+from)\b[^;]*campaigns_ledgerentry", re.I)


def _receiver_names(node: ast.expr) -> set[str]:
    """The names and attributes a call's receiver is built from
    (``LedgerEntry.objects.filter(…)`` → LedgerEntry, objects, filter)."""
    names: set[str] = set()
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
            node = node.value
        elif isinstance(node, ast.Name):
            names.add(node.id)
            return names
        else:
            return names


def _ledger_write_call(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id == "LedgerEntry"
    return (
        isinstance(func, ast.Attribute)
        and func.attr in LEDGER_WRITES
        and bool(_receiver_names(func.value) & {"LedgerEntry", "ledger"})
    )


def ledger_writes(source: str) -> list[int]:
    """The lines of ``source`` that write ledger rows: a write method called on
    ``LedgerEntry`` or a ``ledger`` related manager, a ``LedgerEntry(…)`` row built to be
    saved, or SQL that inserts, updates or deletes ``campaigns_ledgerentry``."""
    lines = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and _ledger_write_call(node.func):
            lines.add(node.lineno)
        if isinstance(node, ast.Constant) and LEDGER_SQL.search(str(node.value)):
            lines.add(node.lineno)
    return sorted(lines)


def test_ledger_rows_are_written_by_payments_alone() -> None:
    found = []
    for path in _sources(outside=("campaigns/payments/",)):
        for line in ledger_writes(path.read_text()):
            found.append(f"{path.relative_to(ROOT)}:{line}")
    assert found == [], "ledger writes outside campaigns/payments/:\n" + "\n".join(found)
    # The scan sees each way of writing (a module written as the old ones were).
    planted = """
LedgerEntry.objects.filter(operation=op, status="committed").update(status="paid")
LedgerEntry.objects.bulk_create(rows, ignore_conflicts=True)
entries.append(LedgerEntry(key=key, amount=amount))
assignment.ledger.create(key=key)
LedgerEntry.objects.get_or_create(key=key, defaults={})
cursor.execute("UPDATE campaigns_ledgerentry SET status = 'paid'")
cursor.execute("INSERT INTO campaigns_ledgerentry (key) VALUES (%s)")
"""
    assert ledger_writes(planted) == [2, 3, 4, 5, 6, 7, 8]
    reads = "LedgerEntry.objects.filter(key=k).exists()\nLedgerEntry.objects.filter(x=1).first()\n"
    assert ledger_writes(reads) == []
