"""Graded writing rounds (Nangia et al., 2021): at the end of a round the writers'
examples, graded with the rubric (``rubric_evaluation``) by experts or promoted crowd
workers in a grading stage, are averaged per writer; writers are ranked, the top share
(default 80 %) qualify for the next round (a qualification the next round's stage
requires), qualifiers get the round's bonus, and every writer gets a feedback message
from a template with their numbers against the average. The requester previews the
outcomes and messages (``round_preview``) before anything is granted, paid or sent
(``round_close``).

An example's score is the mean over its graders (a writer never counts as their own
grader) of the whole rubric (``rubric_example_score``, 0 to 1): an example graded
ambiguous or unanswerable scores 0, otherwise reading depth, creativity and
distracting options count equally; "answerable" and "distracting options" are also
reported as shares.

A round is not closed on too little (``round_close_problems``): when an example of the
round has fewer grades than its grading stage asks for (``assignments_per_hit``: three
experts, or five crowd graders, each example, Nangia et al. §3.3), when nobody would
qualify, or when the writers promoted to
grade are fewer than the next grading stage needs (its grades per example, plus one
when the graders also write: nobody grades their own work).

``min_examples`` (§3.3: "evaluating at least four questions per worker"): a writer with
fewer graded examples is not ranked, so does not qualify, and is told so.

Crowd grading (Nangia's CROWD arm): with ``graders_share`` (e.g. 0.2) the top share of
the round's writers are also promoted to grade the next round: they get the round's
graders qualification, which a grading stage requires with ``{"graders_stage": <writing
stage id>, "round": n}``; the grading stage's ``assignments_per_hit`` is K, the grades
per example that are averaged, and nobody is given their own examples to grade
(``allocation``) nor counted if they were.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from string import Template
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from campaigns.design.platform import WorkerMessage, platform_for
from campaigns.models import (
    Assignment,
    AssignmentStatus,
    Item,
    Stage,
    Worker,
)
from campaigns.tasktypes.base import answer_for_item
from campaigns.tasktypes.rubric_evaluation import ORDINAL, rubric_example_score, rubric_score
from campaigns.workforce.qualification_types import (
    round_graders_type,
    round_qualification_type,
)
from qaportal.errors import DomainError

GRADED = (AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED)
DEFAULT_TEMPLATE = (
    "Round $round of “$stage” is graded. Your $examples example(s) scored $score on "
    "average (the average writer: $average); you ranked $rank of $writers. $verdict "
    "Reading needed: $depth (average $depth_average); creativity: $creativity (average "
    "$creativity_average). "
    "Graders found $ambiguous_share of your examples ambiguous and $distracting_share had "
    "distracting wrong options. Your best example: “$best”. Your weakest: “$worst”."
)


@dataclass
class RoundOutcome:
    worker_id: int
    pseudonym: str
    examples: int
    score: float | None
    rank: int = 0
    qualified: bool = False
    grader: bool = False
    ambiguous_share: float = 0.0
    distracting_share: float = 0.0
    best: str = ""
    worst: str = ""
    # Per rubric dimension (reading_depth, creativity): the writer's mean score.
    dimensions: dict[str, float] = field(default_factory=dict)
    message: str = ""
    assignment_ids: list[int] = field(default_factory=list)
    # Of the writer's examples, those with fewer grades than the grading stage asks for.
    under_graded: int = 0


def _round_writing(*, stage: Stage, round_number: int) -> list[Assignment]:
    """The round's writing: approved work of ``stage`` not in an earlier round."""
    return [
        a
        for a in Assignment.objects.filter(hit__stage=stage, status=AssignmentStatus.APPROVED)
        .select_related("worker")
        .order_by("pk")
        if (a.review_details or {}).get("round") in (None, round_number)
    ]


def _example_text(item: Item) -> str:
    data = item.data or {}
    return str(data.get("question") or data.get("canonical_question") or item.external_id)[:200]


