"""Nangia et al.: four randomized protocol arms for writing difficult multiple-choice
reading-comprehension questions, with training rounds, feedback and validation.

Nangia, Sugawara, Trivedi, Warstadt, Vania and Bowman (2021), "What Ingredients Make
for an Effective Crowdsourcing Protocol for Difficult NLU Data Collection Tasks?",
ACL 2021. From §3: workers dealt at random into BASELINE, JUSTIFICATION, CROWD and
EXPERT; 98 % approval, 1,000 approved, US/UK/CA; §3.1 writing (2 questions x 4
options per passage); §3.2 a 1-3 sentence justification; §3.3 the tutorial (CROWD
and EXPERT only), three intermediate rounds graded with the rubric (Figure 2): three
experts per example in EXPERT and in CROWD's round 1, then the top 20 % of CROWD's
writers promoted to grade rounds 2 and 3 (five grades per example); the top 80 %
requalify each round. §4: a 3-of-5 validation quiz, 10 % gold, disqualified under
50 % on gold, 2-way validation and a 10-way subset of 500 examples per protocol;
§5.1: gold by majority over the writer and 4 validators, human performance from the
other 6. App. A (feedback), App. B (pay: $3.50 / $4.00 writing, $3.50 tutorial +
$1.50, round bonuses $5 / $7 / $10, crowd grading $0.50 per question and $5 per
round), §4 "Cost" (validation quiz $2.50, $0.75 per pair, $0.50 per 3-of-4 gold).

What is configuration here and a requester's action in qaportal: arms are stage
``config.arm``; the tutorial is a quiz stage per arm with steps, practice questions
(feedback at once) and a scored part; each training round is its own writing stage,
open to the previous round's qualifiers (``round_stage``), graded in its own rubric
stage (experts through the "Expert graders" qualification, or the crowd through
``graders_stage``); the requester closes a round (``POST /api/v1/stages/{id}/rounds/``),
whose defaults (grading stage, shares, bonuses) come from the writing stage's
``config.round``. The tutorial's "top 60 %" is a pass mark here (3 of 5).
The passages and quiz questions below are qaportal's own text, written for this recipe.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from campaigns.recipes.base import Recipe, StageSpec
from campaigns.tasktypes import task_type_get

ARMS = ("BASELINE", "JUSTIFICATION", "CROWD", "EXPERT")
ROUND_BONUSES = (Decimal("5.00"), Decimal("7.00"), Decimal("10.00"))
GRADER_ROUND_BONUS = Decimal("5.00")
WORKER_REQUIREMENTS: list[dict[str, Any]] = [
    {"kind": "approval_rate", "min": 98},
    {"kind": "approved_count", "min": 1000},
    {"kind": "locale", "countries": ["US", "GB", "CA"]},
]
EXPERT_GRADERS = "Expert graders"
EXPERT_GRADES = 3  # §3.3: three experts grade worker submissions
CROWD_GRADES = 5  # §3.3: five evaluations per example in CROWD rounds 2 and 3
# §3.3: 150 workers completed the tutorial; places per tutorial arm at each scale.
TUTORIAL_PLACES = 200
PILOT_TUTORIAL_PLACES = 10
PILOT_PASSAGES = 3
# Passages at the paper's scale, for the cost estimate (main round, per arm).
MAIN_PASSAGES = 250
ROUND_PASSAGES = 20

PASSAGES = [
    {
        "title": "The night ferry",
        "passage": (
            "The night ferry left the harbour at eleven, an hour later than printed, because "
            "the cook had gone back for the bread. Most passengers slept in their cars below "
            "deck. Ines stayed on the open deck with a thermos, counting the lighthouses she "
            "had only ever seen on her grandfather's charts. By the third one she had "
            "stopped counting and started naming them after the people who had told her "
            "about the sea. When the sun came up over the island she realised that the "
            "ferry had never once been out of sight of land."
        ),
    },
    {
        "title": "A garden in the car park",
        "passage": (
            "The supermarket had closed in March, and by June the car park was the only "
            "flat, sunny ground in the neighbourhood. Mr Adeyemi brought six tyres and a "
            "bag of compost; the children from number nine brought tomato seedlings they "
            "had grown on a windowsill. The council sent a letter about trespass, then a "
            "second letter offering a water tap. By September the tyres held squash, the "
            "tap had a queue, and the letters were pinned to a noticeboard nobody "
            "remembered building."
        ),
    },
    {
        "title": "The clockmaker's apprentice",
        "passage": (
            "Tomas was hired to sweep the workshop, not to touch the clocks. He learned "
            "anyway, by listening: a clock that ran fast ticked a little brighter, and one "
            "with a worn spring hesitated before the hour. When the old clockmaker's hands "
            "began to shake, it was Tomas who steadied the tweezers, and then Tomas who "
            "held them. The first clock he repaired alone ran four minutes slow for a "
            "year. He never corrected it; it was, he said, the only clock in town that "
            "gave people time to arrive."
        ),
    },
]


def _passages(prefix: str) -> list[dict[str, Any]]:
    return [{"external_id": f"{prefix}-{n}", **p} for n, p in enumerate(PASSAGES)]


def _option(oid: str, text: str, group: str = "wrong") -> dict[str, Any]:
    return {"id": oid, "text": text, "group": group}


TUTORIAL_QUIZ: dict[str, Any] = {
    "steps": [
        {
            "title": "What you will write",
            "body": "For each passage you write two questions, each with four options: one "
            "right answer and three wrong ones. Someone who has read the passage carefully "
            "should find the right answer; someone who skimmed it should not.",
        },
        {
            "title": "What makes a question hard",
            "body": "Ask about something the passage implies, or that needs two of its "
            "sentences together. Make the wrong options plausible: they should mention "
            "things from the passage, but be wrong.",
        },
        {
            "title": "What to avoid",
            "body": "No questions answered by one copied phrase, no trick questions, no "
            "options that are obviously silly, and never more than one right answer.",
        },
    ],
    "practice": [
        {
            "id": "p1",
            "prompt": "Which of these questions about “The night ferry” needs careful reading?",
            "context": PASSAGES[0]["passage"],
            "explanation": "The passage never says the ferry stayed near the coast in so many "
            "words: you have to connect the lighthouses with the last sentence.",
            "options": [
                {"id": "a", "text": "What time did the ferry leave?"},
                {
                    "id": "b",
                    "text": "Why could Ines keep counting lighthouses all night?",
                    "correct": True,
                },
                {"id": "c", "text": "Who went back for the bread?"},
            ],
        },
        {
            "id": "p2",
            "prompt": "Which wrong option is the most distracting for “Why was the ferry late?”",
            "context": PASSAGES[0]["passage"],
            "explanation": "It uses a detail from the passage (passengers in their cars) but "
            "is not the reason given.",
            "options": [
                {"id": "a", "text": "Because of a storm."},
                {"id": "b", "text": "Because passengers were still loading cars.", "correct": True},
                {"id": "c", "text": "Because the ferry was on fire."},
            ],
        },
    ],
    "questions": [
        {
            "id": "t1",
            "prompt": "A good question about “A garden in the car park” is…",
            "context": PASSAGES[1]["passage"],
            "options": [
                _option("a", "When did the supermarket close?"),
                _option("b", "What did the council think of the garden by the end?", "correct"),
                _option("c", "How many tyres did Mr Adeyemi bring?"),
            ],
        },
        {
            "id": "t2",
            "prompt": "Which set of options has exactly one right answer to “What did the "
            "council send first?”",
            "context": PASSAGES[1]["passage"],
            "options": [
                _option(
                    "a", "A letter about trespass / a water tap / seedlings / tyres", "correct"
                ),
                _option("b", "A letter / a letter about trespass / a notice / a tap"),
                _option("c", "A water tap / a tap / water / a hose"),
            ],
        },
        {
            "id": "t3",
            "prompt": "Which question can be answered by copying one phrase?",
            "context": PASSAGES[2]["passage"],
            "options": [
                _option("a", "What was Tomas hired to do?", "correct"),
                _option("b", "Why did Tomas leave his first clock slow?"),
                _option("c", "How did Tomas learn the trade?"),
            ],
        },
        {
            "id": "t4",
            "prompt": "Which is the best wrong option for “How did Tomas learn to repair clocks?”",
            "context": PASSAGES[2]["passage"],
            "options": [
                _option("a", "He went to a school for clockmakers."),
                _option("b", "The clockmaker taught him from the first day.", "correct"),
                _option("c", "He never learned."),
            ],
        },
        {
            "id": "t5",
            "prompt": "A question with two right answers should be…",
            "options": [
                _option("a", "kept: it is extra hard."),
                _option("b", "rewritten so that exactly one option is right.", "correct"),
                _option("c", "kept if the writer explains it."),
            ],
        },
    ],
    "scoring": {"group_points": {"correct": 1, "wrong": 0}, "pass_points": 3},
    "allow_no_answer": False,
    "retake": {"max_tries": 1},
    "pass_bonus": "1.50",
}

VALIDATION_QUIZ: dict[str, Any] = {
    "questions": [
        {
            "id": f"v{n + 1}",
            "prompt": prompt,
            "context": PASSAGES[p]["passage"],
            "options": [
                _option(o, text, "correct" if o == right else "wrong")
                for o, text in zip("abcd", options, strict=True)
            ],
        }
        for n, (p, prompt, options, right) in enumerate(
            [
                (
                    0,
                    "Why did the ferry leave late?",
                    ["A storm", "The cook went back for bread", "Cars", "Ines was late"],
                    "b",
                ),
                (
                    0,
                    "Where did most passengers sleep?",
                    ["In cabins", "On deck", "In their cars", "On the island"],
                    "c",
                ),
                (
                    1,
                    "What did the council offer in its second letter?",
                    ["Compost", "A water tap", "Seedlings", "A noticeboard"],
                    "b",
                ),
                (
                    1,
                    "What grew in the tyres by September?",
                    ["Tomatoes", "Squash", "Flowers", "Nothing"],
                    "b",
                ),
                (
                    2,
                    "How fast did Tomas's first repaired clock run?",
                    ["Four minutes fast", "On time", "Four minutes slow", "An hour slow"],
                    "c",
                ),
            ]
        )
    ],
    "scoring": {"group_points": {"correct": 1, "wrong": 0}, "pass_points": 3},
    "allow_no_answer": False,
}


def _tutorial(arm: str) -> StageSpec:
    """§3.3: only CROWD and EXPERT workers take the tutorial (BASELINE and
    JUSTIFICATION get the writing task alone, §3.1-3.2); one tutorial stage per arm."""
    return StageSpec(
        name=f"{arm}: Tutorial",
        task_type="quiz",
        source="§3.3 tutorial (CROWD and EXPERT only): steps, a practice quiz with "
        "feedback, a scored quiz; App. B: $3.50, a $1.50 bonus for qualifying",
        instructions="Work through the short tutorial, then answer the five scored questions.",
        config={**TUTORIAL_QUIZ, "arm": arm},
        reward=Decimal("3.50"),
        estimated_minutes=20,
        assignments_per_hit=TUTORIAL_PLACES,
        qualification_requirements=WORKER_REQUIREMENTS,
        paper_items=1,
        pilot={"assignments_per_hit": PILOT_TUTORIAL_PLACES},
        approval_note="a quiz grades itself",
    )


WRITING_INSTRUCTIONS = (
    "Read the passage and write two multiple-choice questions about it, each with four "
    "options of which exactly one is right. Good questions need a careful reading of the "
    "whole passage; good wrong options are plausible."
)


def _writing(
    arm: str,
    name: str,
    *,
    feeds: str,
    requires: list[dict[str, Any]],
    round_config: dict[str, Any] | None = None,
    justification: str = "off",
    reward: Decimal = Decimal("3.50"),
    items: int = MAIN_PASSAGES,
    source: str = "",
) -> StageSpec:
    config: dict[str, Any] = {
        "arm": arm,
        "questions_per_passage": 2,
        "justification": justification,
        "expected_outputs_per_assignment": 2,
    }
    if round_config:
        config["round"] = round_config
    target = "rubric_evaluation" if round_config else "mc_validation"
    return StageSpec(
        name=name,
        task_type="mc_question_writing",
        source=source or "writing: 2 questions x 4 options per passage at $3.50",
        instructions=WRITING_INSTRUCTIONS
        + (" Also say in a sentence why the right answer is right." if justification else ""),
        config=config,
        reward=reward,
        estimated_minutes=20,
        qualification_requirements=[*WORKER_REQUIREMENTS, *requires],
        feeds=feeds,
        handoff={"target": target},
        paper_items=items,
        pilot_items=PILOT_PASSAGES,
        approval_note="the requester's review (the paper's writing was paid for as "
        "submitted; graded rounds are closed by the requester)",
    )


def _grading(arm: str, number: int, *, crowd: bool) -> StageSpec:
    # §3.3: experts grade every EXPERT round and CROWD's round 1 (three experts per
    # example); after round 1 the top 20 % of CROWD's writers are promoted and grade
    # rounds 2 and 3, five grades per example, never their own.
    by_crowd = crowd and number > 1
    if by_crowd:
        requires: list[dict[str, Any]] = [{"graders_stage": f"{arm}: Round 1", "round": 1}]
        source = (
            f"§3.3 crowd grading of round {number}: the writers promoted after round 1 "
            "(top 20 %) grade every example with the rubric (Figure 2), never their own; "
            "5 grades per example, averaged; $0.50 per question and $5 per round (App. B)"
        )
    else:
        requires = [{"qualification": EXPERT_GRADERS}]
        source = (
            f"§3.3 expert grading of round {number}: three experts grade each example with "
            "the rubric (Figure 2); the experts are the requester's, unpaid here"
        )
    return StageSpec(
        name=f"{arm}: Grading {number}",
        task_type="rubric_evaluation",
        source=source,
        instructions=(
            "Grade each example with the rubric: is it answerable with one right option, "
            "how closely must one read, how creative is the question, are the wrong "
            "options distracting? Add a short note for the writer if you can."
        ),
        # Crowd graders are the arm's own writers; experts join no arm.
        config={"exclude_own_work": True, **({"arm": arm} if by_crowd else {})},
        reward=Decimal("0.50") if by_crowd else Decimal("0.00"),
        estimated_minutes=5,
        assignments_per_hit=CROWD_GRADES if by_crowd else EXPERT_GRADES,
        qualification_requirements=requires,
        paper_items=None,
        approval_note="the round is closed by the requester (POST /stages/{id}/rounds/)",
    )


def _iterative(arm: str, *, crowd: bool) -> list[StageSpec]:
    stages: list[StageSpec] = []
    for number in (1, 2, 3):
        name = f"{arm}: Round {number}"
        requires = (
            [{"quiz_stage": f"{arm}: Tutorial"}]
            if number == 1
            else [{"round_stage": f"{arm}: Round {number - 1}", "round": number - 1}]
        )
        stages.append(
            _writing(
                arm,
                name,
                feeds=f"{arm}: Grading {number}",
                requires=requires,
                round_config={
                    "number": number,
                    "grading_stage": f"{arm}: Grading {number}",
                    "qualify_share": 0.8,
                    # §3.3: promoted once, after round 1; they grade rounds 2 and 3.
                    "graders_share": 0.2 if crowd and number == 1 else 0.0,
                    "bonus": str(ROUND_BONUSES[number - 1]),
                    **({"grading_bonus": str(GRADER_ROUND_BONUS)} if crowd and number > 1 else {}),
                },
                items=ROUND_PASSAGES,
                source=f"training round {number}: writing graded with the rubric, the top 80 % "
                f"requalify, a ${ROUND_BONUSES[number - 1]} bonus for qualifying",
            )
        )
        stages.append(_grading(arm, number, crowd=crowd))
    stages.append(
        _writing(
            arm,
            f"{arm}: Main round",
            feeds="Validation",
            requires=[{"round_stage": f"{arm}: Round 3", "round": 3}],
            source="main round: the qualified writers, 2 questions x 4 options at $3.50",
        )
    )
    return stages


VALIDATION_QUIZ_STAGE = StageSpec(
    name="Validation quiz",
    task_type="quiz",
    source="validation qualification: a quiz of 5 questions, 3 right to pass, $2.50",
    instructions="Answer five questions about short passages; three right answers qualify you.",
    config=VALIDATION_QUIZ,
    reward=Decimal("2.50"),
    estimated_minutes=15,
    # §4: 200 crowdworkers completed the qualification task.
    assignments_per_hit=200,
    qualification_requirements=WORKER_REQUIREMENTS,
    paper_items=1,
    pilot={"assignments_per_hit": 20},
    approval_note="a quiz grades itself",
)
VALIDATION = StageSpec(
    name="Validation",
    task_type="mc_validation",
    source="validation: $0.75 per pair of questions, 10 % gold, disqualified under 50 % "
    "on gold, $0.50 per block of 4 gold with 3 right; 2-way (10-way for a subset: raise "
    "assignments per HIT on it); gold labels by majority over the writer and the "
    "validators, no majority and 'invalid' discarded",
    instructions=(
        "Read the passage and choose the right answer to each question, or mark the "
        "question invalid if it has no single right answer."
    ),
    # §4 "10-Way Validation": 500 random examples per protocol get ten validators;
    # §5: four of them and the writer vote the gold label, six estimate human
    # performance (validation.ten_way). POST /api/v1/stages/{id}/ten-way/ picks them.
    config={
        "exclude_own_work": True,
        "ten_way": {"per_arm": 500, "annotators": 10, "gold_votes": 4},
    },
    reward=Decimal("0.75"),
    estimated_minutes=4,
    items_per_hit=2,
    assignments_per_hit=2,
    gold_ratio=Decimal("0.10"),
    qualification_requirements=[*WORKER_REQUIREMENTS, {"quiz_stage": VALIDATION_QUIZ_STAGE.name}],
    review_rules=[
        # Under 50 % on gold: the validation quiz's qualification is revoked.
        {"rule": "gold_disqualify", "min": 0.5, "min_gold": 4, "quiz_stage": "Validation quiz"},
        {
            "rule": "final_labels",
            "count_writer": True,
            "discard_labels": ["invalid"],
            "dimension": "choice",
        },
    ],
    bonus_rules=[{"rule": "gold_bonus", "amount": "0.50", "block": 4, "correct": 3}],
    paper_items=None,
    approval_note="the requester's review; gold decides who keeps the qualification",
    pilot={"config": {"ten_way": {"per_arm": 2, "annotators": 10, "gold_votes": 4}}},
)

STAGES: tuple[StageSpec, ...] = (
    # §3.3: the tutorials of CROWD and EXPERT come first, so that a new worker's first
    # stage is their arm's (a shared stage listed earlier would be their entry).
    _tutorial("CROWD"),
    _tutorial("EXPERT"),
    # §3.1-3.2: BASELINE and JUSTIFICATION write at once, with no tutorial.
    _writing(
        "BASELINE",
        "BASELINE: Main round",
        feeds="Validation",
        requires=[],
        source="§3.1 writing: 2 questions x 4 options per passage; App. B: $3.50",
    ),
    _writing(
        "JUSTIFICATION",
        "JUSTIFICATION: Main round",
        feeds="Validation",
        requires=[],
        justification="required",
        reward=Decimal("4.00"),
        source="§3.2 writing with a 1-3 sentence justification; App. B: $4.00 per passage",
    ),
    *_iterative("CROWD", crowd=True),
    *_iterative("EXPERT", crowd=False),
    VALIDATION_QUIZ_STAGE,
    VALIDATION,
)

WRITING_STAGES = [s.name for s in STAGES if task_type_get(s.task_type).graded_by_rubric]

RECIPE = Recipe(
    name="nangia",
    title="Nangia et al. (four protocol arms for hard multiple-choice questions)",
    citation=(
        "Nikita Nangia, Saku Sugawara, Harsh Trivedi, Alex Warstadt, Clara Vania and "
        "Samuel R. Bowman (2021), What Ingredients Make for an Effective Crowdsourcing "
        "Protocol for Difficult NLU Data Collection Tasks?, ACL 2021: §3 (protocols, "
        "tutorial, rounds), §4 (validation), §5.1 (human performance), App. A-B."
    ),
    summary=(
        "New workers are dealt at random into four arms: BASELINE, JUSTIFICATION, CROWD "
        "and EXPERT. CROWD and EXPERT workers take the tutorial and go through "
        "three graded training rounds (top 80 % requalify, $5/$7/$10 bonuses, feedback "
        "messages), graded by promoted crowd workers or by experts; every arm's main "
        "round is validated by quiz-qualified validators with gold questions."
    ),
    stages=STAGES,
    sample_items={
        "CROWD: Tutorial": [{"external_id": "tutorial-crowd"}],
        "EXPERT: Tutorial": [{"external_id": "tutorial-expert"}],
        VALIDATION_QUIZ_STAGE.name: [{"external_id": "validation-quiz"}],
        **{
            name: _passages(f"{name.split(':')[0].lower()}-{n}")
            for n, name in enumerate(WRITING_STAGES)
        },
    },
    paper_scale=(
        f"Scale: per arm {MAIN_PASSAGES} passages in the main round (2 questions each); "
        f"CROWD and EXPERT also {ROUND_PASSAGES} passages in each of 3 training rounds; "
        "every question validated 2-way."
    ),
    pilot_scale=(
        f"Per arm {PILOT_PASSAGES} passages in each writing stage; "
        f"{PILOT_TUTORIAL_PLACES} tutorial places per arm; validation quiz places as "
        "published (the quiz is one item)."
    ),
    export_format="jsonl",
)
