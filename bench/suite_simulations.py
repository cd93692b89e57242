"""The test suite's crowd simulations at full size (issue 24).

`make test` runs the recipe simulations small (tests/campaigns/recipes/: Nangia with two
workers per arm and one passage per writing stage, fewer Mintaka cells, four WhyQA
questions): every stage, hand-off, arm and rule still runs and every assertion still
holds, in a fraction of the time. This script
runs the same tests, with the same assertions, at the size they had before (the recipe's
pilot sample), through pytest's ``--full-size`` option:

    .venv/bin/python bench/suite_simulations.py             # full size
    .venv/bin/python bench/suite_simulations.py --small     # the suite's sizes, to compare
    .venv/bin/python bench/suite_simulations.py -- -k nangia  # more pytest arguments

PostgreSQL and Redis as for `make test` (``DATABASE_URL``, ``REDIS_URL``; pytest-django
makes its own ``test_<name>`` database). Prints pytest's per-test durations, then one
line: tests passed, wall time, the CPU time of pytest and its children, load average.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The tests whose sizes --full-size changes.
SIMULATIONS = [
    "tests/campaigns/recipes/test_nangia_simulated.py",
    "tests/campaigns/recipes/test_recipes_simulated.py",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="the suite's sizes instead")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args()
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{path}" if path else str(ROOT)}
    env.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/qaportal")
    env.setdefault("REDIS_URL", "redis://127.0.0.1:6379/1")
    env.setdefault("CELERY_BROKER_URL", env["REDIS_URL"])
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-n",
        "0",
        "-p",
        "no:cacheprovider",
        "-q",
        "--durations=0",
        *([] if args.small else ["--full-size"]),
        *SIMULATIONS,
        *args.pytest_args,
    ]
    print(" ".join(command[1:]), flush=True)
    started = time.monotonic()
    result = subprocess.run(command, cwd=ROOT, env=env, check=False)
    wall = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    size = "small (the suite's)" if args.small else "full"
    print(
        f"suite simulations, {size} size: pytest exit {result.returncode}, "
        f"wall {wall:.1f} s, CPU {usage.ru_utime + usage.ru_stime:.1f} s "
        f"(pytest and its children; PostgreSQL not counted), "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
