"""Reads for the review automation and the quality dashboard.

Loading is bulk: a stage's stored assignments in one query fetched
``LOAD_CHUNK`` rows at a time (``values_list``, no model instances), its HITs'
items in one query. The dashboard's reads over a whole stage (quality, agreement,
label triples, the agreement series) go through ``stage_submission_chunks``: one
chunk of answers with its HITs' items at a time, keeping only what the figures need
(per worker counts and work times, the labels as integer columns), so their memory
does not grow with the stored answers (a Mintaka stage's answers are ~1.2 KB each).
Dashboard numbers come from the pure functions of ``validation.agreement`` /
``validation.aggregation`` over the categorical projection of
``validation.projections``.
"""

from __future__ import annotations

import statistics
from array import array
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import numpy as np
from django.db.models import Q

from campaigns.models import HANDED_IN, Assignment, AssignmentStatus, HITItem, Item, Stage, Worker
from validation.aggregation import MajorityVote, majority_vote
from validation.agreement import krippendorff_alpha, percent_agreement
from validation.gold import gold_accuracy
from validation.labels import LabelTable
from validation.projections import categorical_label, entries_by_item
from validation.rules.facts import GoldTally, ItemRef, Submission, facts_build
from validation.rules.settings import RULES, params_of
from validation.ten_way import ten_way_gold_labels, ten_way_settings

LOAD_CHUNK = 10_000
DEFAULT_WAGE_FLOOR = Decimal("15.00")  # USD per hour


def stage_items_by_hit(
    *, stage: Stage, hit_ids: Iterable[int] | None = None
) -> dict[int, list[ItemRef]]:
    """``{hit id: [ItemRef]}`` in HIT order, with each item's gold; one query."""
    rows = HITItem.objects.filter(hit__stage=stage)
    if hit_ids is not None:
        rows = rows.filter(hit_id__in=list(hit_ids))
    out: dict[int, list[ItemRef]] = defaultdict(list)
    for hit_id, item_id, external_id, gold in rows.order_by("hit_id", "position").values_list(
        "hit_id", "item_id", "item__external_id", "item__gold"
    ):
        out[hit_id].append(ItemRef(id=item_id, external_id=external_id, gold=gold))
    return dict(out)


_FIELDS = (
    "pk",
    "hit_id",
    "worker_id",
    "status",
    "answers",
    "work_seconds",
    "telemetry",
    "submitted_at",
    "provider",
    "llm_flag",
)


def stage_submissions(
    *, stage: Stage, scope: Q | None = None, few: bool = False
) -> list[Submission]:
    """The stage's stored (submitted, approved, rejected) assignments as ``Submission``s,
    in id order; one query, fetched ``LOAD_CHUNK`` rows at a time (a server-side cursor
    on PostgreSQL); ``scope`` narrows them further. ``few``: the scope keeps a handful
    (one HIT's and one worker's), read at once without the cursor's extra statements."""
    base = Assignment.objects.filter(hit__stage=stage, status__in=HANDED_IN)
    if scope is not None:
        base = base.filter(scope)
    query = base.order_by("pk").values_list(*_FIELDS)
    rows: Iterable[Any] = query if few else query.iterator(chunk_size=LOAD_CHUNK)
    return [_submission(row) for row in rows]


def _submission(row: Sequence[Any]) -> Submission:
    """A ``Submission`` of one ``values_list(*_FIELDS)`` row."""
    pk, hit_id, worker_id, status, answers, seconds, telemetry, submitted_at, provider, flag = row
    return Submission(
        id=pk,
        hit_id=hit_id,
        worker_id=worker_id,
        status=status,
        answers=answers,
        work_seconds=seconds,
        telemetry=telemetry or {},
        submitted_at=submitted_at,
        provider=provider,
        llm_flag=flag,
    )


def stage_submission_chunks(
    *, stage: Stage, scope: Q | None = None, chunk: int | None = None
) -> Iterator[tuple[dict[int, list[ItemRef]], list[Submission]]]:
    """The stage's stored assignments as ``stage_submissions`` reads them (same rows,
    same id order), ``chunk`` at a time, each chunk with its HITs' items
    (``stage_items_by_hit`` of the chunk's HITs): a read over a whole stage holds one
    chunk of answers at a time, not the stage's. One query for the rows (a server-side
    cursor on PostgreSQL) and one per chunk for the items. ``chunk``: ``LOAD_CHUNK``
    unless given."""
    chunk = chunk or LOAD_CHUNK
    base = Assignment.objects.filter(hit__stage=stage, status__in=HANDED_IN)
    if scope is not None:
        base = base.filter(scope)
    rows = base.order_by("pk").values_list(*_FIELDS).iterator(chunk_size=chunk)
    batch: list[Submission] = []
    for row in rows:
        batch.append(_submission(row))
        if len(batch) >= chunk:
            yield stage_items_by_hit(stage=stage, hit_ids={s.hit_id for s in batch}), batch
            batch = []
    if batch:
        yield stage_items_by_hit(stage=stage, hit_ids={s.hit_id for s in batch}), batch