def round_outcomes(
    *,
    stage: Stage,
    grading_stage: Stage,
    round_number: int,
    qualify_share: float = 0.8,
    template: str = DEFAULT_TEMPLATE,
    graders_share: float = 0.0,
    min_examples: int = 1,
) -> list[RoundOutcome]:
    """Who wrote what in the round, how it was graded, the ranking, who qualifies, who
    is promoted to grade, and the message each writer would get; nothing is written.
    Writers with fewer than ``min_examples`` graded examples are not ranked."""
    if not 0 < qualify_share <= 1:
        raise DomainError("The share that qualifies is more than 0 and at most 1.")
    if not 0 <= graders_share <= 1:
        raise DomainError("The share promoted to grade is from 0 to 1.")
    if grading_stage.campaign_id != stage.campaign_id:
        raise DomainError("The grading stage is not one of this campaign's.")
    if min_examples < 1:
        raise DomainError("A writer needs at least one graded example to be ranked.")
    writing = _round_writing(stage=stage, round_number=round_number)
    by_assignment = {a.pk: a for a in writing}
    examples = list(
        Item.objects.filter(stage=grading_stage, source_assignment_id__in=list(by_assignment))
    )
    grades: dict[int, list[dict[str, Any]]] = defaultdict(list)
    # distinct: the join through the HIT's items would repeat a grader's assignment once
    # per example it holds, and a grade would be counted that many times.
    grading = (
        Assignment.objects.filter(
            hit__stage=grading_stage, hit__items__in=examples, status__in=GRADED
        )
        .distinct()
        .prefetch_related("hit__items")
    )
    for g in grading:
        for item in g.hit.items.all():
            writer = by_assignment.get(item.source_assignment_id or 0)
            if writer is None or writer.worker_id == g.worker_id:
                continue  # nobody grades their own work
            entry = answer_for_item(
                g.answers or {}, {"id": item.pk, "external_id": item.external_id}
            )
            if entry:
                grades[item.pk].append(entry)
    per_writer: dict[int, list[tuple[Item, float, dict[str, Any]]]] = defaultdict(list)
    dims: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    under_graded: dict[int, int] = defaultdict(int)
    for item in examples:
        entries = grades.get(item.pk, [])
        scores = [x for e in entries if (x := rubric_example_score(e)) is not None]
        if len(scores) < grading_stage.assignments_per_hit:
            under_graded[by_assignment[item.source_assignment_id or 0].worker_id] += 1
        if not scores:
            continue
        writer = by_assignment[item.source_assignment_id or 0]
        for d in sorted(ORDINAL):
            values = [v for e in entries if (v := rubric_score(d, str(e.get(d) or ""))) is not None]
            if values:
                dims[writer.worker_id][d].append(sum(values) / len(values))
        flags = {
            "ambiguous": sum(1 for e in entries if e.get("answerable") != "yes") / len(entries),
            "distracting": sum(1 for e in entries if e.get("distracting_options") == "yes")
            / len(entries),
        }
        per_writer[writer.worker_id].append((item, sum(scores) / len(scores), flags))
    workers = {a.worker_id: a.worker for a in writing}
    outcomes = []
    for worker_id, worker in workers.items():
        rows = per_writer.get(worker_id, [])
        ordered = sorted(rows, key=lambda r: r[1])
        outcomes.append(
            RoundOutcome(
                worker_id=worker_id,
                pseudonym=worker.pseudonym,
                examples=len(rows),
                score=round(sum(r[1] for r in rows) / len(rows), 3) if rows else None,
                ambiguous_share=round(sum(r[2]["ambiguous"] for r in rows) / len(rows), 3)
                if rows
                else 0.0,
                distracting_share=round(sum(r[2]["distracting"] for r in rows) / len(rows), 3)
                if rows
                else 0.0,
                best=_example_text(ordered[-1][0]) if rows else "",
                worst=_example_text(ordered[0][0]) if rows else "",
                dimensions={
                    d: round(sum(v) / len(v), 3) for d, v in dims.get(worker_id, {}).items() if v
                },
                assignment_ids=[a.pk for a in writing if a.worker_id == worker_id],
                under_graded=under_graded.get(worker_id, 0),
            )
        )
    ranked = sorted(
        (o for o in outcomes if o.score is not None and o.examples >= min_examples),
        key=lambda o: (-(o.score or 0), o.pseudonym),
    )
    # The top share, rounded down (80 % of 9 writers is 7), but at least one writer.
    places = max(1, math.floor(qualify_share * len(ranked) + 1e-9)) if ranked else 0
    graders = math.floor(graders_share * len(ranked) + 1e-9) if graders_share else 0
    if graders_share and ranked:
        graders = max(1, graders)
    for n, outcome in enumerate(ranked, start=1):
        outcome.rank = n
        outcome.qualified = n <= places
        outcome.grader = n <= graders
    scored = [o.score for o in ranked if o.score is not None]
    average = round(sum(scored) / len(scored), 3) if scored else None
    dimension_average: dict[str, str] = {}
    for d in ORDINAL:
        means = [o.dimensions[d] for o in ranked if d in o.dimensions]
        dimension_average[d] = f"{sum(means) / len(means):.2f}" if means else "n/a"
    for o in outcomes:
        o.message = Template(template).safe_substitute(
            round=round_number,
            stage=stage.name,
            examples=o.examples,
            score="n/a" if o.score is None else f"{o.score:.2f}",
            average="n/a" if average is None else f"{average:.2f}",
            rank=o.rank or "unranked",
            writers=len(ranked),
            verdict=(
                "You qualify for the next round."
                if o.qualified
                else f"Ranking needs at least {min_examples} graded examples; you did not "
                "qualify for the next round. Thank you for your work."
                if o.score is not None and o.examples < min_examples
                else "You did not qualify for the next round; thank you for your work."
            )
            + (" You are invited to grade the next round's examples." if o.grader else ""),
            ambiguous_share=f"{round(100 * o.ambiguous_share)} %",
            distracting_share=f"{round(100 * o.distracting_share)} %",
            best=o.best,
            worst=o.worst,
            depth=_fmt(o.dimensions.get("reading_depth")),
            depth_average=dimension_average["reading_depth"],
            creativity=_fmt(o.dimensions.get("creativity")),
            creativity_average=dimension_average["creativity"],
        )
    return sorted(outcomes, key=lambda o: (o.rank or 10**9, o.pseudonym))


