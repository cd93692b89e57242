"""The datasheet (Gebru et al., "Datasheets for Datasets", CACM 2021) of a campaign's
dataset, as Markdown: every question of the paper's seven sections, answered from what
qaportal recorded where it can, and marked ``TO_ANSWER`` where only the requester knows.

The pre-filled text is a starting point: the requester edits it on the campaign's
datasheet page and the saved text (``campaigns.models.Datasheet``) is what exports
include from then on.
"""

from __future__ import annotations

from campaigns.exports.card_facts import CampaignFacts, day
from campaigns.exports.figures import money, percent, stage_rows_markdown
from campaigns.exports.model_loop import model_loop_sentences
from campaigns.models import Campaign, Datasheet

# The mark of an answer only the requester can give; the page counts what is left.
TO_ANSWER = "**[TO ANSWER]**"


def _ask(hint: str) -> str:
    return f"{TO_ANSWER} {hint}"


def datasheet_prefill(*, facts: CampaignFacts) -> str:
    """The datasheet with qaportal's records filled in (see the module docstring)."""
    c = facts.campaign
    costs = facts.costs
    recipe = facts.recipe
    stages = facts.stages
    linking = [s for s in stages if s.entity_after_2 is not None]
    gold = [s for s in stages if s.quality and s.quality.gold_total]
    rules = [s for s in stages if s.stage.review_rules]
    quals = [s for s in stages if s.stage.qualification_requirements]
    surveys = [s for s in stages if s.survey]
    lines = [
        f"# Datasheet for {c.name}",
        "",
        "Questions from Gebru et al., *Datasheets for Datasets* (CACM 2021). Answers",
        "without a mark were filled in by qaportal from the campaign's records; replace",
        f"every {TO_ANSWER} with your own answer before you publish.",
        "",
        "## Motivation",
        "",
        "**For what purpose was the dataset created?**",
        c.description.strip() or _ask("The task or gap the dataset addresses."),
        "",
        "**Who created the dataset and on behalf of which entity?**",
        _ask("Authors, team and organisation."),
        "",
        "**Who funded the creation of the dataset?**",
        f"Crowd work cost {money(costs.spent + costs.committed, c.currency)} (paid and committed). "
        + _ask("Name the grant or sponsor."),
        "",
        "## Composition",
        "",
        "**What do the instances represent?**",
        (
            "Questions with their answers, written by crowd workers in Mintaka's schema."
            if recipe is not None and recipe.export_format == "mintaka"
            else "Accepted examples: one approved assignment each, its item, answers and lineage."
        ),
        "",
        "**How many instances are there in total?**",
        (
            f"{facts.accepted_examples:,} accepted examples: the rows of this export, "
            "every split (see the card's *Splits*)."
            if facts.shipped_rows is not None
            else f"{facts.accepted_examples:,} accepted examples in the campaign's last "
            "stage so far; the export's card gives the rows it ships."
        ),
        "",
        "**Does the dataset contain all possible instances or is it a sample?**",
        _ask("What population the instances sample, and how representative they are."),
        "",
        "**Is there a label or target associated with each instance?**",
        "Yes: the answers given by the workers (and agreed links, where linking stages ran).",
        "",
        "**Is any information missing from individual instances?**",
        "Rejected work is left out; so are links marked 'not in Wikidata'.",
        "",
        "**Are there recommended data splits?**",
        "Yes: train, dev and test, a seeded shuffle cut at the ratios named on the card.",
        "",
        "**Are there any errors, sources of noise, or redundancies?**",
        "Agreement between workers, per stage, is given under *Collection process*. "
        + _ask("Known errors or noise."),
        "",
        "**Does the dataset contain data that might be considered confidential or offensive?**",
        _ask("Describe any such content and how it was handled."),
        "",
        "**Does the dataset identify any subpopulations or individuals?**",
        "Workers appear only as pseudonyms (a keyed hash of their platform id). "
        + _ask("Whether the content itself names people."),
        "",
        "## Collection process",
        "",
        "**How was the data associated with each instance acquired?**",
        f"Through {len(stages)} crowdsourcing stage(s) on {c.get_provider_display()}:",
        "",
        *stage_rows_markdown(facts),
        "",
        "**Over what timeframe was the data collected?**",
        (
            f"From {day(facts.first_submission)} to {day(facts.last_submission)}."
            if facts.first_submission
            else "No work has been submitted yet."
        ),
        "",
        "**Who was involved in the data collection process and how were they compensated?**",
        f"{facts.workers} crowd workers. Pay per stage and the effective hourly wage (reward "
        "over the median work time) are in the table above; the configured floor is "
        f"{money(costs.wage_floor, c.currency)}/h.",
        "",
        "**What mechanisms were used to collect the data?**",
        f"qaportal's worker pages on {c.get_provider_display()}"
        + (f", following {recipe.title}." if recipe else "."),
        *model_loop_sentences(facts.model_loop),
        "",
        "**Were any ethical review processes conducted?**",
        _ask("IRB or ethics board, with the approval reference."),
        "",
        "**Did the individuals consent to the collection and use of their data?**",
        _ask("How workers were told about and agreed to the use of their work."),
        "",
        "## Preprocessing, cleaning, labeling",
        "",
        "**Was any preprocessing, cleaning or labeling of the data done?**",
    ]
    if quals:
        lines += [
            "Qualification requirements: "
            + "; ".join(f"{s.stage.name}: {s.stage.qualification_requirements}" for s in quals)
            + "."
        ]
    if rules:
        lines += [
            "Review rules: "
            + "; ".join(f"{s.stage.name}: {s.stage.review_rules}" for s in rules)
            + "."
        ]
    if gold:
        lines += [
            "Gold accuracy: "
            + "; ".join(
                f"{s.stage.name} {percent(s.quality.gold_accuracy)}"
                for s in gold
                if s.quality is not None
            )
            + "."
        ]
    if linking:
        lines += [
            "Entity agreement after two / three annotators: "
            + "; ".join(
                f"{s.stage.name} {percent(s.entity_after_2)} / {percent(s.entity_after_3)}"
                for s in linking
            )
            + "."
        ]
    if not (quals or rules or gold or linking):
        lines += ["Each assignment was approved or rejected by the requester."]
    lines += [
        "",
        "**Was the raw data saved in addition to the cleaned data?**",
        "Yes: qaportal keeps every stored assignment, approved or rejected "
        "(the `collection-metadata` export).",
        "",
    ]
    if surveys:
        lines += ["**Annotator demographics** (from the survey stages)", ""]
        for s in surveys:
            for question, options in s.survey.items():
                shown = ", ".join(f"{o}: {n}" for o, n in options.items())
                lines.append(f"- {question} {shown}")
        lines.append("")
    lines += [
        "## Uses",
        "",
        "**Has the dataset been used for any tasks already?**",
        _ask("Papers or systems that used it."),
        "",
        "**What (other) tasks could the dataset be used for?**",
        _ask("Intended uses."),
        "",
        "**Are there tasks for which the dataset should not be used?**",
        _ask("Uses you advise against, and why."),
        "",
        "## Distribution",
        "",
        "**How will the dataset be distributed?**",
        "As a Hugging Face `datasets` folder (Parquet, with this card and Croissant metadata).",
        "",
        "**Under what license?**",
        _ask("The license, and the terms of the sources the items came from."),
        "",
        "## Maintenance",
        "",
        "**Who will be supporting/hosting/maintaining the dataset?**",
        _ask("Maintainer and contact."),
        "",
        "**Will the dataset be updated?**",
        "Each export records its version, the campaign's state, row counts and a checksum. "
        + _ask("How and when updates will be published."),
        "",
    ]
    if facts.deviations:
        lines += ["## Deviations from the source protocol", ""]
        lines += [f"- {d}" for d in facts.deviations]
        lines.append("")
    return "\n".join(lines)


def datasheet_text(*, campaign: Campaign, facts: CampaignFacts) -> str:
    """The requester's saved datasheet, or the pre-filled one when none is saved."""
    saved = Datasheet.objects.filter(campaign=campaign).values_list("text", flat=True).first()
    return saved if saved is not None else datasheet_prefill(facts=facts)


def datasheet_open_questions(text: str) -> int:
    """How many answers the requester has still to give in ``text``."""
    return text.count(TO_ANSWER)