def worker_gold_accuracy(*, stage: Stage, sentence_threshold: float = 0.5) -> dict[int, GoldTally]:
    """Per worker: their answers on the stage's gold items, right or wrong, in order."""
    submissions = stage_submissions(stage=stage)
    facts = facts_build(
        task_type=stage.task_type,
        items_by_hit=stage_items_by_hit(stage=stage),
        submissions=submissions,
        rules=[{"rule": "gold_accuracy", "sentence_threshold": sentence_threshold}],
    )
    return {w: t for (thr, w), t in facts.gold.items() if thr == sentence_threshold}


# --- Dashboard ---------------------------------------------------------------------------


def _stage_option(stage: Stage, name: str) -> dict[str, Any]:
    for entry in stage.review_rules or []:
        if isinstance(entry, Mapping) and entry.get("rule") == name:
            return params_of(entry, RULES)
    return params_of({"rule": name}, RULES)


class _LabelColumns:
    """``(item id, worker id, label)`` triples kept as integer columns (24 bytes a label
    instead of some 250 as tuples with a seen-set): the first label of each (item,
    worker) counts, as in ``stage_label_triples``."""

    def __init__(self) -> None:
        self.items = array("q")
        self.workers = array("q")
        self.codes = array("q")
        self.domain: list[Hashable] = []
        # Keyed with the type: 1, 1.0 and True are one dict key but three labels.
        self._code: dict[tuple[type, Hashable], int] = {}

    def add(self, item_id: int, worker_id: int, label: Hashable) -> None:
        key = (type(label), label)
        code = self._code.get(key)
        if code is None:
            code = self._code[key] = len(self.domain)
            self.domain.append(label)
        self.items.append(item_id)
        self.workers.append(worker_id)
        self.codes.append(code)

    def table(self) -> LabelTable | None:
        """The ``LabelTable`` of the kept triples, in order (None when there are none)."""
        if not self.items:
            return None
        items = np.frombuffer(self.items, dtype=np.int64)
        workers = np.frombuffer(self.workers, dtype=np.int64)
        codes = np.frombuffer(self.codes, dtype=np.int64)
        pairs = np.stack([items, workers], axis=1)
        _, first = np.unique(pairs, axis=0, return_index=True)
        keep = np.sort(first)
        domain = np.empty(len(self.domain), dtype=object)
        for code, label in enumerate(self.domain):
            domain[code] = label  # one by one: a tuple label stays one cell
        return LabelTable.from_columns(items[keep], workers[keep], domain[codes[keep]])


def _labels_add(
    task_type: str,
    dimension: str,
    items: Mapping[int, list[ItemRef]],
    submissions: Iterable[Submission],
    include_rejected: bool,
    add: Any,
) -> None:
    """``add(item id, worker id, label)`` for each categorical label of
    ``submissions``, in order (rejected work left out unless ``include_rejected``);
    uses a submission's ``entries`` when ``facts_build`` has filled them."""
    for sub in submissions:
        if sub.status == AssignmentStatus.REJECTED and not include_rejected:
            continue
        entries = sub.entries or entries_by_item(
            sub.answers,
            [{"id": i.id, "external_id": i.external_id} for i in items.get(sub.hit_id, [])],
        )
        for item_id, entry in entries.items():
            label = categorical_label(task_type, entry, dimension=dimension)
            if label is not None:
                add(item_id, sub.worker_id, label)