def round_close_problems(
    *, stage: Stage, grading_stage: Stage, round_number: int, outcomes: list[RoundOutcome]
) -> list[str]:
    """Why closing the round now would be wrong (empty when it may close): its grading
    is not done (an example of the round has fewer grades than ``grading_stage``'s
    ``assignments_per_hit``, §3.3), or the next round would be left without writers or
    without enough graders."""
    problems: list[str] = []
    if not outcomes:
        return [f"Round {round_number} of “{stage.name}” has no approved writing to grade."]
    writing_ids = [pk for o in outcomes for pk in o.assignment_ids]
    examples = Item.objects.filter(stage=grading_stage, source_assignment_id__in=writing_ids)
    graded = sum(o.examples for o in outcomes)
    total = examples.count()
    if graded < total or total == 0:
        problems.append(
            f"Round {round_number}'s grading in “{grading_stage.name}” has not happened: "
            f"{total - graded} of {total} example(s) have no grade yet. Close the round "
            "once every example is graded."
        )
        return problems
    short = sum(o.under_graded for o in outcomes)
    if short:
        problems.append(
            f"Round {round_number}'s grading in “{grading_stage.name}” is not done: "
            f"{short} of {total} example(s) have fewer than the "
            f"{grading_stage.assignments_per_hit} grades the stage asks for. Close the "
            "round once every example has them, or lower that stage's assignments per HIT."
        )
        return problems
    qualified = [o for o in outcomes if o.qualified]
    if not qualified:
        problems.append(
            f"Nobody qualifies after round {round_number}: the next round has no writers."
        )
    graders = [o for o in outcomes if o.grader]
    for nxt in _stages_requiring(stage=stage, round_number=round_number, key="graders_stage"):
        needed = nxt.assignments_per_hit + (1 if any(o.qualified for o in graders) else 0)
        if len(graders) < needed:
            problems.append(
                f"Round {round_number} would promote {len(graders)} writer(s) to grade, but "
                f"“{nxt.name}” needs {nxt.assignments_per_hit} grades per example from people "
                f"other than its writer: at least {needed} graders. Recruit more writers, "
                "raise graders_share, or lower that stage's assignments per HIT first."
            )
    return problems


