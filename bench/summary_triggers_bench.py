"""What the summaries' triggers cost PostgreSQL: a worker cycle's writes and a bulk
decision, measured in the backend (migration 0022; docs/scaling.md).

    .venv/bin/python bench/summary_triggers_bench.py cycles DBNAME [--n 3000] [--off]
    .venv/bin/python bench/summary_triggers_bench.py decisions DBNAME [--n 2000] \
        [--batches 10] [--off]

``cycles`` (a database set up by ``qaportal_setup.py``: open HITs): ``--n`` times, in one
``DO`` block, a worker cycle's writes as the services send them: the HIT's place taken
(``UPDATE campaigns_hit``), the assignment inserted, an update of a column no summary
counts (telemetry), the submission (status, time, answers); then rolled back, so a
database serves any number of runs alike. ``decisions`` (the database of
``review_rules_bench.py``: submitted assignments): ``--batches`` UPDATEs of ``--n``
submitted rows each to approved / rejected (every 17th left as it is, as a held review)
with a review note, then rolled back. Each three times; prints the backend's CPU (from
/proc, 10 ms ticks: hence many rows) per cycle or per batch. ``--off`` runs with
``session_replication_role = replica`` (no trigger fires, the foreign keys' checks
included); ``--summaries-off`` disables only the summaries' triggers (``DISABLE TRIGGER
USER`` on the assignments and HITs, rolled back with the run): the difference is their
share. Standard library plus psycopg2 (qaportal's venv).
"""

from __future__ import annotations

import argparse
import os

import psycopg2

CYCLES = """
DO $$
DECLARE a bigint; h bigint;
BEGIN
  FOR i IN 1..%(n)s LOOP
    h := %(h0)s + i;
    UPDATE campaigns_hit SET places_left = places_left - 1 WHERE id = h AND places_left > 0;
    INSERT INTO campaigns_assignment (provider, status, accepted_at, telemetry,
      decision_source, decision_reason, feedback, review_details, hit_id, worker_id)
    VALUES ('local', 'accepted', now(), '{}', '', '', '', '{}', h, %(w)s) RETURNING id INTO a;
    UPDATE campaigns_assignment SET telemetry = '{"k": 1}' WHERE id = a;
    UPDATE campaigns_assignment SET status = 'submitted', submitted_at = now(),
      answers = '{"x": 1}', work_seconds = 9 WHERE id = a;
  END LOOP;
END $$"""

DECISIONS = """
UPDATE campaigns_assignment AS a SET status = CASE WHEN a.id %% 10 = 0 THEN 'rejected'
  WHEN a.id %% 17 = 0 THEN a.status ELSE 'approved' END, decided_at = now(),
  decision_source = 'rule:x',
  review_details = a.review_details || '{"review": {"rules": [1, 2]}}'::jsonb
WHERE a.id = ANY(%s) AND a.status = 'submitted'"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("kind", choices=["cycles", "decisions"])
    p.add_argument("db")
    p.add_argument("--n", type=int, default=0, help="cycles, or rows per batch")
    p.add_argument("--batches", type=int, default=10)
    p.add_argument("--off", action="store_true", help="no trigger fires (the floor)")
    p.add_argument(
        "--summaries-off",
        action="store_true",
        help="the summaries' triggers disabled, the foreign keys' checks kept",
    )
    a = p.parse_args()
    conn = psycopg2.connect(host="127.0.0.1", user="postgres", dbname=a.db)
    cur = conn.cursor()
    pid = conn.get_backend_pid()

    def cpu() -> float:
        with open(f"/proc/{pid}/stat") as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")

    def off() -> None:
        if a.off:
            cur.execute("SET session_replication_role = replica")
        if a.summaries_off:  # rolled back with the run
            for table in ("campaigns_assignment", "campaigns_hit"):
                cur.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")

    results = []
    if a.kind == "cycles":
        n = a.n or 3000
        cur.execute(
            "SELECT min(id) FROM campaigns_hit WHERE places_left > 0 AND status = 'published'"
        )
        (h0,) = cur.fetchone()
        cur.execute("SELECT id FROM campaigns_worker ORDER BY id LIMIT 1")
        (w,) = cur.fetchone()
        conn.rollback()
        for _ in range(3):
            off()
            cur.execute(CYCLES % {"n": 50, "h0": h0, "w": w})  # warm the plans
            conn.rollback()
            off()
            t0 = cpu()
            cur.execute(CYCLES % {"n": n, "h0": h0, "w": w})
            results.append(1000 * (cpu() - t0) / n)
            conn.rollback()
        unit = "ms per cycle"
    else:
        n = a.n or 2000
        cur.execute(
            "SELECT id FROM campaigns_assignment WHERE status = 'submitted' ORDER BY id LIMIT %s",
            [n * a.batches],
        )
        ids = [row[0] for row in cur.fetchall()]
        conn.rollback()
        for _ in range(3):
            off()
            cur.execute(DECISIONS, [ids[:n]])  # warm the plans
            conn.rollback()
            off()
            t0 = cpu()
            for b in range(a.batches):
                cur.execute(DECISIONS, [ids[b * n : (b + 1) * n]])
            results.append(1000 * (cpu() - t0) / a.batches)
            conn.rollback()
        unit = f"ms per {n}-row batch"
    print(
        f"{a.kind} {a.db}{' (triggers off)' if a.off else ''}"
        f"{' (summaries off)' if a.summaries_off else ''}: {unit} "
        f"{' '.join(f'{x:.3f}' for x in results)}; load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
