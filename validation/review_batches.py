"""A stage's review decisions written in batches (``validation.services.stage_review``).

- ``BatchWriter`` — writes the batches, each in its own transaction; on PostgreSQL
  outside a caller's transaction, on writer threads (each with its own connection)
  while the next batches are decided.
- ``_batch_prepare`` — what a batch writes, built and encoded by the deciding thread.
- ``_batch_apply`` — one batch written by ``campaigns.work.decisions.decisions_write_many``
  (the one writer of decisions: a constant number of queries, on PostgreSQL one
  statement), and counted for the summary.

Validation decides what (each row's status and review record); work writes it.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections import Counter
from collections.abc import Hashable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.db import connection
from django.utils import timezone

from campaigns.design.platform import platform_for
from campaigns.models import AssignmentStatus, Stage
from campaigns.work.decisions import decisions_write_many
from validation.rules.facts import Submission, Verdict
from validation.rules.settings import APPROVE, REJECT
from validation.rules.verdicts import Review

logger = logging.getLogger(__name__)

PROPOSED = "proposed"


@dataclass
class ReviewSummary:
    reviewed: int = 0
    decisions: Counter[str] = field(default_factory=Counter)
    worker_actions: Counter[str] = field(default_factory=Counter)
    batches: int = 0
    run_id: int | None = None


# The interpreter's thread switch interval while writer threads run (seconds).
WRITER_SWITCH_INTERVAL = 0.0005
# Writer threads (each with its connection): two batches written at once.
WRITERS = 2


class BatchWriter:
    """Writes the batches, each with ``_batch_apply`` in its own transaction.

    On PostgreSQL, outside a caller's transaction, batches are written by writer
    threads (``WRITERS``, each with its own connection, dealt the batches in turn, one
    in flight each) while the next batch's rules run: the database works on a batch
    (the longer side of a run) while Python decides the next ones, and two batches'
    statements run at once (they lock different assignments, and their common workers
    in the same order: the later one waits for the earlier one's commit there). Inside
    a caller's transaction (tests, a caller's ``atomic``) another connection would not
    see its rows, so the batches are written inline, in order, as on other databases.
    A failed write is raised by a later ``write`` or when the block ends.
    """

    def __init__(self, *, stage: Stage, summary: ReviewSummary) -> None:
        self.stage = stage
        self.summary = summary
        self._lock = threading.Lock()
        self._writers: list[ThreadPoolExecutor] = []
        self._pending: list[Future[None] | None] = []
        self._turn = 0
        # The run's verdicts as the batches encode them (``_batch_prepare``).
        self._encoded: _Encoded = {}
        if connection.vendor == "postgresql" and not connection.in_atomic_block:
            self._writers = [
                ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"stage-review-writer-{n}")
                for n in range(WRITERS)
            ]

    def __enter__(self) -> BatchWriter:
        if self._writers:
            # A writer thread needs the GIL back each time PostgreSQL answers one of its
            # statements, while this thread runs the rules without a pause: at the
            # default 5 ms switch interval it waited up to that long after every
            # statement, the database idle meanwhile (~2 s of a 100,000-row review).
            self._switch_interval = sys.getswitchinterval()
            sys.setswitchinterval(WRITER_SWITCH_INTERVAL)
            self._pending = [writer.submit(_writer_session) for writer in self._writers]
        return self

    def write(self, reviews: Sequence[tuple[Submission, Review]]) -> None:
        batch = _batch_prepare(reviews, self._encoded)
        if not self._writers:
            self._apply(batch)
            return
        turn, self._turn = self._turn, (self._turn + 1) % len(self._writers)
        self._wait(turn)
        self._pending[turn] = self._writers[turn].submit(self._apply, batch)

    def _apply(self, batch: _Batch) -> None:
        counts = ReviewSummary()
        _batch_apply(stage=self.stage, batch=batch, summary=counts)
        with self._lock:
            self.summary.reviewed += counts.reviewed
            self.summary.decisions.update(counts.decisions)
            self.summary.batches += 1

    def _wait(self, turn: int) -> None:
        pending, self._pending[turn] = self._pending[turn], None
        if pending is not None:
            pending.result()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if not self._writers:
            return
        try:
            failed: BaseException | None = None
            for turn in range(len(self._writers)):
                try:
                    self._wait(turn)
                except Exception as error:
                    if exc_type is None and failed is None:
                        failed = error
                    else:
                        logger.exception("stage %s: a batch's write failed too", self.stage.pk)
            if failed is not None:
                raise failed
        finally:
            sys.setswitchinterval(self._switch_interval)
            for writer in self._writers:
                writer.submit(_connection_close).result()
                writer.shutdown(wait=True)


def _connection_close() -> None:
    """Close the calling thread's database connection (the writer thread's own)."""
    connection.close()


# The review_details a decision writes (~1.5 KB of JSON) take an approved row past
# PostgreSQL's 2 KB threshold, where it compresses the largest value: with lz4 instead of
# the default pglz, ~15 % less of the writer's database time. Only where the
# server was built with lz4; the stored JSON is the same, and every reader decompresses
# either kind.
_WRITER_SESSION_SQL = """
SELECT set_config('default_toast_compression', 'lz4', false) FROM pg_settings
WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)
"""


def _writer_session() -> None:
    """Set up the writer thread's own connection for its batches (``_WRITER_SESSION_SQL``):
    one query per run; the connection is closed at the end (``_connection_close``)."""
    with connection.cursor() as cursor:
        cursor.execute(_WRITER_SESSION_SQL)


class _Row(NamedTuple):
    """One assignment's decision, ready to write (``_batch_prepare``)."""

    pk: int
    worker_id: int
    decision: str  # the review's: approve / reject / hold / none
    status: str  # approved / rejected when the decision applies, else ""
    # What the UPDATE writes: id, [status,] and the review: on PostgreSQL its head
    # (``Review.head``, which has the decision's time, source and reason) as an index
    # into the batch's ``heads`` and its verdicts as indexes into the batch's
    # ``verdicts``; elsewhere [at, source, reason,] and the review_details to merge
    # ("details").
    data: dict[str, Any]


