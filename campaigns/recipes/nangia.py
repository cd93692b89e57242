"""Nangia et al.: four randomized protocol arms for writing difficult multiple-choice
reading-comprehension questions, with training rounds, feedback and validation.

Nangia, Sugawara, Trivedi, Warstadt, Vania and Bowman (2021), "What Ingredients Make
for an Effective Crowdsourcing Protocol for Difficult NLU Data Collection Tasks?",
ACL 2021. From §3: workers dealt at random into BASELINE, JUSTIFICATION, CROWD and
EXPERT; 98 % approval, 1,000 approved, US/UK/CA; §3.1 writing (2 questions x 4
options per passage); §3.2 a 1-3 sentence justification; §3.3 the tutorial (CROWD
and EXPERT only) with its writing task graded by three experts (top 60 % qualify),
three intermediate rounds of 400-500 examples graded with the rubric (Figure 2): three
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
``config.round``. The tutorial's writing task is such a round too (its top 60 %
qualify for round 1); the main rounds' size is §5's final collection; validation waits
for the requester to publish it, so that all four arms are shuffled into its HITs (§4).
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
QUESTIONS_PER_PASSAGE = 2  # §3.1: two questions per passage, four options each
# §5: the examples each protocol's final collection holds (1,558 / 1,534 / 1,600 /
# 1,580), two per passage: the main round's passages at the paper's scale.
FINAL_EXAMPLES = {"BASELINE": 1558, "JUSTIFICATION": 1534, "CROWD": 1600, "EXPERT": 1580}
MAIN_PASSAGES = {arm: -(-n // QUESTIONS_PER_PASSAGE) for arm, n in FINAL_EXAMPLES.items()}
# §3.3: "We only collect 400-500 examples in these intermediate rounds": 225 passages
# (450 questions) per round, one writer each, open to every qualified writer.
ROUND_PASSAGES = 225
# §3.3: experts evaluate "at least four questions per worker": a writer is ranked on
# four graded examples or more (two passages); the pilot ranks on one passage.
MIN_GRADED_EXAMPLES = 4
PILOT_MIN_GRADED_EXAMPLES = 2
# §3.3: the tutorial's writing task, two passages (two questions each) graded by three
# experts; the top 60 % of those who complete the tutorial qualify for round 1, with
# the $1.50 bonus for qualifying (App. B).
TUTORIAL_QUALIFY_SHARE = 0.6
TUTORIAL_BONUS = Decimal("1.50")

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


# §3.3: the tutorial's writing task gives two passages (qaportal's own text).
TUTORIAL_PASSAGES = [
    {
        "title": "The library van",
        "passage": (
            "Every Thursday the library van parked outside the closed post office, and "
            "every Thursday Mrs Okafor returned exactly three books and borrowed three "
            "more. The driver assumed she read quickly. In the spring her grandson came "
            "along and carried the bag, and the driver noticed that the boy chose all "
            "three books while she chose none. By summer the boy came alone, returned "
            "three books, and asked whether the van had anything on bridges."
        ),
    },
    {
        "title": "Salt on the road",
        "passage": (
            "The town bought its road salt in October, when it was cheap, and stored it "
            "in a barn that had once held the mayor's cattle. The winter was mild. In "
            "March the council had a barn full of salt and a budget line that said it "
            "had been spent. A councillor suggested selling it to the next town, whose "
            "winter had been hard. The next town's clerk replied politely that they "
            "had bought their own salt in October, when it was cheap."
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
    JUSTIFICATION get the writing task alone, §3.1-3.2); one tutorial stage per arm.
    Its writing task is ``_tutorial_writing``; the $1.50 for qualifying is that
    round's bonus."""
    return StageSpec(
        name=f"{arm}: Tutorial",
        task_type="quiz",
        source="§3.3 tutorial (CROWD and EXPERT only): steps, a practice quiz with "
        "feedback, a scored quiz, then the tutorial's writing task; App. B: $3.50 for "
        "the tutorial",
        instructions="Work through the short tutorial, then answer the {question_count} scored "
        "questions.",
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
    "Read the passage and write {questions_per_passage} multiple-choice questions about it, "
    "each with four options of which exactly one is right. Good questions need a careful "
    "reading of the whole passage; good wrong options are plausible."
)


