"""WhyQA: why-questions over Wikipedia articles, answered by selecting sentences.

The protocol as qaportal's design records it (docs/ARCHITECTURE.md, "WhyQA"): a
qualification quiz graded essential / OK / wrong; question generation from a partial
article (title, section headers and the first sentence of each paragraph; questions
start with "Why"); answering by selecting 1-3 sentences or "no answer", 3 assignments
first, the question dropped when 2 of 3 say "no answer", otherwise extended to 8;
5 rephrasings per question, 5 questions per HIT. Pay: $0.04 per generated question,
$0.06 per answer, $0.05 per rephrasing; qualification by quiz and 80 % approval.
The sample article and quiz below are qaportal's own text, written for this recipe.
"""

from __future__ import annotations

from decimal import Decimal

from campaigns.recipes.base import Recipe, StageSpec

QUESTIONS_PER_ARTICLE = 10
QUIZ_PASSAGE = (
    "(1) The town's old mill stopped working in 1952. (2) A new dam upstream had "
    "lowered the river, so the wheel no longer turned in summer. (3) The mill had "
    "been built in 1820 by a family of weavers. (4) Its owners could not afford an "
    "electric motor. (5) Today the building is a museum."
)
QUIZ = {
    "questions": [
        {
            "id": "q1",
            "prompt": "Why did the old mill stop working?",
            "context": QUIZ_PASSAGE,
            "multiple": True,
            "max_selected": 3,
            "options": [
                {"id": "s1", "text": "Sentence 1", "group": "ok"},
                {"id": "s2", "text": "Sentence 2", "group": "essential"},
                {"id": "s3", "text": "Sentence 3", "group": "wrong"},
                {"id": "s4", "text": "Sentence 4", "group": "essential"},
                {"id": "s5", "text": "Sentence 5", "group": "wrong"},
            ],
            "required_points": 2,
        },
        {
            "id": "q2",
            "prompt": "Why did the wheel no longer turn in summer?",
            "context": QUIZ_PASSAGE,
            "multiple": True,
            "max_selected": 3,
            "options": [
                {"id": "s1", "text": "Sentence 1", "group": "wrong"},
                {"id": "s2", "text": "Sentence 2", "group": "essential"},
                {"id": "s3", "text": "Sentence 3", "group": "wrong"},
                {"id": "s4", "text": "Sentence 4", "group": "wrong"},
                {"id": "s5", "text": "Sentence 5", "group": "wrong"},
            ],
            "required_points": 2,
        },
        {
            "id": "q3",
            "prompt": "Why did the weavers choose this river?",
            "context": QUIZ_PASSAGE,
            "multiple": True,
            "max_selected": 3,
            "unanswerable": True,
            "options": [
                {"id": "s1", "text": "Sentence 1", "group": "wrong"},
                {"id": "s2", "text": "Sentence 2", "group": "wrong"},
                {"id": "s3", "text": "Sentence 3", "group": "wrong"},
                {"id": "s4", "text": "Sentence 4", "group": "wrong"},
                {"id": "s5", "text": "Sentence 5", "group": "wrong"},
            ],
        },
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
    source="qualification quiz: 3 questions graded essential / OK / wrong, answering "
    "the unanswerable question fails; workers with 80 % approval",
    instructions=(
        "Read the short passage and select the sentences that answer each question "
        '(at most three), or tick "no answer" if the passage does not say.'
    ),
    config=QUIZ,
    # Not given in the protocol: a few minutes' work, paid at qaportal's wage floor.
    reward=Decimal("0.50"),
    # One quiz item, one place per worker who may try it.
    assignments_per_hit=200,
    qualification_requirements=[{"kind": "approval_rate", "min": 80}],
    paper_items=1,
)
GENERATE = StageSpec(
    name="Write why-questions",
    task_type="why_question_from_partial_article",
    source="question generation from a partial article: title, headers and the first "
    "sentence of each paragraph; 10 questions per article at $0.04 each",
    instructions=(
        "You see the title, the section headers and the first sentence of each "
        'paragraph of an article. Write questions that start with "Why" and that you '
        "expect the full article to answer."
    ),
    config={
        "questions_per_article": QUESTIONS_PER_ARTICLE,
        "expected_outputs_per_assignment": QUESTIONS_PER_ARTICLE,
    },
    reward=Decimal("0.04") * QUESTIONS_PER_ARTICLE,
    qualification_requirements=[{"kind": "approval_rate", "min": 80}],
    review_rules=[{"rule": "duplicates", "threshold": 0.9, "action": "hold"}],
    feeds="Answer why-questions",
    paper_items=100,
)
ANSWER = StageSpec(
    name="Answer why-questions",
    task_type="sentence_selection_answer",
    source='answering: select 1-3 sentences or "no answer" at $0.06; 3 assignments '
    "first, drop the question when 2 of 3 say no answer, otherwise extend to 8",
    instructions=(
        "Select the one to three sentences of the article that answer the question, "
        'or tick "no answer" if the article does not answer it.'
    ),
    config={"max_sentences": 3, "expected_outputs_per_assignment": 0.2},
    reward=Decimal("0.06"),
    assignments_per_hit=3,
    # The quiz is about selecting answer sentences: answering is for those who passed.
    qualification_requirements=[
        {"kind": "approval_rate", "min": 80},
        {"quiz_stage": "Qualification quiz"},
    ],
    escalation_rule={"rule": "early_stop", "first": 3, "drop_if_no_answer": 2, "extend_to": 8},
    review_rules=[{"rule": "no_answer_rate", "max": 0.8, "min_answers": 5}],
    feeds="Rephrase why-questions",
)
REPHRASE = StageSpec(
    name="Rephrase why-questions",
    task_type="rephrase",
    source="rephrasing: 5 questions per HIT, 5 assignments (5 rephrasings per "
    "question) at $0.05 per rephrasing",
    instructions=(
        "Rewrite each question in your own words so that it asks the same thing. "
        "Do not just reorder or swap a single word."
    ),
    config={"max_similarity": 0.8},
    reward=Decimal("0.05") * 5,
    assignments_per_hit=5,
    items_per_hit=5,
)

RECIPE = Recipe(
    name="whyqa",
    title="WhyQA (why-questions over Wikipedia)",
    citation="WhyQA collection protocol, as recorded in qaportal's design (docs/ARCHITECTURE.md).",
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
        "Scale: 100 articles x 10 why-questions; each answered by 3 to 8 workers and, "
        "when answerable, rephrased 5 times."
    ),
    export_format="collection-metadata",
)
