"""What the replica router adds to every ORM read: ``router.db_for_read`` per call,
without a replica (every deployment without DATABASE_REPLICA_URL), with one outside a
``replica_reads()`` scope, and inside a scope with the lag measure cached. No query
runs: the replica's host does not resolve, so its one lag measure fails fast and is
cached as "behind" for LAG_CHECK_SECONDS (the decision's cost, not a database's).

    .venv/bin/python bench/replica_router_bench.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

N = 200_000
CHILD = """
import os, sys, time
import django
django.setup()
from django.contrib.auth.models import User
from django.db import router
from qaportal.dbrouter import replica_lag_seconds, replica_reads
n = int(sys.argv[1])

def timed(label):
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        router.db_for_read(User)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{label:32s} {wall / n * 1e6:6.2f} us wall {cpu / n * 1e6:6.2f} us CPU per read")

timed(sys.argv[2])
if sys.argv[2] == "replica set":
    with replica_reads():
        replica_lag_seconds()  # the one measure (fails: no such host), then cached
        timed("replica set, in a scope")
"""


def main() -> None:
    base = {
        "PATH": os.environ["PATH"],
        "DEBUG": "1",
        "DJANGO_SETTINGS_MODULE": "qaportal.settings",
        "QAPORTAL_VAR_DIR": "/tmp/qaportal-replica-bench",
    }
    replica = {
        "DATABASE_URL": "postgres://u@primary.invalid:5432/x",
        "DATABASE_REPLICA_URL": "postgres://u@replica.invalid:5432/x",
        "DATABASE_CONNECT_TIMEOUT": "1",
    }
    for label, extra in (("no replica (SQLite default)", {}), ("replica set", replica)):
        subprocess.run(
            [sys.executable, "-c", CHILD, str(N), label], env={**base, **extra}, check=True
        )
    print("load average:", os.getloadavg(), time.strftime("%H:%M:%S"))


if __name__ == "__main__":
    main()
