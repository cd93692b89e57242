"""What a stage's rule settings may say, checked when the stage is saved: the
decisions, each review, bonus and escalation rule's parameters with their checks and
defaults (``RULES``, ``BONUS_RULES``, ``ESCALATION_RULES``), and which rules may
approve (``APPROVING``). The rules themselves are described in ``validation.rules``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from campaigns.design.stage_rules import ParamCheck
from validation.gold import DEFAULT_SENTENCE_THRESHOLD
from validation.projections import (
    DEFAULT_TEXT_FIELDS,
)

APPROVE, REJECT, HOLD, SKIP = "approve", "reject", "hold", "skip"

PASS = "pass"  # a problem-finding rule found no problem: it does not vote

NONE = "none"  # combined: no rule voted

DECISIONS = (APPROVE, REJECT, HOLD)

# The rules that decide to approve; every other rule only looks for problems.
APPROVING = frozenset({"auto_approve", "gold_accuracy", "consensus", "peer_overlap"})

ROUGE_METRICS = ("rouge1", "rouge2", "rougeL", "rougeSU4")

# --- Parameter checks -----------------------------------------------------------------


def _num(lo: float, hi: float | None = None) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            return "must be a number"
        if v < lo or (hi is not None and v > hi):
            return f"must be between {lo} and {hi}" if hi is not None else f"must be >= {lo}"
        return None

    return ParamCheck(check, "number", minimum=lo, maximum=hi)


def _int(lo: int) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, int):
            return "must be an integer"
        return None if v >= lo else f"must be >= {lo}"

    return ParamCheck(check, "integer", minimum=lo)


def _choice(*options: Any) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        return None if v in options else f"must be one of {', '.join(map(str, options))}"

    return ParamCheck(check, "choice", options=options)


def _is_bool(v: Any) -> str | None:
    return None if isinstance(v, bool) else "must be true or false"


def _is_str_list(v: Any) -> str | None:
    ok = isinstance(v, list) and v and all(isinstance(s, str) and s for s in v)
    return None if ok else "must be a non-empty list of names"


def _is_any_list(v: Any) -> str | None:
    return None if isinstance(v, list) else "must be a list"


def _is_money(v: Any) -> str | None:
    try:
        amount = Decimal(str(v))
    except (InvalidOperation, ValueError):
        return "must be an amount like 0.50"
    if isinstance(v, bool) or not amount.is_finite() or amount <= 0:
        return "must be a positive amount"
    return None if amount == amount.quantize(Decimal("0.01")) else "must be whole cents"


def _is_qualification(v: Any) -> str | None:
    return (
        None if v is None or (isinstance(v, int) and not isinstance(v, bool)) else "must be an id"
    )


def _is_name(v: Any) -> str | None:
    return None if isinstance(v, str) else "must be a name"


_bool = ParamCheck(_is_bool, "boolean")
_str_list = ParamCheck(_is_str_list, "names")
_any_list = ParamCheck(_is_any_list, "list")
_money = ParamCheck(_is_money, "money")
_qualification = ParamCheck(_is_qualification, "qualification")
_name = ParamCheck(_is_name, "text")


_DECIDING = {
    "action": (_choice(REJECT, HOLD), None),  # default per rule below
    "on_missing": (_choice(APPROVE, HOLD, SKIP), None),
}

# name -> {param: (check, default)}; "action"/"on_missing" defaults per rule.
RULES: dict[str, dict[str, tuple[Callable[[Any], str | None], Any]]] = {
    "auto_approve": {},
    "gold_accuracy": {
        "min": (_num(0, 1), 0.5),
        "min_gold": (_int(1), 3),
        "sentence_threshold": (_num(0, 1), DEFAULT_SENTENCE_THRESHOLD),
        "action": (_DECIDING["action"][0], REJECT),
        "on_missing": (_DECIDING["on_missing"][0], SKIP),
    },
    "consensus": {
        "min": (_num(0, 1), 0.5),
        "min_answers": (_int(2), 3),
        "dimension": (_name, "answerable"),
        "action": (_DECIDING["action"][0], HOLD),
        "on_missing": (_DECIDING["on_missing"][0], HOLD),
    },
    "peer_overlap": {
        "metric": (_choice("sentences", *ROUGE_METRICS), "sentences"),
        "min": (_num(0, 1), 0.3),
        "fields": (_str_list, list(DEFAULT_TEXT_FIELDS)),
        "action": (_DECIDING["action"][0], HOLD),
        "on_missing": (_DECIDING["on_missing"][0], HOLD),
    },
    "work_time": {
        "min_seconds": (_num(0), 10),
        "per_item": (_bool, False),
        "action": (_DECIDING["action"][0], REJECT),
        "on_missing": (_DECIDING["on_missing"][0], SKIP),
    },
    "paste_share": {
        "max": (_num(0, 1), 0.5),
        "min_chars": (_int(1), 20),
        "fields": (_str_list, list(DEFAULT_TEXT_FIELDS)),
        "action": (_DECIDING["action"][0], HOLD),
        "on_missing": (_DECIDING["on_missing"][0], SKIP),
    },
    "duplicates": {
        "threshold": (_num(0.01, 1), 0.8),
        "max_share": (_num(0, 1), 0.0),
        "fields": (_str_list, list(DEFAULT_TEXT_FIELDS)),
        "action": (_DECIDING["action"][0], REJECT),
        "on_missing": (_DECIDING["on_missing"][0], SKIP),
    },
    # Answers a model may have written (Assignment.llm_flag): only ever held for a person,
    # never rejected on the flag alone; held while the flag is not there yet.
    "llm_flag": {
        "action": (_choice(HOLD), HOLD),
        "on_missing": (_choice(HOLD, SKIP), HOLD),
    },
    "no_answer_rate": {
        "max": (_num(0, 1), 0.6),
        "min_answers": (_int(1), 5),
        "action": (_DECIDING["action"][0], HOLD),
        "on_missing": (_DECIDING["on_missing"][0], SKIP),
    },
    "gold_disqualify": {
        "min": (_num(0, 1), 0.5),
        "min_gold": (_int(1), 4),
        "sentence_threshold": (_num(0, 1), DEFAULT_SENTENCE_THRESHOLD),
        "qualification": (_qualification, None),
        "block": (_bool, False),
    },
    "final_labels": {
        "count_writer": (_bool, False),
        "discard_labels": (_any_list, []),
        "require": (_choice("plurality", "absolute"), "plurality"),
        "ties": (_choice("none", "first"), "none"),
        "dimension": (_name, "answerable"),
    },
}

WORKER_LEVEL = frozenset({"gold_disqualify", "final_labels"})
# The worker-level entries acted on after each submission, as gold answers come in
# (``validation.services.gold_actions_apply``).
GOLD_ACTIONS = frozenset({"gold_disqualify"})

BONUS_RULES: dict[str, dict[str, tuple[Callable[[Any], str | None], Any]]] = {
    "gold_bonus": {
        "amount": (_money, None),
        "block": (_int(1), 4),
        "correct": (_int(1), 3),
        "sentence_threshold": (_num(0, 1), DEFAULT_SENTENCE_THRESHOLD),
    },
    # Fair pay: top approved work up to ``hourly`` for its measured time, counting at
    # most ``cap_seconds`` (an idle tab is not work); campaigns.payments.wages.
    "wage_floor": {
        "hourly": (_money, None),
        "cap_seconds": (_int(60), 3600),
    },
}

ESCALATION_RULES: dict[str, dict[str, tuple[Callable[[Any], str | None], Any]]] = {
    "early_stop": {
        "first": (_int(1), 3),
        "drop_if_no_answer": (_int(1), 2),
        "extend_to": (_int(1), 8),
    },
}


# What each rule does, for the stage form (the module docstring of
# ``validation.rules`` says it at length).
RULE_HELP = {
    "auto_approve": "Approve every submission as it arrives.",
    "gold_accuracy": "Approve a worker whose accuracy on gold items is at least min, once "
    "they answered min_gold of them; otherwise the action.",
    "consensus": "Approve when the share of items where the worker's label equals the "
    "majority is at least min (items with min_answers answers).",
    "peer_overlap": "Approve when the answer matches a peer's on the same item by metric "
    "(sentence overlap or ROUGE) at least min.",
    "work_time": "Hold or reject work done faster than min_seconds (per item if ticked).",
    "paste_share": "Hold or reject answers with more than max of their text pasted.",
    "duplicates": "Hold or reject texts that repeat earlier ones (token Jaccard at least "
    "threshold) in more than max_share of the answer.",
    "no_answer_rate": "Hold or reject a worker who says “no answer” more than max of the "
    "time, once they gave min_answers answers.",
    "gold_disqualify": "Revoke a qualification and/or block a worker whose gold accuracy "
    "falls under min after min_gold gold items.",
    "final_labels": "How the dashboard's final labels are voted (who counts, which labels "
    "are discarded, plurality or absolute majority).",
    "gold_bonus": "Pay amount to a worker for every block gold items with correct of them right.",
    "wage_floor": "Top approved work up to hourly for its measured time (at most "
    "cap_seconds counted).",
    "early_stop": "Ask first workers; drop the item if drop_if_no_answer of them say “no "
    "answer”, otherwise extend to extend_to.",
}


def _validate(
    entries: Any, known: Mapping[str, Mapping[str, Any]], where: str, required: set[str]
) -> list[str]:
    if not isinstance(entries, list):
        return [f"{where} must be a list of {{'rule': name, ...}} objects"]
    errors: list[str] = []
    for n, entry in enumerate(entries):
        at = f"{where}[{n}]"
        if not isinstance(entry, Mapping):
            errors.append(f"{at}: must be an object with a 'rule' name")
            continue
        name = entry.get("rule")
        if not isinstance(name, str) or name not in known:
            errors.append(f"{at}: unknown rule {name!r}; known rules: {', '.join(sorted(known))}")
            continue
        spec = known[name]
        for key, value in entry.items():
            if key == "rule":
                continue
            if key not in spec:
                errors.append(f"{at} ({name}): unknown parameter {key!r}")
                continue
            problem = spec[key][0](value)
            if problem:
                errors.append(f"{at} ({name}): {key} {problem}")
        for key in sorted(required & set(spec)):
            if spec[key][1] is None and key not in entry:
                errors.append(f"{at} ({name}): {key} is required")
    return errors


def review_rules_validate(rules: Any) -> list[str]:
    """Problems with a stage's ``review_rules`` (empty list when valid).

    Call it where the stage is saved (``stage_add``/``stage_update`` and the stage
    API serializer) and refuse the save when it returns anything.
    """
    errors = _validate(rules, RULES, "review_rules", set())
    for n, entry in enumerate(rules if isinstance(rules, list) else []):
        name = entry.get("rule") if isinstance(entry, Mapping) else None
        if name in RULES and name not in APPROVING and entry.get("on_missing") == APPROVE:
            errors.append(
                f"review_rules[{n}] ({name}): only looks for problems and cannot approve; "
                "on_missing must be hold or skip"
            )
        if (
            isinstance(entry, Mapping)
            and entry.get("rule") == "gold_disqualify"
            and entry.get("qualification") is None
            and not entry.get("block")
        ):
            errors.append(
                f"review_rules[{n}] (gold_disqualify): give a qualification id, block: true, "
                "or both"
            )
    return errors


def bonus_rules_validate(rules: Any) -> list[str]:
    """Problems with a stage's ``bonus_rules`` (``gold_bonus`` {amount, block, correct};
    ``wage_floor`` {hourly, cap_seconds})."""
    errors = _validate(rules, BONUS_RULES, "bonus_rules", {"amount", "hourly"})
    for n, entry in enumerate(rules if not errors else []):
        if entry.get("correct", 3) > entry.get("block", 4):
            errors.append(f"bonus_rules[{n}] (gold_bonus): correct cannot exceed block")
    return errors


def escalation_rule_validate(rule: Any) -> list[str]:
    """Problems with a stage's ``escalation_rule`` when it is an ``early_stop`` one.

    Other escalation rules (``{}``, or rules other modules own) are not checked here.
    """
    if not isinstance(rule, Mapping) or rule.get("rule") != "early_stop":
        return []
    errors = _validate([rule], ESCALATION_RULES, "escalation_rule", set())
    if not errors:
        p = params_of(rule, ESCALATION_RULES)
        if p["drop_if_no_answer"] > p["first"]:
            errors.append("escalation_rule: drop_if_no_answer cannot exceed first")
        if p["extend_to"] <= p["first"]:
            errors.append("escalation_rule: extend_to must exceed first")
    return [e.replace("escalation_rule[0]", "escalation_rule") for e in errors]


def params_of(
    entry: Mapping[str, Any],
    known: Mapping[str, Mapping[str, tuple[Any, Any]]] = RULES,
) -> dict[str, Any]:
    """The entry's parameters with the defaults filled in."""
    spec = known[entry["rule"]]
    return {key: entry.get(key, default) for key, (_, default) in spec.items()}


def rules_approving(rules: Sequence[Mapping[str, Any]]) -> list[str]:
    """The names of the rules in ``rules`` that can approve an assignment; empty when
    approval is a person's (the review queue)."""
    return [str(r["rule"]) for r in rules if isinstance(r, Mapping) and r.get("rule") in APPROVING]