class _Batch(NamedTuple):
    """A batch ready to write (``_batch_prepare``)."""

    rows: list[_Row]
    # PostgreSQL: the batch's distinct verdicts and its distinct heads, each one JSON
    # array; else "".
    verdicts: str
    heads: str
    width: int  # verdicts per review (the stage's deciding rules)


# A verdict's key and JSON (``_verdict_index``) by the verdict object's id, the object
# kept with them (so that its id is not reused while the entry lives): the verdicts of a
# stage repeat from batch to batch (``StageFacts.verdict``), each is keyed and encoded once
# per run.
_Encoded = dict[int, list[Any]]


def _batch_prepare(
    reviews: Sequence[tuple[Submission, Review]], encoded: _Encoded | None = None
) -> _Batch:
    """What ``_batch_apply`` writes for each review, encoded as JSON for PostgreSQL: done
    by the deciding thread, so that the writer thread only locks and writes.

    On PostgreSQL each distinct verdict and each distinct head of the batch is encoded
    (and parsed by the database) once: verdicts repeat (a batch of 1,000 reviews with
    7,000 verdicts holds ~600 distinct ones, most of them shared objects already), and
    so do heads (~140 distinct of 1,000: the decision, its source and reason, the
    batch's time); each row names its head and its verdicts by index and the database
    assembles its review. ``encoded``: the run's verdicts already keyed (``_Encoded``).
    """
    encoded = {} if encoded is None else encoded
    at = timezone.now().isoformat()
    encode = connection.vendor == "postgresql"
    rows: list[_Row] = []
    pays: dict[str, bool] = {}
    table: dict[Hashable, int] = {}
    texts: list[str] = []
    heads: dict[tuple[str, str, str, bool], int] = {}
    head_texts: list[str] = []
    # A verdict object judges many assignments (``StageFacts.verdict``): looked up by
    # identity first (the batch's reviews hold them all while it is prepared).
    known: dict[int, int] = {}
    width = 0
    for sub, result in reviews:
        if sub.provider not in pays:
            pays[sub.provider] = not platform_for(sub.provider).decides_at_once
        applies = result.decision in (APPROVE, REJECT) and not pays[sub.provider]
        status = ""
        if applies:
            approve = result.decision == APPROVE
            status = AssignmentStatus.APPROVED if approve else AssignmentStatus.REJECTED
        # Only the "review" key (what ``validation.services._details`` puts there): the
        # writes merge it into the stored review_details.
        data: dict[str, Any] = {"id": sub.id, "status": status} if status else {"id": sub.id}
        if encode:
            # The decision's time, source and reason are the review's (its head's).
            key = (result.decision, result.source, result.reason, applies)
            head_index = heads.get(key)
            if head_index is None:
                head = result.head()
                head["at"] = at
                head["applied"] = applies
                head_index = heads[key] = len(head_texts)
                head_texts.append(_json(head))
            data["head"] = head_index
            indexes = []
            for verdict in result.verdicts:
                index = known.get(id(verdict))
                if index is None:
                    index = known[id(verdict)] = _verdict_index(verdict, table, texts, encoded)
                indexes.append(index)
            data["verdicts"] = indexes
            if rows and len(indexes) != width:  # one statement: one shape of review
                raise ValueError("a batch's reviews must have as many verdicts each")
            width = len(indexes)
        else:
            if status:
                data.update(at=at, source=result.source[:80], reason=result.reason)
            review = result.details()
            review["at"] = at
            review["applied"] = applies
            data["details"] = {"review": review}
        rows.append(_Row(sub.id, sub.worker_id, result.decision, status, data))
    if not encode:
        return _Batch(rows, "", "", width)
    return _Batch(rows, _json_array(texts), _json_array(head_texts), width)


