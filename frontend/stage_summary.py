"""A stage's settings in words: the stage card's lines for its requirements, rules,
escalation and hand-off, and the examples the edit page's help gives (each of which
saves and shows on the card: tested)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from campaigns.workforce.selectors import qualification_type_choices
from frontend.stage_settings import REFERENCE_LABELS, REQUIREMENT_LABELS, label_of

# --- examples the help gives (each saves and shows on the stage card: tested) ---------

# One entry each; "STAGE_ID" stands for the id of another stage of the campaign.
HELP_EXAMPLES: dict[str, list[str]] = {
    "qualification_requirements": [
        '{"kind": "approval_rate", "min": 95}',
        '{"kind": "approved_count", "min": 1000}',
        '{"kind": "country", "countries": ["US", "GB"]}',
        '{"quiz_stage": STAGE_ID}',
    ],
    "review_rules": [
        '{"rule": "gold_accuracy", "min": 0.8, "min_gold": 3}',
        '{"rule": "work_time", "min_seconds": 30}',
        '{"rule": "auto_approve"}',
    ],
    "bonus_rules": [
        '{"rule": "gold_bonus", "amount": "0.50", "block": 4, "correct": 3}',
        '{"rule": "wage_floor", "hourly": "12.00"}',
    ],
    "escalation_rule": [
        '{"rule": "early_stop", "first": 3, "drop_if_no_answer": 2, "extend_to": 8}',
        '{"rule": "entity_agreement", "annotators": 2, "max": 3}',
    ],
}


def help_examples(setting: str, *, stage_id: int | None) -> str:
    """The help's examples for ``setting``, with a real stage id (or without the example
    that needs one when the campaign has no other stage)."""
    shown = [
        e.replace("STAGE_ID", str(stage_id))
        for e in HELP_EXAMPLES.get(setting, [])
        if "STAGE_ID" not in e or stage_id is not None
    ]
    return "; ".join(shown)


# --- the stage card: each setting in words -------------------------------------------


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _name_in(names: Mapping[int, str], value: Any, missing: str) -> str:
    """The name ``value`` (an id) has in ``names``; ``missing`` when it has none (a
    stored value that is no id at all breaks no page)."""
    found = names.get(value) if isinstance(value, int) else None
    return found if found is not None else missing


def _requirement_text(
    entry: Mapping[str, Any], stage_names: Mapping[int, str], qualification_names: Mapping[int, str]
) -> str:
    kind = entry.get("kind")
    if kind == "approval_rate":
        return f"Approval rate at least {entry.get('min')} %"
    if kind == "approved_count":
        return f"At least {entry.get('min')} approved assignments"
    if kind in ("country", "locale"):
        codes = _value_text(entry.get("countries", entry.get("values", [])))
        return f"Not in the countries {codes}" if entry.get("exclude") else f"Lives in {codes}"
    if kind in REQUIREMENT_LABELS and set(entry) == {"kind"}:
        return REQUIREMENT_LABELS[str(kind)][0]
    for key, label in REFERENCE_LABELS.items():
        if entry.get(key) is not None and kind is None:
            name = _name_in(stage_names, entry[key], f"{entry[key]} (not in this campaign)")
            text = f"{label} “{name}”"
            return f"{text}, round {entry['round']}" if entry.get("round") else text
    if entry.get("qualification_type_id") is not None:
        qid = entry["qualification_type_id"]
        text = f"Holds your qualification “{_name_in(qualification_names, qid, f'#{qid}')}”"
        return f"{text}, score at least {entry['min']}" if entry.get("min") is not None else text
    return json.dumps(entry, ensure_ascii=False)


def _rule_text(entry: Any) -> str:
    if not isinstance(entry, Mapping) or "rule" not in entry:
        return json.dumps(entry, ensure_ascii=False)
    params = ", ".join(
        f"{k.replace('_', ' ')} {_value_text(v)}" for k, v in entry.items() if k != "rule"
    )
    label = label_of(str(entry["rule"]))
    return f"{label}: {params}" if params else label


# The settings a stage card says in words, in this order.
SETTING_TITLES = (
    ("qualification_requirements", "Requirements"),
    ("review_rules", "Review rules"),
    ("bonus_rules", "Bonus rules"),
    ("escalation_rule", "Escalation"),
    ("handoff", "Hand-off"),
)


def summary_lines(
    stage: Any,
    *,
    stage_names: Mapping[int, str] | None = None,
    qualification_names: Mapping[int, str] | None = None,
) -> dict[str, list[str]]:
    """Each setting of ``stage`` in words, a line per entry (empty: none), for its card."""
    if stage_names is None:
        stage_names = dict(stage.campaign.stages.values_list("pk", "name"))
    if qualification_names is None:
        qualification_names = dict(qualification_type_choices(owner_id=stage.campaign.owner_id))
    requirements = [
        _requirement_text(e, stage_names, qualification_names)
        if isinstance(e, Mapping)
        else json.dumps(e)
        for e in stage.qualification_requirements or []
    ]
    handoff = stage.handoff or {}
    options = ", ".join(
        f"{k.replace('_', ' ')} "
        f"{_name_in(stage_names, v, str(v)) if k.endswith('_to') else _value_text(v)}"
        for k, v in handoff.items()
    )
    links: list[str] = []
    if stage.next_stage_id:
        text = f"Feeds “{_name_in(stage_names, stage.next_stage_id, str(stage.next_stage_id))}”"
        links = [f"{text}: {options}" if options else text]
    elif options:
        links = [f"Hand-off options (no next stage): {options}"]
    escalation = stage.escalation_rule or {}
    return {
        "qualification_requirements": requirements,
        "review_rules": [_rule_text(e) for e in stage.review_rules or []],
        "bonus_rules": [_rule_text(e) for e in stage.bonus_rules or []],
        "escalation_rule": [_rule_text(escalation)] if escalation else [],
        "handoff": links,
    }
