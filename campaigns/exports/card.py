"""The dataset card (``README.md``) of an ``hf`` export: the YAML header the Hugging Face
Hub and ``datasets`` read (configs and their data files, splits with row counts,
features, license, language, task categories, size category, pretty name) and sections
filled from the campaign (``campaigns.exports.card_facts``): the collection process per
stage, pay and effective hourly wage, worker counts, agreement, rejection and filtering
rules, protocol arms, annotator demographics, deviations from the source protocol, the
datasheet, and what this export contained."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from campaigns.exports.card_facts import CampaignFacts, day
from campaigns.exports.figures import (
    alpha,
    money,
    percent,
    stage_rows_markdown,
)
from campaigns.exports.model_loop import model_loop_sentences

TASK_CATEGORIES = ["question-answering"]


@dataclass(frozen=True)
class ExportContents:
    """What one export holds, as recorded in its audit and on its card."""

    shape: str
    split_rows: dict[str, int]
    files: dict[str, str]  # path in the folder -> split
    checksum: str
    version: str
    campaign_state: str
    ratios: Sequence[Decimal]
    seed: int
    generated_at: str
    license: str
    languages: Sequence[str]
    url: str = ""  # where the dataset is published, when known (the Hub repository)

    @property
    def rows(self) -> int:
        return sum(self.split_rows.values())


def size_category(n: int) -> str:
    """The Hub's ``size_categories`` bucket of ``n`` rows."""
    for limit, name in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
        (10_000_000, "1M<n<10M"),
    ):
        if n < limit:
            return name
    return "10M<n<100M"


def card_yaml(*, facts: CampaignFacts, contents: ExportContents, features: Any) -> str:
    """The card's YAML header (without the ``---`` fences)."""
    from datasets import DatasetInfo, SplitDict, SplitInfo
    from datasets.info import DatasetInfosDict
    from huggingface_hub import DatasetCardData

    splits = SplitDict()
    for name, count in contents.split_rows.items():
        splits.add(SplitInfo(name=name, num_examples=count))
    data = DatasetCardData(
        pretty_name=facts.campaign.name,
        license=contents.license,
        language=list(contents.languages),
        task_categories=TASK_CATEGORIES,
        size_categories=[size_category(contents.rows)],
        configs=[
            {
                "config_name": "default",
                "data_files": [
                    {"split": split, "path": path} for path, split in contents.files.items()
                ],
            }
        ],
        tags=["crowdsourced", "qaportal"],
    )
    DatasetInfosDict(
        {"default": DatasetInfo(features=features, splits=splits, dataset_name=facts.campaign.slug)}
    ).to_dataset_card_data(data)
    return str(data.to_yaml())


def _rules(facts: CampaignFacts) -> list[str]:
    lines = []
    for s in facts.stages:
        parts = []
        if s.stage.qualification_requirements:
            parts.append(f"qualification requirements {s.stage.qualification_requirements}")
        if s.stage.review_rules:
            parts.append(f"review rules {s.stage.review_rules}")
        if s.stage.escalation_rule:
            parts.append(f"escalation {s.stage.escalation_rule}")
        if Decimal(s.stage.gold_ratio):
            parts.append(f"gold ratio {s.stage.gold_ratio}")
        if s.rejected_by:
            parts.append(
                "rejected: "
                + ", ".join(f"{n} by {src}" for src, n in sorted(s.rejected_by.items()))
            )
        if parts:
            lines.append(f"- **{s.stage.name}**: " + "; ".join(parts) + ".")
    return lines or ["- Every assignment was approved or rejected by the requester."]


def _pay(facts: CampaignFacts) -> list[str]:
    """The card's pay section: money on a paid workforce, time on an in-house one."""
    c, costs = facts.campaign, facts.costs
    if not facts.paid:
        return [
            "## Work time",
            "",
            f"- The workers were an in-house team ({c.get_provider_display()}), paid no "
            "rewards through qaportal: the table above gives each stage's median work time.",
            "- No cost per accepted example: qaportal paid nothing "
            f"({facts.accepted_examples:,} accepted examples: the rows of this dataset).",
        ]
    return [
        "## Pay",
        "",
        f"- Spent: {money(costs.spent, c.currency)}; committed: "
        f"{money(costs.committed, c.currency)}.",
        f"- Cost per accepted example: {money(facts.cost_per_accepted_example, c.currency)} "
        f"({facts.accepted_examples:,} accepted examples: the rows of this dataset).",
        f"- Wage floor: {money(costs.wage_floor, c.currency)}/h; the effective hourly wage of "
        "each stage (reward over the median work time) is in the table above.",
    ]