def _json_array(texts: list[str]) -> str:
    """The JSON array of already encoded ``texts``."""
    return "[" + ",".join(texts) + "]"


def _verdict_index(
    verdict: Verdict, table: dict[Hashable, int], texts: list[str], encoded: _Encoded
) -> int:
    """The index of ``verdict``'s JSON in ``texts``, added when new. Verdicts are told
    apart by their rule, decision, reason and numbers with their types (1 and 1.0 and
    True are equal in Python, not in JSON; -0.0 and 0.0 are equal in both, PostgreSQL
    stores either as 0.0), or by their JSON when a number is a list or an object. The
    key and the JSON are kept in ``encoded`` for the next batches."""
    entry = encoded.get(id(verdict))
    if entry is None or entry[0] is not verdict:
        numbers = verdict.numbers
        key: Hashable = (
            verdict.rule,
            verdict.decision,
            verdict.reason,
            *numbers.items(),
            *map(type, numbers.values()),
        )
        try:
            hash(key)
        except TypeError:  # unhashable: a list or an object among the numbers
            key = _json(verdict.as_json())
        entry = encoded[id(verdict)] = [verdict, key, key if isinstance(key, str) else None]
    key = entry[1]
    index = table.get(key)
    if index is None:
        if entry[2] is None:
            entry[2] = _json(verdict.as_json())
        index = table[key] = len(texts)
        texts.append(entry[2])
    return index


def _batch_apply(*, stage: Stage, batch: _Batch, summary: ReviewSummary) -> None:
    """Write one batch of rule decisions through ``campaigns.work.decisions``
    (``decisions_write_many``: a constant number of queries, the decision fields, the
    review, the workers' counters, the hand-off of approvals) and count what it wrote:
    the rows still submitted once locked are decided, held rows get their review only.
    """
    by_id = {row.pk: row for row in batch.rows}
    written = decisions_write_many(
        rows=batch.rows,
        parts=batch.verdicts,
        heads=batch.heads,
        width=batch.width,
        hands_on=stage.next_stage_id is not None,
    )
    for pk in written:
        row = by_id[pk]
        summary.reviewed += 1
        if row.status:
            summary.decisions[row.decision] += 1
        else:
            proposal = row.decision in (APPROVE, REJECT)
            summary.decisions[PROPOSED if proposal else row.decision] += 1


# One encoder for every row (``json.dumps`` with ``default`` builds one per call); the
# rows hold no cycles to look for, and PostgreSQL reads them without the spaces.
_ENCODER = json.JSONEncoder(default=str, check_circular=False, separators=(",", ":"))


def _json(value: Any) -> str:
    return _ENCODER.encode(value)
