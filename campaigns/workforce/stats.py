"""Grouped statistics computed in the database: medians per group in one query."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from django.db import connection
from django.db.models import Aggregate, FloatField, QuerySet


class Median(Aggregate):
    """PostgreSQL's continuous median: the mean of the two middle values for an even count,
    as ``statistics.median``."""

    function = "PERCENTILE_CONT"
    name = "Median"
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()


def medians_by(*, queryset: QuerySet[Any], group: str, value: str) -> dict[Any, float]:
    """Median of ``value`` per distinct ``group`` over ``queryset``; NULL values left out.

    One GROUP BY query on PostgreSQL; on the embedded SQLite default the values are
    read once and the medians taken in Python (same numbers).
    """
    rows = queryset.exclude(**{f"{value}__isnull": True}).order_by()
    if connection.vendor == "postgresql":
        return {
            r[group]: float(r["median"]) for r in rows.values(group).annotate(median=Median(value))
        }
    found: dict[Any, list[float]] = defaultdict(list)
    for key, number in rows.values_list(group, value):
        found[key].append(number)
    return {key: float(statistics.median(numbers)) for key, numbers in found.items()}


def grouped_with_median(
    *, queryset: QuerySet[Any], group: str, value: str, **annotations: Any
) -> dict[Any, dict[str, Any]]:
    """``annotations`` per distinct ``group`` plus ``"median"`` of ``value`` (None when the
    group has no value): one query on PostgreSQL, two elsewhere."""
    rows = queryset.order_by().values(group)
    if connection.vendor == "postgresql":
        found = rows.annotate(**annotations, median=Median(value))
        return {r[group]: r for r in found}
    out: dict[Any, dict[str, Any]] = {
        r[group]: {**r, "median": None} for r in rows.annotate(**annotations)
    }
    for key, median in medians_by(queryset=queryset, group=group, value=value).items():
        out[key]["median"] = median
    return out