def stage_label_triples(
    *,
    stage: Stage,
    include_rejected: bool = False,
    dimension: str | None = None,
    loaded: tuple[Mapping[int, list[ItemRef]], Sequence[Submission]] | None = None,
) -> list[tuple[int, int, Hashable]]:
    """``(item id, worker id, label)`` of the stage's stored answers, categorical
    projection per task type (``validation.projections.categorical_label``).
    ``loaded``: the stage's ``stage_items_by_hit`` and ``stage_submissions`` when the
    caller has them already, so they are not read twice; else the answers are read a
    chunk at a time (``stage_submission_chunks``)."""
    dimension = dimension or _stage_option(stage, "final_labels")["dimension"]
    triples: list[tuple[int, int, Hashable]] = []
    seen: set[tuple[int, int]] = set()

    def add(item_id: int, worker_id: int, label: Hashable) -> None:
        # A worker answers an item once per stage; should a HIT repeat an item
        # (reused gold), the first answer counts.
        if (item_id, worker_id) not in seen:
            seen.add((item_id, worker_id))
            triples.append((item_id, worker_id, label))

    chunks = [loaded] if loaded is not None else stage_submission_chunks(stage=stage)
    for items, submissions in chunks:
        _labels_add(stage.task_type, dimension, items, submissions, include_rejected, add)
    return triples


@dataclass(frozen=True)
class AgreementPoint:
    """Agreement over the answers submitted up to ``at``."""

    at: datetime
    alpha: float | None
    percent_agreement: float | None
    items: int  # items with at least one label by then


def stage_agreement_series(*, stage: Stage, points: int = 12) -> list[AgreementPoint]:
    """How the stage's agreement developed: Krippendorff's alpha and percent agreement
    over the answers submitted up to each of ``points`` moments, spread evenly over the
    submissions (by count, so a busy day gets more points than a quiet week). The last
    point is the stage's agreement now. Rejected work is left out, as in
    ``stage_agreement``. Empty when the task type has no categorical answers."""
    dimension = _stage_option(stage, "final_labels")["dimension"]
    timed: list[tuple[datetime, int, int, Hashable]] = []
    seen: set[tuple[int, int]] = set()
    for items, submissions in stage_submission_chunks(stage=stage):
        for sub in submissions:
            if sub.status == AssignmentStatus.REJECTED or sub.submitted_at is None:
                continue
            refs = [{"id": i.id, "external_id": i.external_id} for i in items.get(sub.hit_id, [])]
            for item_id, entry in entries_by_item(sub.answers, refs).items():
                label = categorical_label(stage.task_type, entry, dimension=dimension)
                if label is not None and (item_id, sub.worker_id) not in seen:
                    seen.add((item_id, sub.worker_id))
                    timed.append((sub.submitted_at, item_id, sub.worker_id, label))
    if not timed:
        return []
    timed.sort(key=lambda t: t[0])
    cuts = sorted({round(len(timed) * (k + 1) / max(points, 1)) for k in range(points)} - {0})
    series = []
    for cut in cuts:
        table = LabelTable.from_triples([(i, w, label) for _, i, w, label in timed[:cut]])
        series.append(
            AgreementPoint(
                at=timed[cut - 1][0],
                alpha=krippendorff_alpha(table),
                percent_agreement=percent_agreement(table),
                items=len(table.items),
            )
        )
    return series


@dataclass(frozen=True)
class AgreementSummary:
    alpha: float | None  # Krippendorff's alpha, nominal
    percent_agreement: float | None
    items: int
    annotators: int
    labels: int
    per_worker: dict[int, float] = field(default_factory=dict)  # worker -> agreement with peers


def stage_agreement(
    *,
    stage: Stage,
    include_rejected: bool = False,
    loaded: tuple[Mapping[int, list[ItemRef]], Sequence[Submission]] | None = None,
) -> AgreementSummary:
    """Agreement over the stage's categorical answers, and each worker's agreement with
    peers: the share of other annotators giving the worker's label on the worker's
    items (items with ≥ 2 labels), averaged over those items. ``loaded`` as in
    ``stage_label_triples``; without it the answers are read a chunk at a time and the
    labels kept as integer columns."""
    dimension = _stage_option(stage, "final_labels")["dimension"]
    columns = _LabelColumns()
    chunks = [loaded] if loaded is not None else stage_submission_chunks(stage=stage)
    for items, submissions in chunks:
        _labels_add(stage.task_type, dimension, items, submissions, include_rejected, columns.add)
    return _agreement_summary(columns.table())


def _agreement_summary(table: LabelTable | None) -> AgreementSummary:
    if table is None:
        return AgreementSummary(None, None, 0, 0, 0)
    counts = table.value_counts
    m = counts.sum(axis=1)
    same = counts[table.item_code, table.label_code] - 1
    others = m[table.item_code] - 1
    ok = others > 0
    per = defaultdict(list)
    for code, share in zip(table.annotator_code[ok], (same[ok] / others[ok]), strict=True):
        per[int(code)].append(float(share))
    return AgreementSummary(
        alpha=krippendorff_alpha(table),
        percent_agreement=percent_agreement(table),
        items=len(table.items),
        annotators=len(table.annotators),
        labels=len(table.labels),
        per_worker={table.annotators[c]: float(np.mean(v)) for c, v in per.items()},  # type: ignore[misc]
    )