def _stages_requiring(*, stage: Stage, round_number: int, key: str) -> list[Stage]:
    """The campaign's stages whose requirements name ``stage``'s round (``key`` is
    ``round_stage`` or ``graders_stage``)."""
    return [
        s
        for s in Stage.objects.filter(campaign_id=stage.campaign_id).order_by("position")
        if any(
            isinstance(r, dict) and r.get(key) == stage.pk and r.get("round") == round_number
            for r in s.qualification_requirements or []
        )
    ]


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def round_close(
    *,
    stage: Stage,
    grading_stage: Stage,
    round_number: int,
    actor: AbstractBaseUser,
    qualify_share: float = 0.8,
    bonus: Decimal | None = None,
    template: str = DEFAULT_TEMPLATE,
    subject: str = "",
    graders_share: float = 0.0,
    grading_bonus: Decimal | None = None,
    min_examples: int = 1,
) -> list[RoundOutcome]:
    """Close the round: mark its writing with the round number, grant the round's
    qualification to the qualifiers, pay them ``bonus`` (key
    ``round:<stage>:<round>:<worker>``, once), and send each writer their message (one
    ``notify`` per writer, key ``round-feedback:<stage>:<round>:<worker>``).
    With ``grading_bonus``, each worker who graded the round's examples in
    ``grading_stage`` gets it once (key ``round-grading:<stage>:<round>:<worker>``).
    Idempotent: closing the same round again grants, pays and sends nothing more.
    Refused (``DomainError`` listing ``round_close_problems``) when the grading did not
    happen or the next round would be left without writers or graders."""
    outcomes = round_outcomes(
        stage=stage,
        grading_stage=grading_stage,
        round_number=round_number,
        qualify_share=qualify_share,
        template=template,
        graders_share=graders_share,
        min_examples=min_examples,
    )
    problems = round_close_problems(
        stage=stage, grading_stage=grading_stage, round_number=round_number, outcomes=outcomes
    )
    if problems:
        raise DomainError(" ".join(problems), errors={"round": problems})
    campaign = stage.campaign
    qt = round_qualification_type(stage=stage, round_number=round_number)
    graders_qt = round_graders_type(stage=stage, round_number=round_number)
    workers = {w.pk: w for w in Worker.objects.filter(pk__in=[o.worker_id for o in outcomes])}
    platform = platform_for(campaign)
    with transaction.atomic():
        for o in outcomes:
            for a in Assignment.objects.select_for_update().filter(pk__in=o.assignment_ids):
                details = dict(a.review_details or {})
                details["round"] = round_number
                details["round_outcome"] = {
                    "score": o.score,
                    "rank": o.rank,
                    "qualified": o.qualified,
                    "grader": o.grader,
                }
                Assignment.objects.filter(pk=a.pk).update(review_details=details)
            worker = workers[o.worker_id]
            if o.qualified:
                platform.qualification_grant(
                    qualification_type=qt,
                    worker=worker,
                    source=f"round:{stage.pk}:{round_number}",
                    value=o.rank,
                )
                if bonus is not None and bonus > 0 and o.assignment_ids:
                    platform.bonus_pay(
                        assignment=Assignment.objects.get(pk=o.assignment_ids[-1]),
                        amount=bonus,
                        reason=f"Qualified after round {round_number} of “{stage.name}”.",
                        key=f"round:{stage.pk}:{round_number}:{worker.pk}",
                    )
            if o.grader:
                platform.qualification_grant(
                    qualification_type=graders_qt,
                    worker=worker,
                    source=f"round-graders:{stage.pk}:{round_number}",
                    value=o.rank,
                )
            message = WorkerMessage(
                workers=[worker],
                subject=subject or f"Your results in round {round_number}",
                body=o.message,
                key=f"round-feedback:{stage.pk}:{round_number}:{worker.pk}",
            )
            platform.workers_message(campaign=campaign, actor=actor, message=message)
        if grading_bonus is not None and grading_bonus > 0:
            for grading in _round_grading(
                stage=stage, grading_stage=grading_stage, outcomes=outcomes
            ):
                platform.bonus_pay(
                    assignment=grading,
                    amount=grading_bonus,
                    reason=f"Graded round {round_number} of “{stage.name}”.",
                    key=f"round-grading:{stage.pk}:{round_number}:{grading.worker_id}",
                )
    return outcomes


def _round_grading(
    *, stage: Stage, grading_stage: Stage, outcomes: list[RoundOutcome]
) -> list[Assignment]:
    """One graded assignment per worker who graded the round's examples (their last)."""
    writing_ids = [pk for o in outcomes for pk in o.assignment_ids]
    last: dict[int, Assignment] = {}
    for a in (
        Assignment.objects.filter(
            hit__stage=grading_stage,
            hit__items__source_assignment_id__in=writing_ids,
            status__in=GRADED,
        )
        .distinct()
        .order_by("pk")
    ):
        last[a.worker_id] = a
    return list(last.values())


def round_settings(*, stage: Stage) -> dict[str, Any]:
    """The writing stage's ``config.round`` (a recipe's defaults for closing its round):
    ``number``, ``grading_stage`` (id), ``qualify_share``, ``graders_share``, ``bonus``,
    ``grading_bonus``, ``min_examples``; missing keys are absent."""
    raw = (stage.config or {}).get("round")
    return dict(raw) if isinstance(raw, dict) else {}
