"""The replica router against a real PostgreSQL streaming standby: a private primary
(``initdb``) and a standby copied from it (``pg_basebackup -R``), both started here on
ports of their own, and an app process configured with ``DATABASE_URL`` and
``DATABASE_REPLICA_URL`` pointing at them. Scoped reads go to the standby while it is
current, to the primary while its replay is paused and it falls past
``DATABASE_REPLICA_MAX_LAG_SECONDS``, back to the standby when it catches up, and to the
primary when it is down."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.infra.conftest import REPO_ROOT, clean_env

BIN = Path("/usr/lib/postgresql/15/bin")
# As root, PostgreSQL's tools refuse to run: they run as the postgres user then.
RUN_AS = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

pytestmark = [
    pytest.mark.slow(seconds=20),
    pytest.mark.skipif(not (BIN / "initdb").exists(), reason="PostgreSQL 15's server tools"),
]


def _port() -> int:
    """A port of the helpers' range (8840-8899) that nothing listens on."""
    for port in range(8840, 8900):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 8840-8899")


def _pg(tool: str, *args: str) -> None:
    subprocess.run([*RUN_AS, str(BIN / tool), *args], check=True, capture_output=True, timeout=120)


@pytest.fixture
def standby() -> Iterator[tuple[int, int, Path]]:
    # Not under pytest's tmp_path: the postgres user must reach it (root's is private).
    root = Path(tempfile.mkdtemp(prefix="qaportal-standby-"))
    if RUN_AS:
        shutil.chown(root, "postgres")
    primary, replica = root / "primary", root / "standby"
    _pg("initdb", "-D", str(primary), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
    with (primary / "pg_hba.conf").open("a") as hba:
        hba.write("host replication all 127.0.0.1/32 trust\n")
    started: list[Path] = []
    try:
        ports: list[int] = []
        for data in (primary, replica):
            if data is replica:
                _pg(
                    "pg_basebackup",
                    *("-h", "127.0.0.1", "-p", str(ports[0]), "-U", "postgres"),
                    *("-D", str(replica), "-R", "-X", "stream"),
                )
            port = _port()
            options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
            log = str(root / f"{data.name}.log")
            _pg("pg_ctl", "-D", str(data), "-l", log, "-o", options, "-w", "-t", "60", "start")
            started.append(data)
            ports.append(port)
        yield ports[0], ports[1], replica
    finally:
        for data in reversed(started):
            subprocess.run(
                [*RUN_AS, str(BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                capture_output=True,
                timeout=60,
                check=False,
            )
        shutil.rmtree(root, ignore_errors=True)


SCRIPT = """
import json, time
import django
django.setup()
from django.contrib.auth.models import User
from django.db import connections, router
from qaportal.dbrouter import replica_lag_forget, replica_lag_measure, replica_reads

def run(alias, sql):
    with connections[alias].cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchone() if cursor.description else None

def standby_until(sql, failure):
    for _ in range(200):
        if run("replica", sql)[0]:
            return
        time.sleep(0.05)
    raise RuntimeError(failure)

def caught_up():
    standby_until(
        "SELECT pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn()",
        "the standby does not catch up",
    )

def received():
    # The insert's WAL has reached the paused standby (a loaded machine may take more
    # than a moment to stream it): the standby now holds something it has not replayed.
    standby_until(
        "SELECT pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn()",
        "the standby receives nothing",
    )

def reads():
    replica_lag_forget()
    with replica_reads():
        return router.db_for_read(User)

out = {}
run("default", "CREATE TABLE t (n int)")
run("default", "INSERT INTO t VALUES (1)")
caught_up()
out["in_recovery"] = run("replica", "SELECT pg_is_in_recovery()")[0]
out["current"] = [replica_lag_measure(), reads()]
run("replica", "SELECT pg_wal_replay_pause()")
# A pause is only requested by the call; replay stops once the standby says "paused".
standby_until(
    "SELECT pg_get_wal_replay_pause_state() = 'paused'", "the standby does not pause"
)
time.sleep(1.5)
run("default", "INSERT INTO t VALUES (2)")
received()
out["paused"] = [replica_lag_measure(), reads()]
run("replica", "SELECT pg_wal_replay_resume()")
caught_up()
out["resumed"] = [replica_lag_measure(), reads(), run("replica", "SELECT count(*) FROM t")[0]]
print(json.dumps(out))
"""


def test_scoped_reads_follow_a_real_standby_and_its_lag(standby):
    primary, replica, data = standby
    env = clean_env(
        DJANGO_SETTINGS_MODULE="qaportal.settings",
        DEBUG="1",
        DATABASE_URL=f"postgres://postgres@127.0.0.1:{primary}/postgres",
        DATABASE_REPLICA_URL=f"postgres://postgres@127.0.0.1:{replica}/postgres",
        DATABASE_REPLICA_MAX_LAG_SECONDS="1",
    )
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])

    assert out["in_recovery"] is True
    # Caught up: the lag is under the bound (a record written since the check, such as
    # the primary's running-transactions record, may be in replay: some milliseconds).
    lag, alias = out["current"]
    assert (lag < 1.0, alias) == (True, "replica")
    lag, alias = out["paused"]
    assert (lag > 1.0, alias) == (True, "default")
    lag, alias, rows = out["resumed"]
    assert (lag < 1.0, alias, rows) == (True, "replica", 2)

    # The standby stops: the reads go back to the primary, the page does not fail.
    subprocess.run(
        [*RUN_AS, str(BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
        capture_output=True,
        timeout=60,
        check=True,
    )
    down = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.contrib.auth.models import User; "
            "from django.db import router; from qaportal.dbrouter import replica_reads\n"
            "with replica_reads(): print(router.db_for_read(User))",
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert down.stdout.strip().splitlines()[-1] == "default", down.stderr
