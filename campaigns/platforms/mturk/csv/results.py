"""MTurk batch results CSV: import a requester's ``Batch_<id>_batch_results.csv`` into a
campaign.

The export (the same layout out of any campaign) is ``campaigns.platforms.mturk.csv.selectors``;
the review from the file's ``Approve`` / ``Reject`` columns ``mturk_csv_review``;
reading the file ``mturk_csv_file``; the layout itself (columns, dates, rewards)
``campaigns.platforms.mturk.csv.format``.

Import (``mturk_results_import``): every row is one assignment of one HIT (a row
without an ``AssignmentId`` is a HIT nobody worked on yet). HITs, items (the
``Input.*`` cells), workers (by ``WorkerId``) and assignments (answers from the
``Answer.*`` cells, status, times, work time) are stored in one transaction, or
nothing is: any bad cell raises ``UploadRejected`` naming the row and the column.
HITs and assignments are found again by their MTurk ids, so importing the same file
twice adds nothing; a later download of the same batch adds only the new assignments.
Decisions already recorded are not changed by a re-import.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from campaigns.models import (
    HIT,
    Assignment,
    AssignmentStatus,
    Campaign,
    CampaignWorker,
    HITItem,
    HITStatus,
    Item,
    ItemSource,
    ItemStatus,
    Provider,
    Stage,
    Worker,
)
from campaigns.models.workers import worker_pseudonym
from campaigns.platforms.mturk.csv.file import CsvProblems, CsvRow, chunks, csv_read, reject_one
from campaigns.platforms.mturk.csv.format import (
    ANSWER_PREFIX,
    INPUT_ID_KEYS,
    INPUT_PREFIX,
    STATUS_FROM_MTURK,
    CellError,
    mturk_reward_parse,
    mturk_time_parse,
    whole_number_parse,
)
from qaportal.errors import DomainError

BULK_BATCH_SIZE = 1000
MTURK_ID_MAX = 100
WORKER_ID_MAX = 200
ITEM_ID_MAX = 200
DECISION_SOURCE = "mturk"
# Per-assignment MTurk facts kept in ``review_details["mturk"]`` (and written back on export).
KEPT_ASSIGNMENT_COLUMNS = (
    "AutoApprovalTime",
    "AutoApprovalDelayInSeconds",
    "LifetimeApprovalRate",
    "Last30DaysApprovalRate",
    "Last7DaysApprovalRate",
)


# --- Import: parsing rows into HITs and assignments -------------------------------------


@dataclass
class _HitRow:
    line: int
    hit_id: str
    group_id: str
    reward: Decimal | None
    max_assignments: int
    created: datetime | None
    expires: datetime | None
    duration: int | None
    item_id: str
    item_data: dict[str, str]


@dataclass
class _AssignmentRow:
    line: int
    hit_id: str
    assignment_id: str
    worker_id: str
    status: str
    accepted: datetime
    submitted: datetime
    decided: datetime | None
    feedback: str
    work_seconds: int
    answers: dict[str, str]
    kept: dict[str, str]


@dataclass(frozen=True)
class MTurkImportResult:
    """What one import found in the file and what it added.

    ``hits``, ``assignments``, ``workers``: distinct ones in the file;
    ``work_time_seconds``: sum of ``WorkTimeInSeconds`` over the file's assignments;
    ``created``: assignments this import added (0 when the file was imported before).
    """

    hits: int
    assignments: int
    workers: int
    work_time_seconds: int
    created: int
    hits_created: int
    items_created: int
    workers_created: int

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def _cell(row: CsvRow, column: str, parse: Any, problems: CsvProblems, **kwargs: Any) -> Any:
    try:
        return parse(row.get(column), **kwargs)
    except CellError as exc:
        problems.add(row.line, column, str(exc))
        return None


def _id_cell(row: CsvRow, column: str, problems: CsvProblems, *, limit: int = MTURK_ID_MAX) -> str:
    value = row.get(column).strip()
    if len(value) > limit:
        problems.add(row.line, column, f"longer than {limit} characters")
    return value


def _hit_row(row: CsvRow, header: list[str], problems: CsvProblems) -> _HitRow:
    inputs = {
        name[len(INPUT_PREFIX) :]: row.get(name) for name in header if name.startswith(INPUT_PREFIX)
    }
    hit_id = _id_cell(row, "HITId", problems)
    item_id = ""
    for key in INPUT_ID_KEYS:
        if key in inputs:
            item_id = inputs.pop(key).strip()
            if len(item_id) > ITEM_ID_MAX:
                problems.add(
                    row.line, f"Input.{key}", f"an item id is at most {ITEM_ID_MAX} characters"
                )
            break
    max_assignments = _cell(row, "MaxAssignments", whole_number_parse, problems, minimum=1)
    return _HitRow(
        line=row.line,
        hit_id=hit_id,
        group_id=_id_cell(row, "HITTypeId", problems),
        reward=_cell(row, "Reward", mturk_reward_parse, problems),
        max_assignments=max_assignments or 1,
        created=_cell(row, "CreationTime", mturk_time_parse, problems),
        expires=_cell(row, "Expiration", mturk_time_parse, problems),
        duration=_cell(row, "AssignmentDurationInSeconds", whole_number_parse, problems),
        item_id=item_id or f"mturk:{hit_id}",
        item_data=inputs,
    )


def _assignment_row(row: CsvRow, header: list[str], problems: CsvProblems) -> _AssignmentRow | None:
    assignment_id = _id_cell(row, "AssignmentId", problems)
    worker_id = _id_cell(row, "WorkerId", problems, limit=WORKER_ID_MAX)
    if not worker_id:
        problems.add(row.line, "WorkerId", "an assignment needs the worker's id")
    raw_status = row.get("AssignmentStatus").strip()
    status = STATUS_FROM_MTURK.get(raw_status)
    if status is None:
        problems.add(
            row.line,
            "AssignmentStatus",
            f"{raw_status!r} is not one of {', '.join(STATUS_FROM_MTURK)}",
        )
    accepted = _cell(row, "AcceptTime", mturk_time_parse, problems)
    submitted = _cell(row, "SubmitTime", mturk_time_parse, problems)
    for column, value in (("AcceptTime", accepted), ("SubmitTime", submitted)):
        if value is None and row.get(column).strip() == "":
            problems.add(row.line, column, "an assignment needs this time")
    if accepted and submitted and submitted < accepted:
        problems.add(row.line, "SubmitTime", "the assignment was submitted before it was accepted")
    decided_column = "RejectionTime" if status == AssignmentStatus.REJECTED else "ApprovalTime"
    decided = (
        _cell(row, decided_column, mturk_time_parse, problems)
        if status in (AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)
        else None
    )
    work_seconds = _cell(row, "WorkTimeInSeconds", whole_number_parse, problems)
    if work_seconds is None and accepted and submitted:
        work_seconds = int((submitted - accepted).total_seconds())
    answers = {
        name[len(ANSWER_PREFIX) :]: row.get(name)
        for name in header
        if name.startswith(ANSWER_PREFIX)
    }
    if not (status and accepted and submitted and worker_id):
        return None
    return _AssignmentRow(
        line=row.line,
        hit_id=row.get("HITId").strip(),
        assignment_id=assignment_id,
        worker_id=worker_id,
        status=status,
        accepted=accepted,
        submitted=submitted,
        decided=decided,
        feedback=row.get("RequesterFeedback"),
        work_seconds=work_seconds or 0,
        answers=answers,
        kept={c: row.get(c) for c in KEPT_ASSIGNMENT_COLUMNS if row.get(c).strip()},
    )


def _parse_import(
    header: list[str],
    rows: list[CsvRow],
    problems: CsvProblems,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, _HitRow], list[_AssignmentRow]]:
    hits: dict[str, _HitRow] = {}
    assignments: list[_AssignmentRow] = []
    seen_assignments: dict[str, int] = {}
    seen_pairs: dict[tuple[str, str], int] = {}
    item_hits: dict[str, str] = {}
    for checked, row in enumerate(rows):
        if progress is not None and checked % 1000 == 0:
            progress(checked, len(rows))
        hit_id = row.get("HITId").strip()
        if not hit_id:
            problems.add(row.line, "HITId", "every row needs the HIT's id")
            continue
        # Every row's HIT cells are checked; the HIT's first row is the one kept.
        hit = _hit_row(row, header, problems)
        if hit_id not in hits:
            hits[hit_id] = hit
            other = item_hits.setdefault(hit.item_id, hit_id)
            if other != hit_id:
                problems.add(
                    row.line, "Input.id", f"the item {hit.item_id!r} is in HIT {other} already"
                )
        if not row.get("AssignmentId").strip():
            continue
        assignment = _assignment_row(row, header, problems)
        if assignment is None:
            continue
        earlier = seen_assignments.setdefault(assignment.assignment_id, row.line)
        if earlier != row.line:
            problems.add(row.line, "AssignmentId", f"the same assignment is on row {earlier}")
            continue
        pair = seen_pairs.setdefault((hit_id, assignment.worker_id), row.line)
        if pair != row.line:
            problems.add(
                row.line, "WorkerId", f"this worker has another assignment of the HIT on row {pair}"
            )
            continue
        assignments.append(assignment)
    return hits, assignments


def _check_campaign(campaign: Campaign) -> None:
    if campaign.provider != Provider.MTURK:
        raise DomainError(
            f"The campaign {campaign.slug!r} runs on {campaign.provider!r}; MTurk batch "
            "results are imported into MTurk campaigns only.",
            errors={"provider": [campaign.provider]},
        )


def mturk_import_stage(*, campaign: Campaign, position: int | None = None) -> Stage:
    """The stage an import goes to: the one at ``position``, else the campaign's first."""
    _check_campaign(campaign)
    stages = Stage.objects.filter(campaign=campaign).select_related("campaign")
    stage = (stages.filter(position=position) if position is not None else stages).first()
    if stage is None:
        wanted = f"at position {position}" if position is not None else "at all"
        raise DomainError(
            f"The campaign {campaign.slug!r} has no stage {wanted}.",
            errors={"stage": [str(position)]},
        )
    return stage


