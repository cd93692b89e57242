"""Nangia et al.'s recipe end to end on the local workforce with the crowd simulator:
16 workers dealt into four arms (balanced, sticky); CROWD and EXPERT take the tutorial
(its pass bonus paid); BASELINE and JUSTIFICATION write the main round at once, with no
tutorial; CROWD and EXPERT write three graded training rounds, graded by experts (and
CROWD's round 1), then by CROWD's promoted writers (never their own examples); the
requester closes each round through the API with the recipe's defaults: the top 80 %
requalify, feedback messages carry each writer's numbers, round and grading bonuses
land in the ledger; only round 3's qualifiers write the main round; validators pass the
validation quiz, gold questions earn gold bonuses, final labels come from the majority
over writer and validators, and the export parses.

The suite runs it small (SMALL: two workers per arm, one passage per writing stage;
every stage, hand-off, arm and rule still runs); ``--full-size`` runs it as a pilot
(FULL: four workers per arm, the recipe's sample of three passages per writing stage),
as ``bench/suite_simulations.py`` does."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from io import StringIO

import pytest
from rest_framework.test import APIClient

from campaigns.design.items import items_upload
from campaigns.design.services import campaign_create, stage_update
from campaigns.exports import export_write
from campaigns.models import (
    Assignment,
    AssignmentStatus,
    CampaignWorker,
    LedgerEntry,
    OperationKind,
    ProviderOperation,
    QualificationGrant,
    QualificationType,
    Stage,
)
from campaigns.platforms.publishing import campaign_start
from campaigns.platforms.workers import paid_qualification_grant
from campaigns.recipes.nangia import ARMS, EXPERT_GRADERS, RECIPE
from campaigns.recipes.services import recipe_apply
from campaigns.simulate import simulate_crowd
from campaigns.workforce.qualification_types import round_qualification_type
from tests.factories import UserFactory
from validation.selectors import stage_final_labels
from validation.services import stage_review

pytestmark = pytest.mark.django_db(transaction=True)

DONE = (AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED)
GOLD = [
    {
        "external_id": f"gold-{n}",
        "passage": "The bridge opened in 1932 after six years of work.",
        "question": f"How long did the bridge take to build? ({n})",
        "options": ["Two years", "Six years", "Ten years", "It was never built"],
        "writer_correct": 1,
        "gold": {"choice": 1},
    }
    for n in range(16)
]


@dataclass(frozen=True)
class Size:
    """How big the simulated pilot is."""

    workers_per_arm: int
    # Passages per writing stage (None: the recipe's pilot sample, 3).
    passages: int | None
    # Writers per passage in training rounds 1, 2 and 3.
    round_places: tuple[int, int, int]
    # The share of CROWD's ranked round-1 writers promoted to grade rounds 2 and 3: at
    # least two, so that each example has a grader who did not write it.
    graders_share: float


# A pilot's small crowd: four writers per arm, three per training passage, so that each
# round has writers besides the one promoted to grade it; the promoted crowd can give
# one grade per example (the paper: five, §3.3), and the eight experts two (three).
FULL = Size(workers_per_arm=4, passages=None, round_places=(3, 3, 3), graders_share=0.5)
# The suite's: two writers per arm and one passage per writing stage. Every stage still
# runs: round 1 ranks both writers of an arm, its top 80 % (one) requalifies, CROWD
# promotes both to grade (each grades the other's example), the four experts grade
# twice; rounds 2 and 3 and the main round are the qualified writer's.
SMALL = Size(workers_per_arm=2, passages=1, round_places=(2, 2, 2), graders_share=1.0)


def _sample_upload(stages: dict[str, Stage], *, passages: int | None) -> None:
    """The recipe's sample items, each writing stage's cut to its first ``passages``."""
    for name, rows in RECIPE.sample_items.items():
        tutorial = name.endswith("Tutorial writing")  # its two passages, as published
        if passages is not None and stages[name].task_type == "mc_question_writing":
            rows = rows if tutorial else rows[:passages]
        items_upload(
            stage=stages[name],
            content="\n".join(json.dumps(row) for row in rows).encode(),
            filename="nangia-sample.jsonl",
        )


@pytest.mark.slow(seconds=120)
def test_nangia_four_arms_rounds_feedback_bonuses_and_validation(full_size):
    size = FULL if full_size else SMALL
    owner = UserFactory.create(username="owner-nangia")
    campaign = campaign_create(owner=owner, name="Nangia pilot", slug="nangia-pilot")
    stages = {s.name: s for s in recipe_apply(campaign=campaign, name="nangia", sample=False)}
    _sample_upload(stages, passages=size.passages)
    validation = stages["Validation"]
    # Validation HITs of 8 questions, half of them gold at first, so that a validator
    # meets a whole block of 4 gold questions in one HIT.
    stage_update(stage=validation, gold_ratio=Decimal("0.5"), items_per_hit=8)
    for arm in ("CROWD", "EXPERT"):
        stage_update(stage=stages[f"{arm}: Tutorial grading"], assignments_per_hit=2)
        for number in (1, 2, 3):
            per_passage = size.round_places[number - 1]
            stage_update(stage=stages[f"{arm}: Round {number}"], assignments_per_hit=per_passage)
            grading = stages[f"{arm}: Grading {number}"]
            crowd_grading = arm == "CROWD" and number > 1
            stage_update(stage=grading, assignments_per_hit=1 if crowd_grading else 2)
    items_upload(
        stage=validation,
        content="\n".join(json.dumps(g) for g in GOLD).encode(),
        filename="gold.jsonl",
    )
    campaign = campaign_start(campaign=campaign, to_state="pilot")
    api = APIClient()
    api.force_authenticate(owner)
    closed: dict[str, list[dict]] = {}
    experts: list[int] = []
    published: list[int] = []
    main_rounds = [stages[f"{arm}: Main round"] for arm in ARMS]

    def requester(c) -> bool:
        """Between rounds: make the BASELINE and JUSTIFICATION workers experts once,
        then close the lowest open round of each iterative arm that has writing (the
        tutorial's writing first); once every main round is written, publish the
        validation stage, which holds its hand-offs to shuffle the arms (§4)."""
        acted = False
        if not experts:
            expert_qt = QualificationType.objects.get(owner=owner, name=EXPERT_GRADERS)
            for place in CampaignWorker.objects.filter(
                campaign=c, arm__in=["BASELINE", "JUSTIFICATION"]
            ).select_related("worker"):
                paid_qualification_grant(
                    qualification_type=expert_qt, worker=place.worker, source="test:experts"
                )
                experts.append(place.worker_id)
            if experts:
                return True  # the experts grade before any round is closed
        for arm in ("CROWD", "EXPERT"):
            for name in (f"{arm}: Tutorial writing", *(f"{arm}: Round {n}" for n in (1, 2, 3))):
                number = 0 if name.endswith("Tutorial writing") else int(name[-1])
                if name in closed:
                    continue
                writing = stages[name]
                if not Assignment.objects.filter(
                    hit__stage=writing, status=AssignmentStatus.APPROVED
                ).exists():
                    break
                # The recipe's defaults, but for a pilot's handful of writers more of
                # them grade rounds 2 and 3 (the paper's 20 % of a large pool).
                crowd_first = arm == "CROWD" and number == 1
                share = {"graders_share": size.graders_share} if crowd_first else {}
                # The tutorial's top 60 % would leave a pilot's handful of writers too
                # few for the rounds' grading: all of them go on.
                if not number:
                    share = {"qualify_share": 1.0}
                body = {"preview": False, **share}
                response = api.post(f"/api/v1/stages/{writing.pk}/rounds/", body, format="json")
                assert response.status_code == 200, response.content
                closed[name] = response.json()
                acted = True
                break
        if (
            not acted
            and not published
            and all(
                Assignment.objects.filter(hit__stage=s, status=AssignmentStatus.APPROVED).exists()
                for s in main_rounds
            )
        ):
            response = api.post(f"/api/v1/stages/{validation.pk}/publish/", {}, format="json")
            assert response.status_code == 200, response.content
            published.append(response.json()["hits_created"])
            acted = True
        return acted

    result = simulate_crowd(
        campaign=campaign,
        workers=4 * size.workers_per_arm,
        seed=3,
        approve_all=True,
        shares={"good": 1.0},
        requester=requester,
    )
    assert result.ok, "\n".join(result.lines())
    assert result.server_errors() == 0

    # Arms: balanced blocks, every worker in one arm, writing only in their arm's stages.
    places = dict(CampaignWorker.objects.filter(campaign=campaign).values_list("worker_id", "arm"))
    assert Counter(places.values()) == dict.fromkeys(ARMS, size.workers_per_arm)
    for stage in Stage.objects.filter(campaign=campaign):
        stage_arm = (stage.config or {}).get("arm")
        if stage_arm:
            workers = set(
                Assignment.objects.filter(hit__stage=stage).values_list("worker_id", flat=True)
            )
            assert {places[w] for w in workers} <= {stage_arm}, stage.name

    # Every stage ran.
    for name, stage in stages.items():
        assert Assignment.objects.filter(hit__stage=stage, status__in=DONE).exists(), name

    # Tutorial (CROWD and EXPERT only, §3.3): passers got the $1.50 pass bonus, once
    # each; BASELINE and JUSTIFICATION workers never saw one and wrote all the same.
    tutorials = [stages["CROWD: Tutorial"], stages["EXPERT: Tutorial"]]
    passed = [
        a
        for a in Assignment.objects.filter(hit__stage__in=tutorials)
        if (a.review_details or {}).get("quiz", {}).get("passed")
    ]
    tutored = {places[a.worker_id] for a in Assignment.objects.filter(hit__stage__in=tutorials)}
    assert tutored <= {"CROWD", "EXPERT"}
    for arm in ("BASELINE", "JUSTIFICATION"):
        writers = Assignment.objects.filter(hit__stage=stages[f"{arm}: Main round"])
        assert {places[a.worker_id] for a in writers} == {arm}
    assert passed
    # The $1.50 is for qualifying onto the writing rounds after the tutorial's graded
    # writing (App. B), not for passing its quiz.
    assert not LedgerEntry.objects.filter(key__startswith="bonus:quiz-pass:").exists()
    for arm in ("CROWD", "EXPERT"):
        tutorial_writing = stages[f"{arm}: Tutorial writing"]
        qualified = [o for o in closed[tutorial_writing.name] if o["qualified"]]
        assert qualified
        bonuses = LedgerEntry.objects.filter(
            key__startswith=f"bonus:round:{tutorial_writing.pk}:1:"
        )
        assert bonuses.count() == len(qualified)
        assert {b.amount for b in bonuses} == {Decimal("1.50")}

    # Validation was published once, by the requester, after every main round.
    assert len(published) == 1
    assert published[0] > 0

    # Rounds: all three closed in both iterative arms, with feedback and bonuses.
    assert sorted(closed) == sorted(
        f"{a}: {r}"
        for a in ("CROWD", "EXPERT")
        for r in ("Tutorial writing", "Round 1", "Round 2", "Round 3")
    )
    for name, outcomes in closed.items():
        if name.endswith("Tutorial writing"):
            continue
        writing = stages[name]
        number = int(name[-1])
        ranked = [o for o in outcomes if o["rank"]]
        assert ranked, name
        promoted = {o["worker"] for o in outcomes if o["qualified"]}
        assert len(promoted) == max(1, int(0.8 * len(ranked) + 1e-9))
        qt = round_qualification_type(stage=writing, round_number=number)
        holders = QualificationGrant.objects.filter(qualification_type=qt)
        assert {g.worker.pseudonym for g in holders} == promoted
        notes = ProviderOperation.objects.filter(
            kind=OperationKind.NOTIFY,
            idempotency_key__startswith=f"notify:round-feedback:{writing.pk}:",
        )
        assert notes.count() == len(outcomes)
        bodies = {op.payload["body"] for op in notes}
        assert {o["message"] for o in outcomes} == bodies
        for o in ranked:
            assert f"ranked {o['rank']} of {len(ranked)}" in o["message"]
            assert f"scored {o['score']:.2f}" in o["message"]
        bonus = LedgerEntry.objects.filter(key__startswith=f"bonus:round:{writing.pk}:{number}:")
        assert bonus.count() == len(promoted)
        assert {b.amount for b in bonus} == {Decimal(("5.00", "7.00", "10.00")[number - 1])}
        if name.startswith("CROWD") and number > 1:  # round 1 is graded by experts
            grading_bonus = LedgerEntry.objects.filter(
                key__startswith=f"bonus:round-grading:{writing.pk}:{number}:"
            )
            assert grading_bonus.exists()
            assert {b.amount for b in grading_bonus} == {Decimal("5.00")}
        # Nobody graded their own example.
        grading_stage = stages[name.replace("Round", "Grading")]
        for g in Assignment.objects.filter(hit__stage=grading_stage).prefetch_related(
            "hit__items__source_assignment"
        ):
            graded_writers = {
                i.source_assignment.worker_id for i in g.hit.items.all() if i.source_assignment
            }
            assert g.worker_id not in graded_writers

    # Expert grading was done by the experts only (EXPERT's rounds and CROWD's round 1);
    # CROWD's rounds 2 and 3 by the writers promoted after round 1 only (§3.3).
    for grading_name in [f"EXPERT: Grading {n}" for n in (1, 2, 3)] + ["CROWD: Grading 1"]:
        expert_graders = set(
            Assignment.objects.filter(hit__stage=stages[grading_name]).values_list(
                "worker_id", flat=True
            )
        )
        assert expert_graders <= set(experts)
    promoted = {o["worker"] for o in closed["CROWD: Round 1"] if o["grader"]}
    assert promoted
    for number in (2, 3):
        graders = {
            a.worker.pseudonym
            for a in Assignment.objects.filter(
                hit__stage=stages[f"CROWD: Grading {number}"]
            ).select_related("worker")
        }
        assert graders <= promoted

    # The main round of an iterative arm: round 3's qualifiers only.
    for arm in ("CROWD", "EXPERT"):
        main_writers = {
            a.worker.pseudonym
            for a in Assignment.objects.filter(
                hit__stage=stages[f"{arm}: Main round"]
            ).select_related("worker")
        }
        assert main_writers
        assert main_writers <= {o["worker"] for o in closed[f"{arm}: Round 3"] if o["qualified"]}

    # Validation: quiz-gated, gold bonuses, final labels by majority with the writer.
    quiz_passers = {
        a.worker_id
        for a in Assignment.objects.filter(hit__stage=stages["Validation quiz"])
        if (a.review_details or {}).get("quiz", {}).get("passed")
    }
    validators = set(
        Assignment.objects.filter(hit__stage=validation).values_list("worker_id", flat=True)
    )
    assert validators <= quiz_passers
    stage_review(stage=validation)
    assert LedgerEntry.objects.filter(key__contains="gold_bonus").exists()
    labels = stage_final_labels(stage=validation)
    assert labels.labels
    assert set(labels.labels.values()) <= {0, 1, 2, 3, "0", "1", "2", "3"}

    out = StringIO()
    rows = export_write(campaign=campaign, name="jsonl", out=out)
    lines = out.getvalue().splitlines()
    assert rows == len(lines) > 0
    assert all(json.loads(line) for line in lines)