def hourly_wage(reward: Decimal, median_seconds: float | None) -> Decimal | None:
    """Reward per assignment over the median work time, per hour, to the cent."""
    if not median_seconds:
        return None
    wage = reward * Decimal(3600) / Decimal(str(median_seconds))
    return wage.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


@dataclass(frozen=True)
class WorkerQuality:
    worker_id: int
    pseudonym: str
    submitted: int  # stored assignments in the stage
    approved: int
    rejected: int
    approval_rate: float | None  # approved / decided
    gold_correct: int
    gold_total: int
    gold_accuracy: float | None
    agreement: float | None
    median_work_seconds: float | None
    hourly_wage: Decimal | None
    below_wage_floor: bool


@dataclass(frozen=True)
class StageQuality:
    stage_id: int
    assignments: int
    approved: int
    rejected: int
    held: int  # submitted with a rule "hold"
    approval_rate: float | None
    gold_correct: int
    gold_total: int
    gold_accuracy: float | None
    agreement: AgreementSummary
    median_work_seconds: float | None
    hourly_wage: Decimal | None
    wage_floor: Decimal
    below_wage_floor: bool
    workers: list[WorkerQuality]


def _rate(a: int, b: int) -> float | None:
    return a / b if b else None


@dataclass
class _WorkerTally:
    """One worker's share of a stage, counted chunk by chunk."""

    submitted: int = 0
    approved: int = 0
    rejected: int = 0
    gold_correct: int = 0
    gold_total: int = 0
    times: list[int] = field(default_factory=list)


def stage_quality(*, stage: Stage, wage_floor: Decimal = DEFAULT_WAGE_FLOOR) -> StageQuality:
    """Dashboard numbers of a stage, overall and per worker: agreement, gold accuracy,
    approval rate, median work time, effective hourly wage (reward over the median
    work time) flagged under ``wage_floor`` (default $15/h).

    The answers are read a chunk at a time (``stage_submission_chunks``) and each chunk
    is reduced to per-worker counts, work times and label columns before the next is
    read: the memory is the stage's labels and times, not its answers."""
    gold_threshold = float(
        next(
            (
                params_of(r)["sentence_threshold"]
                for r in stage.review_rules or []
                if isinstance(r, Mapping) and r.get("rule") in ("gold_accuracy", "gold_disqualify")
            ),
            0.5,
        )
    )
    dimension = _stage_option(stage, "final_labels")["dimension"]
    rules = [{"rule": "gold_accuracy", "sentence_threshold": gold_threshold}]
    by_worker: dict[int, _WorkerTally] = defaultdict(_WorkerTally)
    columns = _LabelColumns()
    assignments = 0
    for items_by_hit, submissions in stage_submission_chunks(stage=stage):
        # Gold outcomes only count per worker, so a chunk's facts add up to the stage's.
        facts = facts_build(
            task_type=stage.task_type,
            items_by_hit=items_by_hit,
            submissions=submissions,
            rules=rules,
        )
        for (_, worker_id), gold in facts.gold.items():
            by_worker[worker_id].gold_correct += gold.correct
            by_worker[worker_id].gold_total += gold.total
        for sub in submissions:
            tally = by_worker[sub.worker_id]
            tally.submitted += 1
            tally.approved += sub.status == AssignmentStatus.APPROVED
            tally.rejected += sub.status == AssignmentStatus.REJECTED
            if sub.work_seconds is not None:
                tally.times.append(sub.work_seconds)
        # The entries facts_build filled, read once for both.
        _labels_add(stage.task_type, dimension, items_by_hit, submissions, False, columns.add)
        assignments += len(submissions)
    agreement = _agreement_summary(columns.table())
    del columns
    names = dict(Worker.objects.filter(pk__in=list(by_worker)).values_list("pk", "pseudonym"))
    held = Assignment.objects.filter(
        hit__stage=stage, status=AssignmentStatus.SUBMITTED, review_details__review__decision="hold"
    ).count()
    reward = stage.reward
    workers = []
    for worker_id, t in sorted(by_worker.items()):
        median = statistics.median(t.times) if t.times else None
        wage = hourly_wage(reward, median)
        workers.append(
            WorkerQuality(
                worker_id=worker_id,
                pseudonym=names.get(worker_id, ""),
                submitted=t.submitted,
                approved=t.approved,
                rejected=t.rejected,
                approval_rate=_rate(t.approved, t.approved + t.rejected),
                gold_correct=t.gold_correct,
                gold_total=t.gold_total,
                gold_accuracy=gold_accuracy(t.gold_correct, t.gold_total),
                agreement=agreement.per_worker.get(worker_id),
                median_work_seconds=median,
                hourly_wage=wage,
                below_wage_floor=wage is not None and wage < wage_floor,
            )
        )
    approved = sum(w.approved for w in workers)
    rejected = sum(w.rejected for w in workers)
    times = [s for t in by_worker.values() for s in t.times]
    median = statistics.median(times) if times else None
    wage = hourly_wage(reward, median)
    gold_correct = sum(w.gold_correct for w in workers)
    gold_total = sum(w.gold_total for w in workers)
    return StageQuality(
        stage_id=stage.pk,
        assignments=assignments,
        approved=approved,
        rejected=rejected,
        held=held,
        approval_rate=_rate(approved, approved + rejected),
        gold_correct=gold_correct,
        gold_total=gold_total,
        gold_accuracy=_rate(gold_correct, gold_total),
        agreement=agreement,
        median_work_seconds=median,
        hourly_wage=wage,
        wage_floor=wage_floor,
        below_wage_floor=wage is not None and wage < wage_floor,
        workers=workers,
    )