def mturk_results_import(
    *,
    campaign: Campaign,
    content: bytes,
    stage: Stage | None = None,
    filename: str = "the file",
    progress: Callable[[int, int], None] | None = None,
) -> MTurkImportResult:
    """Store an MTurk batch results file in ``campaign`` (provider mturk), all or nothing.

    New HITs go to ``stage`` (default: the campaign's first stage); each HIT gets
    one item made of its ``Input.*`` cells, named by ``Input.id`` (or
    ``Input.external_id``), else ``mturk:<HITId>``; an item of that name already in
    the stage is reused. Workers are found or created by ``WorkerId`` (provider mturk);
    assignments keep ``Answer.*`` as their answers, MTurk's status (Submitted,
    Approved, Rejected), times (PST/PDT to UTC), work time and requester feedback.
    What MTurk wrote is what MTurk knows: the workers' identity counts as confirmed.
    Items and answers are stored as MTurk recorded them, not validated by the task type.

    Idempotent by MTurk ids: HITs and assignments already stored are left as they
    are, and ``created`` counts only the assignments this call added. A HIT or an
    assignment id that belongs to another campaign (or HIT) is an error.

    Raises ``UploadRejected`` (nothing stored) naming row and column of each problem.
    Locking: the campaign row for the whole insert, so two imports of one campaign
    run one after the other. ``progress(rows_checked, rows)`` is called as the rows are
    checked, and once more when they are stored.
    """
    _check_campaign(campaign)
    stage = stage or mturk_import_stage(campaign=campaign)
    if stage.campaign_id != campaign.pk:
        raise DomainError("The stage belongs to another campaign.", errors={"stage": [stage.pk]})
    header, rows = csv_read(content, required=("HITId", "AssignmentId"))
    problems = CsvProblems()
    hit_rows, assignment_rows = _parse_import(header, rows, problems, progress)
    if problems:
        raise problems.reject(filename=filename, what="stored")
    try:
        with transaction.atomic():
            Campaign.objects.select_for_update().get(pk=campaign.pk)
            result = _store(
                campaign=campaign,
                stage=stage,
                hit_rows=hit_rows,
                assignment_rows=assignment_rows,
                problems=problems,
                filename=filename,
            )
        if progress is not None:
            progress(len(rows), len(rows))
    except IntegrityError as exc:
        raise reject_one(
            "Some of these HITs, items or assignments were stored by someone else while the "
            f"file was being imported ({exc.__class__.__name__}); nothing was stored. "
            "Import the file again."
        ) from exc
    return result


