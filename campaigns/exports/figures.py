"""Figures written into a dataset's documentation, formatted as the dashboard shows them
(``frontend.templatetags.frontend_tags.money``, Django's ``widthratio`` for percents,
``floatformat:3`` for alpha), so a reader can match the card against the dashboard."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from django.template.defaultfilters import floatformat

from campaigns.exports.card_facts import CampaignFacts, StageFacts

CENT = Decimal("0.01")
NONE = "—"


def money(amount: Decimal | None, currency: str) -> str:
    """``1,250.00 USD``, rounded half-up to the cent; ``—`` for none."""
    if amount is None:
        return NONE
    value = Decimal(str(amount)).quantize(CENT, rounding=ROUND_HALF_UP)
    return f"{value:,} {currency}".strip()


def percent(share: float | None) -> str:
    """``82 %`` (a share rounded to a whole percent, as ``widthratio``); ``—`` for none."""
    return NONE if share is None else f"{round(share / 1 * 100)} %"


def alpha(value: float | None) -> str:
    return NONE if value is None else str(floatformat(value, 3))


def seconds(value: float | None) -> str:
    return NONE if value is None else f"{floatformat(value, 0)} s"


def wage(s: StageFacts, currency: str) -> str:
    q = s.quality
    if q is None or q.hourly_wage is None:
        return NONE
    flag = " (below the floor)" if q.below_wage_floor else ""
    return f"{money(q.hourly_wage, currency)}/h{flag}"


STAGE_HEADER = (
    "| stage | task | reward | per HIT | workers | stored | approved | rejected | "
    "alpha | agreement | median time | hourly wage |"
)


def stage_rows_markdown(facts: CampaignFacts) -> list[str]:
    """One table row per stage: pay, work and agreement, the dashboard's numbers."""
    rows = [STAGE_HEADER, "|" + "---|" * 12]
    for s in facts.stages:
        q = s.quality
        rows.append(
            "| "
            + " | ".join(
                [
                    s.stage.name.replace("|", "/"),
                    s.task_label.replace("|", "/"),
                    money(s.stage.reward, facts.currency) if facts.paid else "unpaid",
                    f"{s.stage.assignments_per_hit} x {s.stage.items_per_hit} item(s)",
                    str(s.workers),
                    str(q.assignments if q else 0),
                    str(q.approved if q else 0),
                    str(q.rejected if q else 0),
                    alpha(q.agreement.alpha if q else None),
                    percent(q.agreement.percent_agreement if q else None),
                    seconds(q.median_work_seconds if q else None),
                    wage(s, facts.currency) if facts.paid else NONE,
                ]
            )
            + " |"
        )
    return rows
