"""Mintaka: complex, natural questions by topic and complexity type, linked to Wikidata.

Sen, Aji and Saffari (2022), "Mintaka: A Complex, Natural, and Multilingual Dataset for
End-to-End Question Answering", COLING 2022, §3 "Data collection" (question elicitation,
answer entity linking, question entity linking; workers, pay and requirements as
reported there). 20,000 questions: 8 topics x 9 complexity types.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from campaigns.recipes.base import Recipe, StageSpec

TOPICS = (
    "movies",
    "music",
    "sports",
    "books",
    "geography",
    "politics",
    "video games",
    "history",
)
COMPLEXITY_TYPES = (
    "count",
    "comparative",
    "superlative",
    "ordinal",
    "multihop",
    "intersection",
    "difference",
    "yesno",
    "generic",
)
# 20,000 questions / 5 per HIT = 4,000 HITs over 72 cells: 56 workers per cell.
PAPER_QUESTIONS = 20_000
WORKERS_PER_CELL = 56
# §3.1: US workers with a 98 % approval rate and 5,000 approved HITs.
WORKER_REQUIREMENTS: list[dict[str, Any]] = [
    {"kind": "approval_rate", "min": 98},
    {"kind": "approved_count", "min": 5000},
    {"kind": "locale", "countries": ["US"]},
]

WRITE = StageSpec(
    name="Write questions",
    task_type="question_writing",
    source="§3.1 question elicitation: 5 Q/A pairs per HIT at $1.25; one HIT per worker "
    "per topic x type cell; a numeric value for count and superlative answers",
    instructions=(
        "Write five different questions about the topic, each of the complexity type "
        "shown, with their answers. Questions must be answerable from general knowledge "
        "and have one clear answer. For count questions give the number and, where "
        "there are few, the entities counted."
    ),
    config={"questions_per_hit": 5, "expected_outputs_per_assignment": 4},
    reward=Decimal("1.25"),
    assignments_per_hit=WORKERS_PER_CELL,
    qualification_requirements=WORKER_REQUIREMENTS,
    review_rules=[{"rule": "duplicates", "threshold": 0.9, "action": "hold"}],
    feeds="Link answer entities",
    handoff={"exclude_answer_types": ["boolean", "numeric"]},
    paper_items=len(TOPICS) * len(COMPLEXITY_TYPES),
    # Pilot (issue 19): 2 HITs per topic x type cell.
    pilot={"assignments_per_hit": 2},
    pilot_items=len(TOPICS) * len(COMPLEXITY_TYPES),
)
LINK_ANSWERS = StageSpec(
    name="Link answer entities",
    task_type="answer_entity_linking",
    source="§3.2 answer entity linking: 2 annotators, a 3rd on disagreement, $0.10 per "
    "answer plus $0.05 per additional agreed entity; yes/no and numeric answers excluded",
    instructions=(
        "Link each entity in the answer to its Wikidata item, or mark it as not in "
        "Wikidata. Use the suggestions or search by name."
    ),
    config={"expected_outputs_per_assignment": 0.5},
    reward=Decimal("0.10"),
    assignments_per_hit=2,
    escalation_rule={"rule": "entity_agreement", "annotators": 2, "max": 3},
    bonus_rules=[{"rule": "per_agreed_entity", "amount": "0.05", "beyond": 1}],
    feeds="Link question entities",
    handoff={"target": "question_entity_linking"},
)
LINK_QUESTIONS = StageSpec(
    name="Link question entities",
    task_type="question_entity_linking",
    source="§3.3 question entity linking: spans proposed by spaCy NER and capitalised "
    "noun chunks; entities already linked elsewhere need 1 annotator (+1 on "
    "disagreement), new ones 2 (+1); $0.10 per entity",
    instructions=(
        "The highlighted spans may name entities. Link each one to its Wikidata item, "
        "mark it as not an entity or not in Wikidata, and add any entity we missed."
    ),
    reward=Decimal("0.10"),
    assignments_per_hit=2,
    escalation_rule={
        "rule": "entity_agreement",
        "annotators": 2,
        "max": 3,
        "seen_annotators": 1,
    },
    bonus_rules=[{"rule": "per_agreed_entity", "amount": "0.10", "beyond": 1}],
)

RECIPE = Recipe(
    name="mintaka",
    title="Mintaka (Sen et al., COLING 2022)",
    citation=(
        "Sen, P., Aji, A. F., Saffari, A. (2022). Mintaka: A Complex, Natural, and "
        "Multilingual Dataset for End-to-End Question Answering. COLING 2022."
    ),
    summary=(
        "Workers write complex questions by topic and complexity type; answers, then "
        "questions, are linked to Wikidata by two annotators with a third on "
        "disagreement. Exported in Mintaka's JSON with a 70/10/20 split."
    ),
    stages=(WRITE, LINK_ANSWERS, LINK_QUESTIONS),
    sample_items={
        WRITE.name: [
            {"external_id": f"{topic}-{ctype}", "topic": topic, "complexity_type": ctype}
            for topic in TOPICS
            for ctype in COMPLEXITY_TYPES
        ]
    },
    paper_scale=(
        "20,000 questions (14,000 train / 2,000 dev / 4,000 test); 8 topics x 9 "
        "complexity types; 5 questions per HIT at $1.25."
    ),
    export_format="mintaka",
    pilot_scale="2 HITs (10 questions) per topic x complexity-type cell, then their linking.",
)