def _store(
    *,
    campaign: Campaign,
    stage: Stage,
    hit_rows: dict[str, _HitRow],
    assignment_rows: list[_AssignmentRow],
    problems: CsvProblems,
    filename: str,
) -> MTurkImportResult:
    hit_ids = list(hit_rows)
    existing_hits: dict[str, HIT] = {}
    for chunk in chunks(hit_ids):
        for hit in (
            HIT.objects.filter(provider=Provider.MTURK, provider_hit_id__in=chunk)
            .only("id", "provider_hit_id", "stage_id", "stage__campaign_id")
            .select_related("stage")
        ):
            existing_hits[str(hit.provider_hit_id)] = hit
    for hit_id, hit in existing_hits.items():
        if hit.stage.campaign_id != campaign.pk:
            problems.add(
                hit_rows[hit_id].line, "HITId", f"the HIT {hit_id} belongs to another campaign"
            )
    existing_assignments: dict[str, tuple[int, str]] = {}
    for chunk in chunks([a.assignment_id for a in assignment_rows]):
        for pk, aid, hit_pid in Assignment.objects.filter(
            provider=Provider.MTURK, provider_assignment_id__in=chunk
        ).values_list("id", "provider_assignment_id", "hit__provider_hit_id"):
            existing_assignments[str(aid)] = (pk, str(hit_pid))
    for a in assignment_rows:
        found = existing_assignments.get(a.assignment_id)
        if found is not None and found[1] != a.hit_id:
            problems.add(
                a.line, "AssignmentId", f"the assignment {a.assignment_id} is of another HIT"
            )
    if problems:
        raise problems.reject(filename=filename, what="stored")

    # Workers (all of the file, so the summary counts them), then their campaign places.
    worker_ids = sorted({a.worker_id for a in assignment_rows})
    workers: dict[str, int] = {}
    for chunk in chunks(worker_ids):
        workers.update(
            Worker.objects.filter(provider=Provider.MTURK, external_id__in=chunk).values_list(
                "external_id", "id"
            )
        )
    new_workers = [
        Worker(
            provider=Provider.MTURK,
            external_id=w,
            pseudonym=worker_pseudonym(provider=Provider.MTURK, external_id=w),
        )
        for w in worker_ids
        if w not in workers
    ]
    Worker.objects.bulk_create(new_workers, batch_size=BULK_BATCH_SIZE)
    workers.update({w.external_id: w.pk for w in new_workers})
    CampaignWorker.objects.bulk_create(
        [CampaignWorker(campaign=campaign, worker_id=pk) for pk in workers.values()],
        ignore_conflicts=True,
        batch_size=BULK_BATCH_SIZE,
    )

    new_assignments = [a for a in assignment_rows if a.assignment_id not in existing_assignments]
    per_hit = Counter(a.hit_id for a in new_assignments)

    # Items and HITs new to qaportal.
    new_hit_rows = [h for h in hit_rows.values() if h.hit_id not in existing_hits]
    items: dict[str, int] = {}
    for chunk in chunks([h.item_id for h in new_hit_rows]):
        items.update(
            Item.objects.filter(stage=stage, external_id__in=chunk).values_list("external_id", "id")
        )
    new_items = [
        Item(
            stage=stage,
            external_id=h.item_id,
            data=h.item_data,
            source=ItemSource.UPLOADED,
            status=ItemStatus.PUBLISHED,
        )
        for h in new_hit_rows
        if h.item_id not in items
    ]
    Item.objects.bulk_create(new_items, batch_size=BULK_BATCH_SIZE)
    items.update({i.external_id: i.pk for i in new_items})
    new_hits = []
    for h in new_hit_rows:
        taken = per_hit.get(h.hit_id, 0)
        max_assignments = max(h.max_assignments, taken, 1)
        status = HITStatus.PUBLISHED
        if taken >= max_assignments:
            status = HITStatus.COMPLETED
        elif h.expires is not None and h.expires <= timezone.now():
            status = HITStatus.EXPIRED
        new_hits.append(
            HIT(
                stage=stage,
                provider=Provider.MTURK,
                provider_hit_id=h.hit_id,
                provider_group_id=h.group_id,
                max_assignments=max_assignments,
                places_left=max_assignments - taken,
                reward=h.reward if h.reward is not None else stage.reward,
                status=status,
                published_at=h.created,
                expires_at=h.expires,
            )
        )
    HIT.objects.bulk_create(new_hits, batch_size=BULK_BATCH_SIZE)
    HITItem.objects.bulk_create(
        [
            HITItem(hit=hit, item_id=items[hit_rows[str(hit.provider_hit_id)].item_id], position=0)
            for hit in new_hits
        ],
        batch_size=BULK_BATCH_SIZE,
    )
    hit_pks = {str(h.provider_hit_id): h.pk for h in new_hits}
    for hit_id, hit in existing_hits.items():
        hit_pks[hit_id] = hit.pk
        if per_hit.get(hit_id):
            HIT.objects.filter(pk=hit.pk).update(
                places_left=Greatest(F("places_left") - per_hit[hit_id], 0),
                max_assignments=Greatest(F("max_assignments"), per_hit[hit_id]),
            )

    Assignment.objects.bulk_create(
        (
            _assignment(
                a, hit_pk=hit_pks[a.hit_id], worker_pk=workers[a.worker_id], hit=hit_rows[a.hit_id]
            )
            for a in new_assignments
        ),
        batch_size=BULK_BATCH_SIZE,
    )
    _worker_counts_add(new_assignments, workers)
    return MTurkImportResult(
        hits=len(hit_rows),
        assignments=len(assignment_rows),
        workers=len(worker_ids),
        work_time_seconds=sum(a.work_seconds for a in assignment_rows),
        created=len(new_assignments),
        hits_created=len(new_hits),
        items_created=len(new_items),
        workers_created=len(new_workers),
    )


