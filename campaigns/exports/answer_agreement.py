"""The ``answer-agreement`` export: WhyQA's agreement measures (Mrozinski, Whittaker and
Furui, ACL-08: HLT, §3.2, Tables 3-4) of each sentence-selection stage, as CSV: one row
per stage and data set (NoA not included, NoA included, random answers)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

from campaigns.exports.common import Tally
from validation.answer_agreement import TABLE_ROUGE
from validation.selectors.answers import stage_answer_agreement, stage_has_answer_agreement

HEADER = [
    "stage",
    "data_set",
    "questions",
    "answers",
    "pairs",
    "total_average",
    "best_match",
    *[f"{m}_f" for m in TABLE_ROUGE],
]


def answer_agreement_stream(
    *, campaign: Any, tally: Tally | None = None, **_: Any
) -> Iterator[str]:
    """The CSV text: a header, then three rows per sentence-selection stage."""
    tally = tally or Tally()
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(HEADER)
    for stage in campaign.stages.order_by("position"):
        if not stage_has_answer_agreement(stage=stage):
            continue
        result = stage_answer_agreement(stage=stage)
        if result is None:
            continue
        for row in result.table():
            writer.writerow(
                [
                    stage.name,
                    row["key"],
                    result.questions,
                    "" if row["answers"] is None else row["answers"],
                    row["pairs"],
                    *["" if v is None else v for v in (row["total_average"], row["best_match"])],
                    *["" if v is None else v for v in row["rouge"]],  # type: ignore[attr-defined]
                ]
            )
            tally.rows += 1
    yield buffer.getvalue()
