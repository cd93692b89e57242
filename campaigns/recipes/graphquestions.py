"""GraphQuestions: canonical questions generated from graph queries, paraphrased by the crowd.

Su, Sun, Sadler, Srivastava, Gür, Yan and Yan (2016), "On Generating Characteristic-rich
Question Sets for QA Evaluation", EMNLP 2016: §2-3 generate graph queries with chosen
characteristics (structure complexity in edges, function count / superlative /
comparative, commonness, answer cardinality) and a canonical question for each; §4
crowd workers paraphrase the canonical questions sentence by sentence, with the
entities' lexical forms offered, and trivial paraphrases are removed. GraphQuestions has
5,166 questions over 500 graph queries (about 10 paraphrases each).

The sample questions below are qaportal's own, written in the paper's style; importing
real ones means uploading items of this shape (or generating them, issue 11's tool).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from campaigns.recipes.base import Recipe, StageSpec

PARAPHRASES_PER_QUERY = 10

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
    source="§4 crowdsourced paraphrasing: each canonical question paraphrased by "
    "several workers, entity lexical forms offered, trivial paraphrases removed "
    "(here refused at submission above 0.8 similarity); pay not given in the "
    "paper, set to qaportal's wage floor for about a minute's work",
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
        "Su, Y., Sun, H., Sadler, B., Srivastava, M., Gür, I., Yan, Z., Yan, X. (2016). "
        "On Generating Characteristic-rich Question Sets for QA Evaluation. EMNLP 2016."
    ),
    summary=(
        "Canonical questions from graph queries (with their characteristics: edges, "
        "function, commonness, answer cardinality) are paraphrased by the crowd; trivial "
        "paraphrases are refused; the export keeps the characteristics for "
        "fine-grained evaluation."
    ),
    stages=(PARAPHRASE,),
    sample_items={PARAPHRASE.name: SAMPLE},
    paper_scale="5,166 questions over 500 graph queries (about 10 paraphrases each).",
    pilot_scale="The sample graph queries, 3 paraphrases each.",
    export_format="jsonl",
)