def _writer_label(stage: Stage, data: Mapping[str, Any]) -> Hashable | None:
    value = data.get("writer_correct", data.get("writer_label"))
    return None if value is None else str(value)


def _ten_way_gold_triples(
    stage: Stage, triples: list[tuple[int, int, Hashable]]
) -> list[tuple[int, int, Hashable]]:
    """With ``config.ten_way`` (Nangia et al. §5): an item of the 10-way subset votes its
    gold with the sampled ``gold_votes`` validators only (the rest are held out for the
    human-performance estimate, ``validation.selectors.ten_way``)."""
    settings = ten_way_settings(stage.config)
    if settings is None:
        return triples
    by_item: dict[int, list[tuple[int, int, Hashable]]] = defaultdict(list)
    for t in triples:
        by_item[t[0]].append(t)
    out: list[tuple[int, int, Hashable]] = []
    for item_id, rows in by_item.items():
        if len(rows) < settings["annotators"]:
            out += rows
            continue
        voters = ten_way_gold_labels({item_id: [r[2] for r in rows]}, **_gold_args(settings))
        wanted = Counter(voters[item_id])
        for row in rows:
            if wanted[row[2]] > 0:
                wanted[row[2]] -= 1
                out.append(row)
    return out


def _gold_args(settings: Mapping[str, int]) -> dict[str, int]:
    return {"gold_votes": settings["gold_votes"], "seed": 0}


def stage_final_labels(
    *,
    stage: Stage,
    count_writer: bool | None = None,
    discard_labels: Sequence[Hashable] | None = None,
    require: str | None = None,
) -> MajorityVote:
    """Final label per item id by majority vote over the stage's non-rejected answers.

    Options come from the stage's ``{"rule": "final_labels", ...}`` entry, the
    keyword arguments overriding them. ``count_writer`` (Nangia et al.) adds the
    writer's label (item data ``writer_correct`` or ``writer_label``) as one vote;
    ``discard_labels`` (e.g. ``["invalid"]``) and ``require="absolute"`` discard
    items as ``validation.aggregation.majority_vote`` does.
    """
    opts = _stage_option(stage, "final_labels")
    count_writer = opts["count_writer"] if count_writer is None else count_writer
    discard = list(opts["discard_labels"] if discard_labels is None else discard_labels)
    triples = _ten_way_gold_triples(stage, stage_label_triples(stage=stage))
    writer: dict[int, Hashable] = {}
    if count_writer:
        for item_id, data in Item.objects.filter(stage=stage).values_list("pk", "data"):
            label = _writer_label(stage, data or {})
            if label is not None:
                writer[item_id] = label
    if not triples and not writer:
        return MajorityVote(labels={}, discarded={}, majority={})
    return majority_vote(
        triples,
        writer_labels=writer or None,
        ties=opts["ties"],
        require="absolute" if (require or opts["require"]) == "absolute" else "plurality",
        discard_labels=[str(x) for x in discard],
    )
