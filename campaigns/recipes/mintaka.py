"""Mintaka: complex, natural questions by topic and complexity type, linked to Wikidata.

Sen, Aji and Saffari (2022), "Mintaka: A Complex, Natural, and Multilingual Dataset for
End-to-End Question Answering", COLING 2022: §3 (topics, complexity types, 250
questions per type and 500 generic per topic), §4 (US workers, 98 % approval, 5,000
approved tasks), §4.1 question elicitation, §4.2 answer entity linking, §4.3 question
entity linking, §4.4 translations, §5.1 statistics, appendix A (the task interfaces).
The deviations kept on purpose are listed in docs/recipes.md.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from campaigns.recipes.base import Recipe, StageSpec
from campaigns.tasktypes.question_writing import COMPLEXITY_TYPES
from campaigns.tasktypes.translation import MINTAKA_LANGUAGES

# Category names as the release spells them (``category`` in mintaka_*.json).
TOPICS = (
    "movies",
    "music",
    "sports",
    "books",
    "geography",
    "politics",
    "videogames",
    "history",
)
# §3: per topic, 250 questions of each of the 8 complexity types and 500 generic:
# 2,500 per topic, 20,000 in all. Paper-scale data, kept explicit for the pilot/paper
# switch: a pilot scales WORKERS_PER_ITEM down, the quotas stay the paper's.
PAPER_QUOTAS: dict[str, int] = dict.fromkeys(COMPLEXITY_TYPES, 250) | {"generic": 500}
QUESTIONS_PER_HIT = 5  # §4.1
# One item is one HIT of one cell with this many places (one worker per place): 250
# questions = 50 workers x 5. A cell with a larger quota (generic) gets more items
# (``movies-generic-1``, ``-2``); one worker still does at most one HIT per cell.
WORKERS_PER_ITEM = PAPER_QUOTAS["count"] // QUESTIONS_PER_HIT
PAPER_QUESTIONS = len(TOPICS) * sum(PAPER_QUOTAS.values())
assert PAPER_QUESTIONS == 20_000


def cell_items(
    quotas: dict[str, int] = PAPER_QUOTAS, *, topics: tuple[str, ...] = TOPICS
) -> list[dict[str, Any]]:
    """Writing items for every topic x type cell: ``quota / (5 x WORKERS_PER_ITEM)``
    items per cell (at least one), ids ``<topic>-<type>`` or ``<topic>-<type>-<n>``."""
    rows: list[dict[str, Any]] = []
    per_item = QUESTIONS_PER_HIT * WORKERS_PER_ITEM
    for topic in topics:
        for ctype in COMPLEXITY_TYPES:
            n = max(1, -(-quotas[ctype] // per_item))
            for k in range(n):
                suffix = f"-{k + 1}" if n > 1 else ""
                row: dict[str, Any] = {
                    "external_id": f"{topic}-{ctype}{suffix}",
                    "topic": topic,
                    "complexity_type": ctype,
                }
                if topic == "videogames":
                    row["topic_hint"] = "video games"
                rows.append(row)
    return rows


# §4: every task (elicitation and both linking tasks) had US workers with a 98 %
# approval rate and at least 5,000 approved tasks.
WORKER_REQUIREMENTS: list[dict[str, Any]] = [
    {"kind": "approval_rate", "min": 98},
    {"kind": "approved_count", "min": 5000},
    {"kind": "locale", "countries": ["US"]},
]
# §4.4: professional translators, not the crowd; the requester grants this to them.
TRANSLATOR_QUALIFICATION = "Professional translator (Mintaka §4.4)"

WRITE = StageSpec(
    name="Write questions",
    task_type="question_writing",
    source="§4.1 question elicitation: 5 Q/A pairs per HIT at $1.25; one HIT per worker "
    "per topic x type cell; a numeric value for count and superlative answers, and the "
    "counted entities for count; §3: 250 questions per type, 500 generic, per topic",
    instructions=(
        "Write {questions_per_hit} different questions about the topic, each of the "
        "complexity type shown, with their answers. Use any source you like. For count "
        "questions give the number and the entities counted (at least five when there are "
        "more); for superlative questions give the value that makes the answer the most or "
        "least."
    ),
    config={"questions_per_hit": QUESTIONS_PER_HIT, "expected_outputs_per_assignment": 4},
    reward=Decimal("1.25"),
    estimated_minutes=10,
    assignments_per_hit=WORKERS_PER_ITEM,
    qualification_requirements=WORKER_REQUIREMENTS,
    review_rules=[{"rule": "duplicates", "threshold": 0.9, "action": "hold"}],
    feeds="Link answer entities",
    handoff={
        # §4.2: yes/no and number answers are not linked (dates are values too).
        "exclude_answer_types": ["boolean", "numeric", "date"],
        # §4.3: every question is linked, whatever its answer.
        "unlinked_to": "Link question entities",
        # §4.4: off until the requester lists languages (any of MINTAKA_LANGUAGES).
        "translate_to": "Translate questions",
        "translate_languages": [],
    },
    paper_items=len(cell_items()),
    # Pilot (issue 19): 2 places on each of the writing items the recipe loads (the 72
    # cells, generic ones twice: 80 items); priced for those same items (issue 35).
    pilot={"assignments_per_hit": 2},
    pilot_items=len(cell_items()),
)
LINK_ANSWERS = StageSpec(
    name="Link answer entities",
    task_type="answer_entity_linking",
    source="§4.2 answer entity linking: 2 annotators, a 3rd on disagreement, $0.10 per "
    "answer plus $0.05 per additional agreed entity; yes/no and numeric answers excluded",
    instructions=(
        "Link each entity in the answer to its Wikidata item, or mark it as not in "
        "Wikidata. Use the suggestions or search by name."
    ),
    config={"expected_outputs_per_assignment": 0.5},
    reward=Decimal("0.10"),
    estimated_minutes=1,
    assignments_per_hit=2,
    qualification_requirements=WORKER_REQUIREMENTS,
    escalation_rule={"rule": "entity_agreement", "annotators": 2, "max": 3},
    bonus_rules=[{"rule": "per_agreed_entity", "amount": "0.05", "beyond": 1}],
    feeds="Link question entities",
    handoff={"target": "question_entity_linking"},
)
LINK_QUESTIONS = StageSpec(
    name="Link question entities",
    task_type="question_entity_linking",
    source="§4.3 question entity linking: spans proposed by spaCy (en_core_web_trf) NER "
    "and capitalised noun chunks; an entity already linked (exact string match) gets 1 "
    "annotator, a 2nd on disagreement; new ones 2, a 3rd on disagreement; $0.10 per entity",
    instructions=(
        "The highlighted spans may name entities. Link each one to its Wikidata item, "
        "mark it as not an entity or not in Wikidata, and add any entity we missed."
    ),
    reward=Decimal("0.10"),
    estimated_minutes=2,
    # One place to start: a seen item keeps it (a 2nd only on disagreement); the
    # preparation of the stage tops a new item's HIT up to ``annotators``.
    assignments_per_hit=1,
    qualification_requirements=WORKER_REQUIREMENTS,
    escalation_rule={
        "rule": "entity_agreement",
        "annotators": 2,
        "max": 3,
        "seen_annotators": 1,
    },
    bonus_rules=[{"rule": "per_agreed_entity", "amount": "0.10", "beyond": 1}],
    # Every question, whatever its answer (fed by both earlier stages).
    paper_items=PAPER_QUESTIONS,
    # The pilot links the questions its writing stage asks for: 2 places on each of its
    # 80 items, 5 questions each.
    pilot_items=len(cell_items()) * 2 * QUESTIONS_PER_HIT,
)
TRANSLATE = StageSpec(
    name="Translate questions",
    task_type="translation",
    source="§4.4 translations: professional translators (not MTurk) into Arabic, French, "
    "German, Hindi, Italian, Japanese, Portuguese and Spanish; off until languages are "
    "chosen in the writing stage's hand-off (translate_languages)",
    instructions=(
        "Translate each question into the language shown, keeping its meaning, names, "
        "numbers and dates exactly."
    ),
    config={"languages": sorted(MINTAKA_LANGUAGES)},
    reward=Decimal("0.00"),  # translators are paid under their own contract
    estimated_minutes=10,
    items_per_hit=10,
    qualification_requirements=[{"qualification": TRANSLATOR_QUALIFICATION}],
)

RECIPE = Recipe(
    name="mintaka",
    title="Mintaka (Sen et al., COLING 2022)",
    citation=(
        "Sen, P., Aji, A. F., Saffari, A. (2022). Mintaka: A Complex, Natural, and "
        "Multilingual Dataset for End-to-End Question Answering. COLING 2022 "
        "(§3-§4, appendix A)."
    ),
    summary=(
        "Workers write complex questions by topic and complexity type; answers, then "
        "questions, are linked to Wikidata by two annotators with a third on "
        "disagreement. Exported in Mintaka's JSON with a 70/10/20 split."
    ),
    stages=(WRITE, LINK_ANSWERS, LINK_QUESTIONS, TRANSLATE),
    sample_items={WRITE.name: cell_items()},
    paper_scale=(
        "20,000 questions (14,000 train / 2,000 dev / 4,000 test, §5 / appendix B); "
        "8 topics x (8 complexity types x 250 + 500 generic); 5 questions per HIT at "
        "$1.25; translated into 8 languages by professional translators (§4.4)."
    ),
    export_format="mintaka",
    pilot_scale="2 HITs (10 questions) per topic x complexity-type cell, then their linking.",
)
