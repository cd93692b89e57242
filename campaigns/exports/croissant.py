"""Croissant 1.1 metadata (JSON-LD) of an ``hf`` export, built with ``mlcroissant``: the
data files with their sha256, one record set per split with its fields, and the
responsible-AI properties (data collection, annotation protocol and platform, annotator
demographics where a survey stage collected them, compensation, quality control,
limitations) filled from the campaign's records (``campaigns.exports.card_facts``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from campaigns.exports.card import ExportContents
from campaigns.exports.card_facts import CampaignFacts
from campaigns.exports.figures import alpha, money, percent, seconds, wage
from campaigns.exports.model_loop import model_loop_sentences

CROISSANT_1_1 = "http://mlcommons.org/croissant/1.1"
PARQUET = "application/x-parquet"
LICENSES = {
    "cc-by-4.0": "https://creativecommons.org/licenses/by/4.0/",
    "cc-by-sa-4.0": "https://creativecommons.org/licenses/by-sa/4.0/",
    "cc0-1.0": "https://creativecommons.org/publicdomain/zero/1.0/",
    "mit": "https://opensource.org/licenses/MIT",
    "apache-2.0": "https://www.apache.org/licenses/LICENSE-2.0",
}


def _stage_sentences(facts: CampaignFacts) -> list[str]:
    out = []
    for s in facts.stages:
        q = s.quality
        out.append(
            f"Stage '{s.stage.name}' ({s.task_label}): {s.stage.assignments_per_hit} "
            f"assignment(s) per HIT of {s.stage.items_per_hit} item(s), reward "
            f"{money(s.stage.reward, facts.currency)} per assignment; {s.workers} workers, "
            f"{q.assignments if q else 0} assignments stored, {q.approved if q else 0} "
            f"approved, {q.rejected if q else 0} rejected."
        )
    return out


def _compensation(facts: CampaignFacts) -> str:
    parts = [
        f"{s.stage.name}: {money(s.stage.reward, facts.currency)} per assignment, median "
        f"work time {seconds(s.quality.median_work_seconds if s.quality else None)}, "
        f"effective hourly wage {wage(s, facts.currency)}"
        for s in facts.stages
    ]
    costs = facts.costs
    return (
        "Compensation. "
        + "; ".join(parts)
        + f". Wage floor {money(costs.wage_floor, facts.currency)}/h. Spent "
        f"{money(costs.spent, facts.currency)}, committed "
        f"{money(costs.committed, facts.currency)}; cost per accepted example "
        f"{money(facts.cost_per_accepted_example, facts.currency)} "
        f"({facts.accepted_examples:,} accepted examples)."
    )


def _quality_control(facts: CampaignFacts) -> list[str]:
    out = []
    for s in facts.stages:
        q = s.quality
        if q is None:
            continue
        text = (
            f"{s.stage.name}: Krippendorff's alpha {alpha(q.agreement.alpha)}, percent "
            f"agreement {percent(q.agreement.percent_agreement)}, approval rate "
            f"{percent(q.approval_rate)}"
        )
        if q.gold_total:
            text += f", gold accuracy {percent(q.gold_accuracy)}"
        if s.entity_after_2 is not None:
            text += (
                f", entity agreement {percent(s.entity_after_2)} after 2 annotators and "
                f"{percent(s.entity_after_3)} after 3"
            )
        if s.stage.review_rules:
            text += f"; review rules {s.stage.review_rules}"
        if s.rejected_by:
            text += "; rejected " + ", ".join(
                f"{n} by {src}" for src, n in sorted(s.rejected_by.items())
            )
        out.append(text + ".")
    return out


def _demographics(facts: CampaignFacts) -> list[str]:
    out = []
    for s in facts.stages:
        for question, options in s.survey.items():
            out.append(f"{question} " + ", ".join(f"{o}: {n}" for o, n in options.items()))
    return out or ["No survey stage collected demographics."]


def _field(mlc: Any, *, split: str, name: str, feature: Any, note: str, file_id: str) -> Any:
    """A Croissant field for one column: JSON columns are text holding JSON; a struct
    column has one sub-field per member; lists are repeated."""
    from datasets import List

    def source(column: str, path: str | None = None) -> Any:
        transforms = [mlc.Transform(json_path=path)] if path else []
        return mlc.Source(
            file_object=file_id, extract=mlc.Extract(column=column), transforms=transforms
        )

    field_id = f"{split}/{name}"
    if isinstance(feature, dict):
        return mlc.Field(
            id=field_id,
            name=name,
            description=note,
            data_types=[],
            sub_fields=[
                mlc.Field(
                    id=f"{field_id}/{member}",
                    name=member,
                    data_types=[mlc.DataType.TEXT],
                    source=source(name, member),
                )
                for member in feature
            ],
        )
    repeated = isinstance(feature, List)
    inner = feature.feature if repeated else feature
    if isinstance(inner, dict):  # a list of structs: one repeated sub-field per member
        return mlc.Field(
            id=field_id,
            name=name,
            description=note,
            data_types=[],
            is_array=True,
            sub_fields=[
                mlc.Field(
                    id=f"{field_id}/{member}",
                    name=member,
                    data_types=[_data_type(mlc, member_feature)],
                    source=source(name, member),
                )
                for member, member_feature in inner.items()
            ],
        )
    return mlc.Field(
        id=field_id,
        name=name,
        description=note,
        data_types=[_data_type(mlc, inner)],
        is_array=repeated or None,
        source=source(name),
    )


def _data_type(mlc: Any, feature: Any) -> Any:
    """Croissant's type of a column's values: integers, date-times, else text (JSON
    columns hold JSON text)."""
    from datasets import Value

    if isinstance(feature, Value) and feature.dtype.startswith("int"):
        return mlc.DataType.INTEGER
    if isinstance(feature, Value) and feature.dtype.startswith("timestamp"):
        return mlc.DataType.DATETIME
    return mlc.DataType.TEXT


def croissant_metadata(
    *,
    facts: CampaignFacts,
    contents: ExportContents,
    features: Any,
    field_notes: Mapping[str, str],
    file_digests: Mapping[str, str],
) -> Any:
    """The ``mlcroissant.Metadata`` of the export (see the module docstring)."""
    import mlcroissant as mlc

    c = facts.campaign
    recipe = facts.recipe
    distribution = []
    record_sets = []
    for path, split in contents.files.items():
        file_id = path.rsplit("/", 1)[-1].removesuffix(".parquet")
        distribution.append(
            mlc.FileObject(
                id=file_id,
                name=file_id,
                description=f"The {split} split ({contents.split_rows[split]:,} rows).",
                content_url=path,
                encoding_formats=[PARQUET],
                sha256=file_digests[path],
            )
        )
        record_sets.append(
            mlc.RecordSet(
                id=split,
                name=split,
                description=f"Rows of the {split} split.",
                fields=[
                    _field(
                        mlc,
                        split=split,
                        name=name,
                        feature=feature,
                        note=field_notes.get(name, ""),
                        file_id=file_id,
                    )
                    for name, feature in features.items()
                ],
            )
        )
    provider = c.get_provider_display()
    protocol = [*_stage_sentences(facts), _compensation(facts)]
    if recipe is not None:
        protocol.insert(0, f"Protocol: {recipe.title}. {recipe.summary}")
    per_item = ", ".join(f"{s.stage.name}: {s.stage.assignments_per_hit}" for s in facts.stages)
    limitations = [f"Deviations from the source protocol: {d}" for d in facts.deviations] or [
        "See the datasheet (datasheet.md) for the requester's account of limitations."
    ]
    return mlc.Metadata(
        name=c.slug,
        description=(c.description.strip() or f"{c.name}: a crowdsourced QA dataset.")
        + f" Version {contents.version}; data checksum {contents.checksum}.",
        conforms_to=[CROISSANT_1_1],
        url=contents.url or None,
        license=[LICENSES.get(contents.license, contents.license)],
        version=_semver(contents.version),
        cite_as=recipe.citation if recipe else None,
        date_published=datetime.fromisoformat(contents.generated_at),
        in_language=list(contents.languages),
        keywords=["question answering", "crowdsourcing"],
        distribution=distribution,
        record_sets=record_sets,
        data_collection=(
            f"Crowdsourced on {provider} with qaportal in {len(facts.stages)} stage(s), "
            f"{facts.workers} workers in all, submissions from "
            f"{facts.first_submission.date() if facts.first_submission else '—'} to "
            f"{facts.last_submission.date() if facts.last_submission else '—'}. "
            + _compensation(facts)
        ),
        data_collection_type=["Crowdsourced"],
        data_collection_raw_data=(
            "Every stored assignment, approved or rejected, is kept by qaportal "
            "(the collection-metadata export)."
        ),
        data_annotation_protocol=protocol,
        data_annotation_platform=[f"{provider} (worker pages hosted by qaportal)"],
        data_annotation_analysis=(_quality_control(facts) or ["No work stored yet."])
        + model_loop_sentences(facts.model_loop),
        annotations_per_item=f"Assignments per HIT: {per_item}.",
        annotator_demographics=_demographics(facts),
        data_preprocessing_protocol=[
            "Only approved work is included; the train/dev/test split is a shuffle with "
            f"seed {contents.seed} cut at {'/'.join(str(r) for r in contents.ratios)}."
        ],
        data_limitations=limitations,
        personal_sensitive_information=[
            "Workers appear only as pseudonyms (a keyed hash of the platform id)."
        ],
        data_release_maintenance_plan=(
            "Each export records its version, the campaign's state, row counts and a "
            "checksum of the data, so a published version can be reproduced."
        ),
    )


def _semver(version: str) -> str:
    """Croissant wants MAJOR.MINOR.PATCH; a checksum-derived version becomes 0.0.0 and
    stays in the description."""
    parts = version.split(".")
    if len(parts) == 3 and all(p.isdigit() for p in parts):
        return version
    return "0.0.0"


def croissant_json(metadata: Any) -> str:
    """``croissant.json``'s text: ``metadata`` (``croissant_metadata``) as JSON."""
    return json.dumps(metadata.to_json(), ensure_ascii=False, indent=2, default=str) + "\n"