# §3.2: a 1-3 sentence explanation of the reasoning that picks the right option, and
# what makes the question hard.
JUSTIFICATION_INSTRUCTIONS = (
    " Also explain, in one to three sentences, the reasoning that leads to the right "
    "answer and what makes the question hard."
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
    items: int,
    pilot_items: int = PILOT_PASSAGES,
    assignments_per_hit: int = 1,
    pilot: dict[str, Any] | None = None,
    source: str = "",
) -> StageSpec:
    config: dict[str, Any] = {
        "arm": arm,
        "questions_per_passage": QUESTIONS_PER_PASSAGE,
        "justification": justification,
        "expected_outputs_per_assignment": QUESTIONS_PER_PASSAGE,
    }
    if round_config:
        config["round"] = round_config
    target = "rubric_evaluation" if round_config else "mc_validation"
    return StageSpec(
        name=name,
        task_type="mc_question_writing",
        source=source or "writing: 2 questions x 4 options per passage at $3.50",
        instructions=WRITING_INSTRUCTIONS
        # §3.2: asking for a justification is all that sets JUSTIFICATION apart from
        # BASELINE; "off" is a non-empty string, so it is compared, not tested for truth.
        + (JUSTIFICATION_INSTRUCTIONS if justification != "off" else ""),
        config=config,
        reward=reward,
        assignments_per_hit=assignments_per_hit,
        estimated_minutes=20,
        qualification_requirements=[*WORKER_REQUIREMENTS, *requires],
        feeds=feeds,
        handoff={"target": target},
        paper_items=items,
        pilot_items=pilot_items,
        pilot=pilot or {},
        approval_note="the requester's review (the paper's writing was paid for as "
        "submitted; graded rounds are closed by the requester)",
    )