def _agreement(facts: CampaignFacts) -> list[str]:
    lines = []
    for s in facts.stages:
        q = s.quality
        if q is None:
            continue
        parts = [
            f"Krippendorff's alpha {alpha(q.agreement.alpha)}",
            f"percent agreement {percent(q.agreement.percent_agreement)}",
            f"approval rate {percent(q.approval_rate)}",
        ]
        if q.gold_total:
            parts.append(
                f"gold accuracy {percent(q.gold_accuracy)} ({q.gold_correct}/{q.gold_total})"
            )
        if s.entity_after_2 is not None:
            parts.append(
                f"entity agreement after 2 annotators {percent(s.entity_after_2)}, "
                f"after 3 {percent(s.entity_after_3)}"
            )
        lines.append(f"- **{s.stage.name}**: " + ", ".join(parts) + ".")
    return lines or ["- No work stored yet."]


def _arms(facts: CampaignFacts) -> list[str]:
    if not facts.arms:
        return []
    lines = [
        "## Protocol arms",
        "",
        "| arm | workers | stored | accepted | alpha | agreement | cost per accepted |",
        "|---|---|---|---|---|---|---|",
    ]
    for a in facts.arms:
        lines.append(
            f"| {a.arm} | {a.workers} | {a.stored} | {a.accepted} | {alpha(a.alpha)} | "
            f"{percent(a.percent_agreement)} | {money(a.cost_per_accepted, facts.currency)} |"
        )
    return [*lines, ""]


def _demographics(facts: CampaignFacts) -> list[str]:
    surveys = [s for s in facts.stages if s.survey]
    if not surveys:
        return []
    lines = ["## Annotator demographics", ""]
    for s in surveys:
        for question, options in s.survey.items():
            lines.append(f"- {question} " + ", ".join(f"{o}: {n}" for o, n in options.items()))
    return [*lines, "", 'Counts under 5 are shown as "< 5".', ""]


def _load_snippet(shape: str) -> list[str]:
    return [
        "```python",
        "from datasets import load_dataset",
        "",
        'dataset = load_dataset("path/to/this/folder")  # or the Hub repository id',
        'print(dataset["train"][0])',
        "```",
    ]


def card_markdown(
    *,
    facts: CampaignFacts,
    contents: ExportContents,
    features: Any,
    datasheet: str,
    field_notes: Mapping[str, str],
) -> str:
    """The whole ``README.md``: YAML header, then the sections."""
    c = facts.campaign
    recipe = facts.recipe
    lines = [
        "---",
        card_yaml(facts=facts, contents=contents, features=features).rstrip("\n"),
        "---",
        "",
        f"# {c.name}",
        "",
        c.description.strip() or "A question-answering dataset collected with qaportal.",
        "",
    ]
    if recipe is not None:
        lines += [f"Collected following {recipe.title}: {recipe.summary}", ""]
        lines += [f"Source protocol: {recipe.citation}", ""]
    lines += ["## Loading", "", *_load_snippet(contents.shape), "", "## Splits", ""]
    lines += ["| split | rows |", "|---|---|"]
    lines += [f"| {name} | {count:,} |" for name, count in contents.split_rows.items()]
    ratios = "/".join(str(r) for r in contents.ratios)
    lines += [
        "",
        f"A shuffle with seed {contents.seed}, cut at {ratios} (train/dev/test).",
        "",
        "## Fields",
        "",
    ]
    lines += [f"- `{name}`: {note}" for name, note in field_notes.items()]
    lines += [
        "",
        "## Collection process",
        "",
        f"Platform: {c.get_provider_display()}. Each stage's figures below are those of the "
        "campaign's dashboard at export time.",
        "",
        *stage_rows_markdown(facts),
        "",
        *_pay(facts),
        "",
        "## Workers",
        "",
        f"{facts.workers} distinct workers stored work; per stage in the table above. "
        "Workers appear as pseudonyms only (a keyed hash of the platform id).",
        "",
        "## Agreement",
        "",
        *_agreement(facts),
        "",
        "## Rejection and filtering",
        "",
        *_rules(facts),
        "",
        *(
            ["## Model in the loop", "", *model_loop_sentences(facts.model_loop), ""]
            if model_loop_sentences(facts.model_loop)
            else []
        ),
        *_arms(facts),
        *_demographics(facts),
        "## Deviations from the source protocol",
        "",
        *(
            [f"- {d}" for d in facts.deviations]
            or [
                "- None: the stages ran as the recipe sets them."
                if recipe is not None
                else "- No source protocol: the campaign was designed from scratch."
            ]
        ),
        "",
        "## This version",
        "",
        f"- Version: {contents.version}",
        f"- Data checksum: `{contents.checksum}`",
        *([f"- Published at: {contents.url}"] if contents.url else []),
        f"- Campaign state at export: {contents.campaign_state}",
        f"- Exported: {contents.generated_at}",
        f"- Collected: {day(facts.first_submission) or '—'} to {day(facts.last_submission) or '—'}",
        "",
        "## Datasheet",
        "",
        _demote(datasheet),
        "",
    ]
    return "\n".join(lines)


def _demote(markdown: str) -> str:
    """The datasheet's headings one level down, so they sit under the card's section."""
    out = []
    for line in markdown.splitlines():
        out.append("##" + line if line.startswith("#") else line)
    return "\n".join(out)
