"""GraphQuestions: canonical questions generated from graph queries, paraphrased by the crowd.

Su, Sun, Sadler, Srivatsa, Gür, Yan and Yan (2016), "On Generating Characteristic-rich
Question Sets for QA Evaluation", EMNLP 2016, pp. 562-572: §3.2 graph queries; §4
generation with the nine functions (count; max, min, argmax, argmin; >, >=, <, <=);
§5.1 minimization and §5.2 commonness; §6 natural language conversion (sentence-level
paraphrasing by several annotators, entity-level paraphrases from FACC1 lexical
forms); §7.1 construction (canonical questions verified by at least two graduate
students, 160 MTurk workers paraphrased, trivial paraphrases removed by hand, at most
3 entity-level paraphrases per sentence-level one); §7.2 500 graph queries, 2,460
sentence-level paraphrases, 5,166 questions, split evenly into training and testing
with all paraphrases of a query in the same set. Deviations kept on purpose are in
docs/recipes.md.

The sample questions below are qaportal's own, written in the paper's style; importing
real ones means uploading items of this shape, or generating them
(``linking.graphquestions``; two people check each before it is sent).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from campaigns.recipes.base import Recipe, StageSpec

# §7.2: 2,460 sentence-level paraphrases of 500 graph queries, about 5 per query.
PARAPHRASES_PER_QUERY = 5

SAMPLE: list[dict[str, Any]] = [
    {
        "external_id": "gq-1",
        "canonical_question": "what is the number of films directed by steven spielberg?",
        "characteristics": {
            "edges": 1,
            "function": "count",
            "commonness": -10.2,
            "answer_cardinality": 1,
        },
        "entities": [
            {"label": "Steven Spielberg", "id": "Q8877", "forms": ["Spielberg", "Steven Spielberg"]}
        ],
    },
    {
        "external_id": "gq-2",
        "canonical_question": "which river that flows through germany is the longest?",
        "characteristics": {
            "edges": 1,
            "function": "superlative",
            "commonness": -11.7,
            "answer_cardinality": 1,
        },
        "entities": [{"label": "Germany", "id": "Q183", "forms": ["Germany", "German"]}],
    },
    {
        "external_id": "gq-3",
        "canonical_question": "who is the parent of the person that founded microsoft?",
        "characteristics": {
            "edges": 2,
            "function": "none",
            "commonness": -14.9,
            "answer_cardinality": 4,
        },
        "entities": [{"label": "Microsoft", "id": "Q2283", "forms": ["Microsoft", "MS"]}],
    },
    {
        "external_id": "gq-4",
        "canonical_question": "which mountains are higher than 8000 meters?",
        "characteristics": {
            "edges": 1,
            "function": "comparative",
            "commonness": -12.4,
            "answer_cardinality": 14,
        },
        "entities": [],
    },
]

PARAPHRASE = StageSpec(
    name="Paraphrase canonical questions",
    task_type="paraphrase_canonical",
    source="§6 and §7.1 sentence-level paraphrasing: each canonical question "
    "paraphrased by several MTurk workers (2,460 paraphrases of 500 queries, §7.2), "
    "entity lexical forms offered, trivial paraphrases removed (here refused at "
    "submission: content words of the canonical form in order, edit distance, word "
    "overlap); pay and worker requirements not given in the paper: pay set to "
    "qaportal's wage floor for about a minute's work, no requirements",
    instructions=(
        "Rewrite the machine-made question as a natural question a person would ask, "
        "with the same meaning and answer. Mention each entity (you may use one of the "
        "names offered). Do not just reorder words or change one word."
    ),
    config={
        "paraphrases_per_item": 1,
        "max_similarity": 0.8,
        "require_entity_mention": True,
    },
    reward=Decimal("0.25"),
    estimated_minutes=2,
    assignments_per_hit=PARAPHRASES_PER_QUERY,
    review_rules=[{"rule": "duplicates", "threshold": 0.9, "action": "reject"}],
    paper_items=500,
    # Pilot (issue 19): the sample queries, 3 paraphrases each.
    pilot={"assignments_per_hit": 3},
    pilot_items=len(SAMPLE),
)

RECIPE = Recipe(
    name="graphquestions",
    title="GraphQuestions (Su et al., EMNLP 2016)",
    citation=(
        "Su, Y., Sun, H., Sadler, B., Srivatsa, M., Gür, I., Yan, Z., Yan, X. (2016). "
        "On Generating Characteristic-rich Question Sets for QA Evaluation. EMNLP 2016, "
        "pp. 562-572 (§3-§7)."
    ),
    summary=(
        "Canonical questions from graph queries (with their characteristics: edges, "
        "function, commonness, answer cardinality) are paraphrased by the crowd; trivial "
        "paraphrases are refused; the export keeps the characteristics for "
        "fine-grained evaluation and splits train/test by graph query."
    ),
    stages=(PARAPHRASE,),
    sample_items={PARAPHRASE.name: SAMPLE},
    paper_scale=(
        "500 graph queries, 2,460 sentence-level paraphrases (about 5 per query), 5,166 "
        "questions with entity-level paraphrases (§7.2); split evenly, grouped by query."
    ),
    pilot_scale="The sample graph queries, 3 paraphrases each.",
    export_format="graphquestions",
)
