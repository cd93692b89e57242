"""WhyQA: why-questions over Wikipedia articles, answered by selecting sentences.

Mrozinski, Whittaker and Furui (2008), "Collecting a Why-question corpus for
development and evaluation of an automatic QA-system", ACL-08: HLT, pp. 443-451.
What the recipe takes from it: §2.2 (84 articles), §2.2.1 QGenHIT (the title, the
headers and the first sentence of each paragraph; questions start with "Why"; $0.04
per HIT, 10 questions per article: one question per assignment), §2.2.2 QAHIT (one
question per HIT with the whole article, 1-3 sentences or No-Answer, $0.06 per HIT,
10 answers cut to 8), §2.2.3 QRepHIT (5 questions per HIT, 5 assignments, $0.05 per
HIT), §2.3 Qualifications (80 % HIT approval for everything; the quiz of 3 questions
graded essential / OK / wrong, the unanswerable one failing when answered, required
for answering and rephrasing), §3 (695 questions, 536 answerable with 8-10 answers;
about $310 of rewards), §3.2 (3 assignments first, dropped at 2 of 3 No-Answer) and
§3.2.1-3.2.2 (agreement by sentence ids and ROUGE; ``campaigns.selectors_whyqa``).
The sample article and quiz below are qaportal's own text, written for this recipe.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from campaigns.recipes.base import Recipe, StageSpec

# §2.2.1: 10 questions per article, one per QGenHIT at $0.04.
QUESTIONS_PER_ARTICLE = 10
PAPER_ARTICLES = 84  # §2.2
# §2.3: 2,355 workers took the qualification test.
PAPER_QUIZ_TAKERS = 2355
# §3: 536 of 695 questions answerable; 3 first answers each (§3.2).
ANSWERABLE_SHARE = Decimal("536") / Decimal("695")
PILOT_QUIZ_TAKERS = 20
WORKER_APPROVAL = {"kind": "approval_rate", "min": 80}

QUIZ_PASSAGE = (
    "(1) The town's old mill stopped working in 1952. (2) A new dam upstream had "
    "lowered the river, so the wheel no longer turned in summer. (3) The mill had "
    "been built in 1820 by a family of weavers. (4) Its owners could not afford an "
    "electric motor. (5) Today the building is a museum."
)


def _quiz_question(
    qid: str, prompt: str, groups: str, *, unanswerable: bool = False
) -> dict[str, Any]:
    """A quiz question on ``QUIZ_PASSAGE``: select up to 3 of its five sentences, graded
    by ``groups`` (one word a sentence: essential, ok or wrong). An answerable question
    needs 2 points; an unanswerable one wants "no answer"."""
    question: dict[str, Any] = {
        "id": qid,
        "prompt": prompt,
        "context": QUIZ_PASSAGE,
        "multiple": True,
        "max_selected": 3,
    }
    if unanswerable:
        question["unanswerable"] = True
    question["options"] = [
        {"id": f"s{n}", "text": f"Sentence {n}", "group": group}
        for n, group in enumerate(groups.split(), start=1)
    ]
    if not unanswerable:
        question["required_points"] = 2
    return question


QUIZ = {
    "questions": [
        _quiz_question(
            "q1", "Why did the old mill stop working?", "ok essential wrong essential wrong"
        ),
        _quiz_question(
            "q2", "Why did the wheel no longer turn in summer?", "wrong essential wrong wrong wrong"
        ),
        _quiz_question(
            "q3",
            "Why did the weavers choose this river?",
            "wrong wrong wrong wrong wrong",
            unanswerable=True,
        ),
    ],
    "scoring": {
        "group_points": {"essential": 2, "ok": 1, "wrong": -1},
        "floor": 0,
        "pass_ratio": 0.6,
        "unanswerable_points": 2,
        "answering_unanswerable": "fail",
    },
    "allow_no_answer": True,
}

SAMPLE_ARTICLE = {
    "external_id": "lighthouse-keepers",
    "article_id": "lighthouse-keepers",
    "title": "Lighthouse keeper",
    "sections": [
        {
            "header": "History",
            "paragraphs": [
                [
                    "Lighthouse keepers tended the lamps of coastal lighthouses for centuries.",
                    "Early lamps burned oil or candles and needed trimming through the night.",
                    "Because a dark light could wreck a ship, keepers worked in shifts.",
                ],
                [
                    "Many lighthouses stood on remote rocks far from any town.",
                    "Supplies arrived by boat, and storms could cut a station off for weeks.",
                    "Families sometimes lived at the station, so keepers were not alone.",
                ],
            ],
        },
        {
            "header": "Automation",
            "paragraphs": [
                [
                    "In the twentieth century most lighthouses were automated.",
                    "Electric lamps with timers and sensors no longer needed a person on watch.",
                    "Automation was cheaper than paying and supplying resident keepers.",
                ],
                [
                    "A few lights still have keepers today.",
                    "Some are kept for tourism, and others because their sites are "
                    "hard to monitor remotely.",
                ],
            ],
        },
    ],
}

QUIZ_STAGE = StageSpec(
    name="Qualification quiz",
    task_type="quiz",
    source="§2.3 qualification: 3 questions, 1-3 of about 10 sentences or no answer, "
    "graded essential / OK / wrong, answering the unanswerable question fails; 80 % "
    "approval; 2,355 workers took it",
    instructions=(
        "Read the short passage and select the sentences that answer each question "
        '(at most three), or tick "no answer" if the passage does not say.'
    ),
    config=QUIZ,
    # §2.3 ran it as an MTurk Qualification test, which carries no reward.
    reward=Decimal("0.00"),
    estimated_minutes=5,
    # One quiz item, one place per worker who may try it.
    assignments_per_hit=PAPER_QUIZ_TAKERS,
    qualification_requirements=[WORKER_APPROVAL],
    paper_items=1,
    pilot={"assignments_per_hit": PILOT_QUIZ_TAKERS},
    approval_note="a quiz grades itself and grants its qualification on a pass",
)
GENERATE = StageSpec(
    name="Write why-questions",
    task_type="why_question_from_partial_article",
    source="§2.2.1 QGenHIT: title, headers and the first sentence of each paragraph; "
    'a question starting with "Why"; $0.04 per HIT, 10 questions per article; 80 % '
    "approval only (§2.3)",
    instructions=(
        "You see the title, the section headers and the first sentence of each "
        'paragraph of an article. Write a question that starts with "Why" and that you '
        "expect the full article to answer."
    ),
    config={"questions_per_article": 1, "expected_outputs_per_assignment": 1},
    reward=Decimal("0.04"),
    estimated_minutes=2,
    # One question per assignment: ten workers per article give its ten questions.
    assignments_per_hit=QUESTIONS_PER_ARTICLE,
    qualification_requirements=[WORKER_APPROVAL],
    review_rules=[{"rule": "duplicates", "threshold": 0.9, "action": "hold"}],
    feeds="Answer why-questions",
    paper_items=PAPER_ARTICLES,
    pilot_items=1,
    approval_note="§3.1: the authors screened the work by hand and rejected what was "
    "clearly unacceptable; duplicates are held for them",
)
ANSWER = StageSpec(
    name="Answer why-questions",
    task_type="sentence_selection_answer",
    source="§2.2.2 QAHIT: one question with the whole article, 1-3 sentences or "
    "No-Answer, $0.06 per HIT; §3.2: 3 assignments first, dropped when 2 of 3 say "
    "No-Answer, otherwise 8 answers; §2.3: quiz and 80 % approval",
    instructions=(
        "Select the one to {max_sentences} sentences of the article that answer the question, "
        'or tick "no answer" if the article does not answer it.'
    ),
    config={
        "max_sentences": 3,
        # §3: 536 of 695 questions answerable, each after 3 first answers.
        "expected_outputs_per_assignment": float(round(ANSWERABLE_SHARE / 3, 4)),
    },
    reward=Decimal("0.06"),
    estimated_minutes=3,
    assignments_per_hit=3,
    # The quiz is about selecting answer sentences: answering is for those who passed.
    qualification_requirements=[WORKER_APPROVAL, {"quiz_stage": "Qualification quiz"}],
    escalation_rule={"rule": "early_stop", "first": 3, "drop_if_no_answer": 2, "extend_to": 8},
    review_rules=[{"rule": "no_answer_rate", "max": 0.8, "min_answers": 5}],
    feeds="Rephrase why-questions",
    approval_note="§3.1: screened by hand; §3.2.2 suggests ROUGE agreement for automatic "
    "approval as future work (add a peer_overlap rule to try it)",
)
REPHRASE = StageSpec(
    name="Rephrase why-questions",
    task_type="rephrase",
    source="§2.2.3 QRepHIT: 5 questions per HIT, 5 assignments (5 rephrasings per "
    "question), $0.05 per HIT; §2.3: quiz and 80 % approval",
    instructions=(
        "Rewrite each question in your own words so that it asks the same thing. "
        "Do not just reorder or swap a single word."
    ),
    config={"max_similarity": 0.8},
    reward=Decimal("0.05"),
    estimated_minutes=3,
    assignments_per_hit=5,
    items_per_hit=5,
    # §2.3: the quiz and 80 % approval were required for QRepHITs as for QAHITs.
    qualification_requirements=[WORKER_APPROVAL, {"quiz_stage": "Qualification quiz"}],
    approval_note="§3.1: screened by hand",
)

RECIPE = Recipe(
    name="whyqa",
    title="WhyQA (Mrozinski, Whittaker and Furui, ACL-08: HLT)",
    citation=(
        "Joanna Mrozinski, Edward Whittaker and Sadaoki Furui (2008), Collecting a "
        "Why-question corpus for development and evaluation of an automatic QA-system, "
        "ACL-08: HLT, §2.2-2.3 (collection, qualifications) and §3 (corpus, agreement)."
    ),
    summary=(
        "A quiz qualifies workers; they write why-questions from partial articles, "
        "others answer by selecting sentences with early stopping, and answerable "
        "questions are rephrased five times. Agreement by sentence-id overlap and ROUGE; "
        "collection metadata exported per assignment."
    ),
    stages=(QUIZ_STAGE, GENERATE, ANSWER, REPHRASE),
    sample_items={
        QUIZ_STAGE.name: [{"external_id": "quiz"}],
        GENERATE.name: [SAMPLE_ARTICLE],
    },
    paper_scale=(
        "§2.2-3: 84 articles x 10 why-questions (695 kept), 2,355 quiz takers; each "
        "question answered by 3, then 8 workers when answerable (536), and rephrased 5 "
        "times; about $310 in rewards and $40 in fees, trials included."
    ),
    pilot_scale=(
        "One article: 10 why-questions (one per HIT), each answered by 3 workers (8 when "
        "answerable) and rephrased 5 times; 20 quiz places."
    ),
    export_format="collection-metadata",
)
