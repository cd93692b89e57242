"""Adversarial QA on passages, with a model in the loop.

After Bartolo, Roberts, Welbl, Riedel and Stenetorp (2020), "Beat the AI: Investigating
Adversarial Human Annotation for Reading Comprehension", TACL 8, and Kiela et al. (2021),
"Dynabench: Rethinking Benchmarking in NLP", NAACL. What the recipe takes from them:
from "Beat the AI", its annotation protocol (an annotator writes a question about a
passage and marks its answer in the passage; a reading-comprehension model answers the
question at once; the annotator sees the model's answer and tries again until the model
is wrong or the tries run out) and the validation of the examples that fooled the model
by other annotators; from Dynabench, the same loop as a platform, with the rate at which
the model is fooled, and its verified variant, as the measure of a round
("model error rate", "verified model error rate").

What is qaportal's own: answers are whole sentences (``adversarial_passage_question``),
so the app judges the model's answer by the sentence it points at, where "Beat the AI"
compared answer spans; the model is the built-in BM25 sentence retrieval baseline (a
requester points the stage at any OpenAI-compatible endpoint instead); rewards, the
bonus, the tries and the scales are qaportal's choices, not the papers' (their own
counts are in the papers). The pilot passages are the paragraphs of the WhyQA recipe's
sample article, qaportal's own text.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from campaigns.recipes.base import Recipe, StageSpec
from campaigns.recipes.whyqa import SAMPLE_ARTICLE

MAX_TRIES = 3
FOOL_BONUS = Decimal("0.25")
# A full run as qaportal sizes it: 2,000 passages, one question each.
FULL_PASSAGES = 2000


def _passages(article: dict[str, Any]) -> list[dict[str, Any]]:
    """One passage per paragraph of ``article`` (item-upload rows)."""
    rows = []
    for s, section in enumerate(article["sections"]):
        for p, sentences in enumerate(section["paragraphs"]):
            rows.append(
                {
                    "external_id": f"{article['article_id']}-{s + 1}-{p + 1}",
                    "passage_id": f"{article['article_id']}-{s + 1}-{p + 1}",
                    "title": f"{article['title']}: {section.get('header', '')}".rstrip(": "),
                    "sentences": list(sentences),
                }
            )
    return rows


PILOT_PASSAGES = _passages(SAMPLE_ARTICLE)

WRITE = StageSpec(
    name="Write questions that beat the model",
    task_type="adversarial_passage_question",
    source="Beat the AI, the annotation protocol: a question about the passage, its "
    "answer marked in the passage, the model's answer shown at once, new tries until the "
    "model is wrong; Dynabench: the same loop on a platform. Answers are sentences here, "
    "judged by the app; tries, reward and bonus are qaportal's",
    instructions=(
        "Write a question about the passage and tick the sentence that answers it. A "
        "model then answers your question: try to write questions it gets wrong, in your "
        "own words. You have a few tries per passage; a question that fools the model, "
        "once other workers confirm it, earns a bonus."
    ),
    # ``endpoint`` is filled in when the recipe is loaded: the requester's built-in
    # baseline (``recipes.services``), which any registered endpoint may replace.
    config={
        "adversarial": {"max_tries": MAX_TRIES, "judge": "auto"},
        "expected_outputs_per_assignment": 1,
    },
    reward=Decimal("0.50"),
    estimated_minutes=4,
    assignments_per_hit=1,
    bonus_rules=[{"rule": "verified_fool", "amount": str(FOOL_BONUS)}],
    feeds="Confirm the model was fooled",
    paper_items=FULL_PASSAGES,
    pilot_items=len(PILOT_PASSAGES),
    approval_note="the requester approves the writing (its claimed fools go on to validation)",
)
VALIDATE = StageSpec(
    name="Confirm the model was fooled",
    task_type="adversarial_fool_validation",
    source="Beat the AI: examples that fooled the model validated by other annotators; "
    "Dynabench: the verified model error rate counts only validated fools. Three "
    "validators and the majority are qaportal's",
    instructions=(
        "Read the passage, the question, the writer's answer (in bold) and the model's "
        "answer. Say whether the writer is right and the model wrong."
    ),
    config={},
    reward=Decimal("0.10"),
    estimated_minutes=1,
    assignments_per_hit=3,
    pilot={"assignments_per_hit": 1},
    approval_note="the requester approves; the majority verdict confirms the fool",
)

RECIPE = Recipe(
    name="adversarial_qa",
    title="Adversarial QA with a model in the loop (Beat the AI, TACL 2020; Dynabench, NAACL 2021)",
    citation=(
        "Bartolo, M., Roberts, A., Welbl, J., Riedel, S. and Stenetorp, P. (2020). Beat the "
        "AI: Investigating Adversarial Human Annotation for Reading Comprehension. TACL 8. "
        "Kiela, D. et al. (2021). Dynabench: Rethinking Benchmarking in NLP. NAACL."
    ),
    summary=(
        "Workers write questions about passages that a model answers wrongly (the model "
        "answers each try at once; up to three tries per passage), other workers confirm "
        "the fools, and confirmed fools earn a bonus. The dashboard shows the fooled rate."
    ),
    stages=(WRITE, VALIDATE),
    sample_items={WRITE.name: PILOT_PASSAGES},
    paper_scale=(
        "The papers' own counts are in the papers; the full run here is qaportal's "
        f"sizing: {FULL_PASSAGES:,} passages, one question each, 3 validators per fool."
    ),
    pilot_scale=(
        f"{len(PILOT_PASSAGES)} passages of the WhyQA sample article, one writer each, "
        "one validator per claimed fool, with the built-in BM25 baseline as the model."
    ),
    export_format="jsonl",
)