def _assignment(a: _AssignmentRow, *, hit_pk: int, worker_pk: int, hit: _HitRow) -> Assignment:
    decided = a.status in (AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)
    return Assignment(
        hit_id=hit_pk,
        worker_id=worker_pk,
        provider=Provider.MTURK,
        provider_assignment_id=a.assignment_id,
        status=a.status,
        answers=a.answers,
        accepted_at=a.accepted,
        deadline=a.accepted + timedelta(seconds=hit.duration) if hit.duration else None,
        submitted_at=a.submitted,
        work_seconds=a.work_seconds,
        decided_at=a.decided if decided else None,
        decision_source=DECISION_SOURCE if decided else "",
        feedback=a.feedback,
        review_details={
            "identity": {"status": "confirmed", "source": "mturk batch results"},
            "mturk": a.kept,
        },
    )


def _worker_counts_add(assignments: list[_AssignmentRow], workers: dict[str, int]) -> None:
    counts: dict[int, Counter[str]] = defaultdict(Counter)
    for a in assignments:
        pk = workers[a.worker_id]
        counts[pk]["submitted_count"] += 1
        if a.status == AssignmentStatus.APPROVED:
            counts[pk]["approved_count"] += 1
        elif a.status == AssignmentStatus.REJECTED:
            counts[pk]["rejected_count"] += 1
    # One UPDATE per distinct set of increments, not per worker.
    groups: dict[tuple[tuple[str, int], ...], list[int]] = defaultdict(list)
    for pk, counter in counts.items():
        groups[tuple(sorted(counter.items()))].append(pk)
    for increments, pks in groups.items():
        Worker.objects.filter(pk__in=pks).update(**{n: F(n) + v for n, v in increments})