def _round_config(**round_config: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A writing stage's ``config.round`` and its pilot override (a pilot ranks writers
    on fewer graded examples)."""
    paper = {**round_config, "min_examples": MIN_GRADED_EXAMPLES}
    return paper, {"config": {"round": {**paper, "min_examples": PILOT_MIN_GRADED_EXAMPLES}}}


def _tutorial_writing(arm: str) -> list[StageSpec]:
    """§3.3: the tutorial ends with a writing task, two passages with two questions
    each, graded by three experts with the rubric; the top 60 % of the writers qualify
    for round 1 (App. B: $1.50 for qualifying). Every tutorial taker writes on the same
    two passages (one HIT per passage, a place per taker), unpaid beyond the tutorial's
    $3.50."""
    name = f"{arm}: Tutorial writing"
    round_config, pilot = _round_config(
        number=1,
        grading_stage=f"{arm}: Tutorial grading",
        qualify_share=TUTORIAL_QUALIFY_SHARE,
        graders_share=0.0,
        bonus=str(TUTORIAL_BONUS),
    )
    pilot["assignments_per_hit"] = PILOT_TUTORIAL_PLACES
    writing = _writing(
        arm,
        name,
        feeds=f"{arm}: Tutorial grading",
        requires=[{"quiz_stage": f"{arm}: Tutorial"}],
        round_config=round_config,
        reward=Decimal("0.00"),
        items=len(TUTORIAL_PASSAGES),
        pilot_items=len(TUTORIAL_PASSAGES),
        assignments_per_hit=TUTORIAL_PLACES,
        pilot=pilot,
        source="§3.3 tutorial writing: two passages, two questions each, graded by three "
        "experts; the top 60 % qualify for the writing rounds, $1.50 for qualifying "
        "(App. B); paid with the tutorial",
    )
    grading = StageSpec(
        name=f"{arm}: Tutorial grading",
        task_type="rubric_evaluation",
        source="§3.3 tutorial writing graded by three experts with the rubric (Figure 2)",
        instructions=GRADING_INSTRUCTIONS,
        config={"exclude_own_work": True},
        reward=Decimal("0.00"),
        estimated_minutes=5,
        assignments_per_hit=EXPERT_GRADES,
        qualification_requirements=[{"qualification": EXPERT_GRADERS}],
        paper_items=None,
        approval_note="the tutorial's round is closed by the requester (POST /stages/{id}/rounds/)",
    )
    return [writing, grading]


GRADING_INSTRUCTIONS = (
    "Grade each example with the rubric: is it answerable with one right option, "
    "how closely must one read, how creative is the question, are the wrong "
    "options distracting? Add a short note for the writer if you can."
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
        instructions=GRADING_INSTRUCTIONS,
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
    stages: list[StageSpec] = _tutorial_writing(arm)
    for number in (1, 2, 3):
        name = f"{arm}: Round {number}"
        requires = (
            [{"round_stage": f"{arm}: Tutorial writing", "round": 1}]
            if number == 1
            else [{"round_stage": f"{arm}: Round {number - 1}", "round": number - 1}]
        )
        round_config, pilot = _round_config(
            number=number,
            grading_stage=f"{arm}: Grading {number}",
            qualify_share=0.8,
            # §3.3: promoted once, after round 1; they grade rounds 2 and 3.
            graders_share=0.2 if crowd and number == 1 else 0.0,
            bonus=str(ROUND_BONUSES[number - 1]),
            **({"grading_bonus": str(GRADER_ROUND_BONUS)} if crowd and number > 1 else {}),
        )
        stages.append(
            _writing(
                arm,
                name,
                feeds=f"{arm}: Grading {number}",
                requires=requires,
                round_config=round_config,
                pilot=pilot,
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
            items=MAIN_PASSAGES[arm],
            source="main round: the qualified writers, 2 questions x 4 options at $3.50; "
            f"§5: {FINAL_EXAMPLES[arm]:,} examples",
        )
    )
    return stages


VALIDATION_QUIZ_STAGE = StageSpec(
    name="Validation quiz",
    task_type="quiz",
    source="§4 validation qualification: a quiz of 5 questions, 3 right to pass, $2.50",
    instructions=(
        "Answer {question_count} questions about short passages; {pass_points} right answers "
        "qualify you."
    ),
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
    source="§4 validation: the four protocols' data shuffled into one task, published by "
    "the requester once the main rounds are in; $0.75 per pair of questions, 10 % gold, "
    "disqualified under 50 % on gold, $0.50 per block of 4 gold with 3 right; 2-way, "
    "10-way for 500 random examples per protocol; §5: gold labels by majority (more than "
    "half) over the writer and the validators, no majority and 'invalid' discarded",
    instructions=(
        "Read the passage and choose the right answer to each question, or mark the "
        "question invalid if it has no single right answer."
    ),
    # §4 "10-Way Validation": 500 random examples per protocol get ten validators;
    # §5: four of them and the writer vote the gold label, six estimate human
    # performance (validation.ten_way). POST /api/v1/stages/{id}/ten-way/ picks them.
    # §4: "Data from all four protocols is shuffled and we run a single validation
    # task": the main rounds' questions wait (hold_handoff) until the requester
    # publishes the stage, and are shuffled into HITs then.
    config={
        "exclude_own_work": True,
        "hold_handoff": True,
        "shuffle": True,
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
            # §5: "If there is no majority agreement ... the example is discarded".
            "require": "absolute",
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
        items=MAIN_PASSAGES["BASELINE"],
        source="§3.1 writing: 2 questions x 4 options per passage; App. B: $3.50; "
        f"§5: {FINAL_EXAMPLES['BASELINE']:,} examples",
    ),
    _writing(
        "JUSTIFICATION",
        "JUSTIFICATION: Main round",
        feeds="Validation",
        requires=[],
        justification="required",
        reward=Decimal("4.00"),
        items=MAIN_PASSAGES["JUSTIFICATION"],
        source="§3.2 writing with a 1-3 sentence justification; App. B: $4.00 per passage; "
        f"§5: {FINAL_EXAMPLES['JUSTIFICATION']:,} examples",
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
            if not name.endswith("Tutorial writing")
        },
        **{
            f"{arm}: Tutorial writing": [
                {"external_id": f"{arm.lower()}-tutorial-{n}", **p}
                for n, p in enumerate(TUTORIAL_PASSAGES)
            ]
            for arm in ("CROWD", "EXPERT")
        },
    },
    paper_scale=(
        "Scale (§5): the main rounds' "
        + " / ".join(f"{FINAL_EXAMPLES[a]:,}" for a in ARMS)
        + " examples (BASELINE / JUSTIFICATION / CROWD / EXPERT), two per passage; "
        f"CROWD and EXPERT also a tutorial of {TUTORIAL_PLACES} places with two passages "
        f"to write on, and {ROUND_PASSAGES} passages ({ROUND_PASSAGES * 2} questions) in "
        "each of 3 training rounds (§3.3: 400-500); every question validated 2-way."
    ),
    pilot_scale=(
        f"Per arm {PILOT_PASSAGES} passages in each writing stage (the tutorial's two); "
        f"{PILOT_TUTORIAL_PLACES} tutorial places per arm; writers ranked on "
        f"{PILOT_MIN_GRADED_EXAMPLES} graded examples; validation quiz places as "
        "published (the quiz is one item)."
    ),
    export_format="jsonl",
)
