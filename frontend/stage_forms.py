"""The stage edit form: every setting of a stage, the task type's configuration as one
input per setting (from its config schema) with the raw JSON one click away. Fields
the campaign's state freezes are shown disabled; the service decides, the form only
checks shapes and puts the task type's verdict next to the field it concerns."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django import forms

from campaigns.design.platform import platform_for
from campaigns.design.requirement_checks import requirement_problems
from campaigns.design.stage_rules import stage_rules_problems
from campaigns.models import Stage
from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.config_fields import ConfigField, config_fields
from campaigns.workforce.selectors import qualification_type_choices
from frontend.forms import MoneyFormField
from frontend.stage_settings import (
    BonusRuleRows,
    EscalationRows,
    HandoffRows,
    RequirementRows,
    ReviewRuleRows,
    SettingRows,
)
from frontend.stage_summary import HELP_EXAMPLES, help_examples

CONFIG_PREFIX = "cfg__"
# Form field -> stage field, for those that are not the same name.
STAGE_FIELD_OF = {
    "assignment_minutes": "assignment_duration",
    "lifetime_hours": "lifetime",
}
JSON_FIELDS = ("qualification_requirements", "review_rules", "bonus_rules", "escalation_rule")
# The platform-neutral requirement kinds that name countries ({"kind": "country",
# "countries": ["US", "GB"]}; the recipes' "locale" is the same requirement).
COUNTRY_KINDS = ("country", "locale")
# The settings edited as rows of inputs, the JSON a click away (``frontend.stage_settings``).
ROW_SETTINGS = (*JSON_FIELDS, "handoff")
HIDDEN_ORIGINALS = (
    "config_json_original",
    "countries_original",
    *(f"{name}_original" for name in ROW_SETTINGS),
)
BOTH_CHANGED = (
    "You changed this both in the form and in its JSON; change it in one place "
    "(both are kept below)."
)


def _country_requirement(requirements: Any) -> tuple[int, dict[str, Any]] | None:
    """The first requirement that selects countries, with its index."""
    for n, req in enumerate(requirements if isinstance(requirements, list) else []):
        if isinstance(req, dict) and str(req.get("kind", "")) in COUNTRY_KINDS:
            return n, req
    return None


def _countries_of(req: dict[str, Any]) -> list[str]:
    raw = req.get("countries", req.get("values", []))
    return [str(c).strip().upper() for c in raw] if isinstance(raw, list) else []


def requirements_with_countries(
    requirements: list[dict[str, Any]], codes: list[str]
) -> list[dict[str, Any]]:
    """``requirements`` with its country requirement selecting ``codes`` (kept in place
    and of its kind; a new one is ``{"kind": "country", "countries": codes}`` at the
    end); no codes removes it."""
    out = [dict(r) for r in requirements]
    found = _country_requirement(out)
    if found is None:
        return [*out, {"kind": "country", "countries": codes}] if codes else out
    n, req = found
    if not codes:
        return out[:n] + out[n + 1 :]
    kept = {k: v for k, v in req.items() if k != "values"}
    out[n] = {**kept, "countries": codes}
    return out


def _json_text(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def _config_form_field(spec: ConfigField) -> forms.Field:
    default = "" if spec.default is None else spec.default
    if isinstance(default, bool):
        default = "yes" if default else "no"
    help_text = spec.help
    if spec.default is not None:
        help_text = f"{help_text} Default: {default}.".strip()
    common: dict[str, Any] = {"label": spec.label, "required": False, "help_text": help_text}
    if spec.kind == "boolean":
        return forms.TypedChoiceField(
            choices=[("", f"Default ({default})"), ("true", "yes"), ("false", "no")],
            coerce=lambda v: v == "true",
            empty_value=None,
            **common,
        )
    if spec.kind == "choice":
        return forms.ChoiceField(
            choices=[("", f"Default ({default})")] + [(str(c), str(c)) for c in spec.choices],
            **common,
        )
    if spec.kind == "integer":
        return forms.IntegerField(
            widget=forms.NumberInput(attrs={"placeholder": str(default)}),
            min_value=int(spec.minimum) if spec.minimum is not None else None,
            max_value=int(spec.maximum) if spec.maximum is not None else None,
            **common,
        )
    if spec.kind == "number":
        return forms.FloatField(
            min_value=None if spec.exclusive_minimum else spec.minimum,
            max_value=spec.maximum,
            widget=forms.NumberInput(attrs={"step": "any", "placeholder": str(default)}),
            **common,
        )
    return forms.CharField(**common)


class StageEditForm(forms.Form):
    name = forms.CharField(max_length=120)
    instructions = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 5}),
        help_text=(
            "Shown to workers above the task as “Notes from the requester”. A setting in "
            "braces, e.g. {questions_per_hit} or {items_per_hit}, reads as the stage's "
            "current value, so the notes follow the settings."
        ),
    )
    reward = MoneyFormField(
        min_value=Decimal("0"), max_digits=8, decimal_places=2, help_text="Per assignment."
    )
    assignments_per_hit = forms.IntegerField(
        label="Assignments per HIT",
        min_value=1,
        max_value=1000,
        help_text="Different workers who do each HIT.",
    )
    items_per_hit = forms.IntegerField(
        label="Items per HIT", min_value=1, max_value=1000, help_text="Items in one HIT."
    )
    assignment_minutes = forms.IntegerField(
        label="Time per assignment (minutes)",
        min_value=1,
        max_value=7 * 24 * 60,
        help_text="How long a worker has once they accept.",
    )
    lifetime_hours = forms.IntegerField(
        label="HITs available for (hours)",
        min_value=1,
        max_value=365 * 24,
        help_text="How long a published HIT can be accepted.",
    )
    gold_ratio = MoneyFormField(
        min_value=Decimal("0"),
        max_value=Decimal("1"),
        max_digits=4,
        decimal_places=3,
        help_text="Share of gold items mixed into HITs, 0 to 1.",
    )
    qualification_requirements = forms.JSONField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Qualification requirements as JSON",
        help_text="A list of requirements; the form above writes it.",
    )
    countries = forms.MultipleChoiceField(
        required=False,
        label="Countries workers live in",
        choices=(),
        widget=forms.SelectMultiple(attrs={"size": 8}),
        help_text="Only workers who live in one of these countries (Ctrl- or ⌘-click for "
        'several; none selected: anywhere). Written into the requirements as {"kind": '
        '"country", "countries": [...]}, which the requirements above then show.',
    )
    countries_original = forms.CharField(required=False, widget=forms.HiddenInput)
    review_rules = forms.JSONField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Review rules as JSON",
        help_text="A list of rules that approve or reject submissions automatically.",
    )
    bonus_rules = forms.JSONField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Bonus rules as JSON",
        help_text="A list of rules that pay bonuses on approved work.",
    )
    escalation_rule = forms.JSONField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Escalation rule as JSON",
        help_text="When to add assignments on disagreement (an object; {} for none).",
    )
    show_reward_to_local_workers = forms.BooleanField(
        required=False,
        label="Tell local workers what they earn",
        help_text="The local workforce is paid no rewards through qaportal, so its workers "
        "see none; tick this if you pay them this amount some other way.",
    )
    publish_added = forms.BooleanField(
        required=False,
        label="Publish items added while the campaign runs",
        help_text="Items uploaded or handed to this stage in pilot or live get HITs at once. "
        "Untick to keep them waiting until you press Publish on the stage card.",
    )
    next_stage = forms.TypedChoiceField(
        label="Accepted output feeds",
        coerce=int,
        required=False,
        empty_value=None,
        choices=(),
        help_text="The stage whose items this stage's accepted answers become.",
    )
    handoff = forms.JSONField(
        required=False,
        label="Hand-off options as JSON",
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Which accepted outputs become items of the next stage, and how "
        "(an object; {} for the task type's default).",
    )
    config_json = forms.CharField(
        required=False,
        label="Configuration as JSON",
        widget=forms.Textarea(attrs={"rows": 8, "class": "code"}),
        help_text="The whole task-type configuration. If you change this text, it "
        "replaces the settings above.",
    )
    config_json_original = forms.CharField(required=False, widget=forms.HiddenInput)
    qualification_requirements_original = forms.CharField(required=False, widget=forms.HiddenInput)
    review_rules_original = forms.CharField(required=False, widget=forms.HiddenInput)
    bonus_rules_original = forms.CharField(required=False, widget=forms.HiddenInput)
    escalation_rule_original = forms.CharField(required=False, widget=forms.HiddenInput)
    handoff_original = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args: Any, stage: Stage, editable: frozenset[str], **kwargs: Any) -> None:
        self.stage = stage
        self.task_type = task_type_get(stage.task_type)
        self.config_specs = config_fields(self.task_type)
        config = stage.config or {}
        initial = {
            "name": stage.name,
            "instructions": stage.instructions,
            "reward": stage.reward,
            "assignments_per_hit": stage.assignments_per_hit,
            "items_per_hit": stage.items_per_hit,
            "assignment_minutes": int(stage.assignment_duration.total_seconds() // 60),
            "lifetime_hours": int(stage.lifetime.total_seconds() // 3600),
            "gold_ratio": stage.gold_ratio,
            "show_reward_to_local_workers": stage.show_reward_to_local_workers,
            "publish_added": stage.publish_added,
            "next_stage": stage.next_stage_id,
            "handoff": stage.handoff or {},
            "config_json": _json_text(config),
            "config_json_original": _json_text(config),
            **{f: getattr(stage, f) for f in JSON_FIELDS},
        }
        for name in ROW_SETTINGS:
            initial[f"{name}_original"] = json.dumps(initial[name], sort_keys=True)
        for spec in self.config_specs:
            value = config.get(spec.name)
            if isinstance(value, bool):
                value = "true" if value else "false"
            initial[CONFIG_PREFIX + spec.name] = value
        found = _country_requirement(stage.qualification_requirements)
        picked = _countries_of(found[1]) if found else []
        initial["countries"] = picked
        initial["countries_original"] = ",".join(picked)
        kwargs["initial"] = initial
        kwargs["label_suffix"] = ""
        super().__init__(*args, **kwargs)
        self._country_picker(found, picked)
        self._setting_rows()
        first_other = next(
            iter(stage.campaign.stages.exclude(pk=stage.pk).values_list("pk", flat=True)), None
        )
        for name in JSON_FIELDS:
            if name in self.fields and HELP_EXAMPLES.get(name):
                shape = "An object" if name == "escalation_rule" else "A list of entries"
                examples = help_examples(name, stage_id=first_other)
                self.fields[name].help_text = f"{shape}, e.g. {examples}."
        if platform_for(stage.campaign).moves_money:
            del self.fields["show_reward_to_local_workers"]  # platforms show the reward
        next_field = self.fields["next_stage"]
        assert isinstance(next_field, forms.ChoiceField)
        next_field.choices = [("", "Nothing (last stage)")] + [
            (s.pk, s.name) for s in stage.campaign.stages.exclude(pk=stage.pk).order_by("position")
        ]
        for spec in self.config_specs:
            self.fields[CONFIG_PREFIX + spec.name] = _config_form_field(spec)
        # Frozen fields stay visible (the requester sees what the HITs were made of)
        # but disabled: Django then ignores what is posted for them.
        self.raw_json_used = False
        self.frozen = set()
        for name, field in self.fields.items():
            if self.stage_field(name) not in editable and name not in HIDDEN_ORIGINALS:
                field.disabled = True
                self.frozen.add(name)

    def _country_picker(self, found: tuple[int, dict[str, Any]] | None, picked: list[str]) -> None:
        """Offer the platform's countries by name (Prolific: from the cached filters
        catalogue, else its ISO codes); none offered (MTurk, local): no picker, the JSON
        says it. A requirement the picker cannot show (an exclusion, a region, a
        platform's own id) stays the JSON's alone."""
        offered = platform_for(self.stage.campaign).rules().requirement_choices().get("countries")
        if not offered:
            del self.fields["countries"]
            del self.fields["countries_original"]
            return
        field = self.fields["countries"]
        assert isinstance(field, forms.MultipleChoiceField)
        by_name = sorted(offered, key=lambda c: c["name"])
        field.choices = [(c["code"], f"{c['name']} ({c['code']})") for c in by_name]
        codes = {c["code"] for c in offered}
        if found is not None and (found[1].get("exclude") or not set(picked) <= codes):
            field.disabled = True
            field.help_text = (
                "This stage's country requirement is one the list cannot show (an "
                "exclusion, a region or a platform id): edit it in the JSON above."
            )

    def _setting_rows(self) -> None:
        """The rows of inputs of each setting, from what was posted (a row added with
        *Add*, or the rows as typed) or else from the stage."""
        stage = self.stage
        others = [
            (s.pk, s.name) for s in stage.campaign.stages.exclude(pk=stage.pk).order_by("position")
        ]
        self.rows: dict[str, SettingRows] = {
            "qualification_requirements": RequirementRows(
                stages=others,
                qualifications=qualification_type_choices(owner_id=stage.campaign.owner_id),
            ),
            "review_rules": ReviewRuleRows(),
            "bonus_rules": BonusRuleRows(),
            "escalation_rule": EscalationRows(),
            "handoff": HandoffRows(
                schema=self.task_type.handoff_schema,
                stage_keys=tuple(self.task_type.handoff_stage_keys),
                stages=others,
            ),
        }
        self.rows_used: dict[str, bool] = {}
        # *Add* sends the form back with one more row to fill: nothing is checked yet.
        self.adding = self.is_bound and bool(self.data.get("add_row"))
        for name, rows in self.rows.items():
            stored = stage.handoff or {} if name == "handoff" else getattr(stage, name)
            if self.is_bound and rows.posted(self.data):
                rows.load_posted(self.data, adding=True)
            else:
                rows.load(stored)

    def setting(self, name: str) -> dict[str, Any]:
        """What the template draws for one setting: its rows, its JSON field, whether the
        JSON is open (it was edited, or holds a problem the rows cannot show)."""
        rows = self.rows[name]
        bound = self[name]
        frozen = name in self.frozen
        context = rows.context()
        context.update(
            {
                "field": bound,
                "original": self[f"{name}_original"],
                "frozen": frozen,
                "json_open": bool(bound.errors) and not self.rows_used.get(name, False),
            }
        )
        return context

    def handoff_setting(self) -> dict[str, Any]:
        return self.setting("handoff")

    def country_bound_fields(self) -> list[forms.BoundField]:
        return [self["countries"]] if "countries" in self.fields else []

    def link_bound_fields(self) -> list[forms.BoundField]:
        return [self["next_stage"]]

    def settings_context(self) -> list[dict[str, Any]]:
        return [
            self.setting(n)
            for n in (
                "qualification_requirements",
                "review_rules",
                "bonus_rules",
                "escalation_rule",
            )
        ]

    @staticmethod
    def stage_field(form_field: str) -> str:
        """The stage field a form field edits (config inputs all edit ``config``)."""
        if form_field.startswith(CONFIG_PREFIX) or form_field.startswith("config_json"):
            return "config"
        if form_field in ("countries", "countries_original"):
            return "qualification_requirements"
        if form_field.endswith("_original") and form_field[: -len("_original")] in ROW_SETTINGS:
            return form_field[: -len("_original")]
        return STAGE_FIELD_OF.get(form_field, form_field)

    def config_bound_fields(self) -> list[forms.BoundField]:
        return [self[CONFIG_PREFIX + s.name] for s in self.config_specs]

    def settings_bound_fields(self) -> list[forms.BoundField]:
        """The stage's plain fields (the settings with rows are drawn apart)."""
        return [
            self[n]
            for n in self.fields
            if not n.startswith(CONFIG_PREFIX)
            and not n.startswith("config_json")
            and n not in HIDDEN_ORIGINALS
            and n not in ROW_SETTINGS
            and n not in ("countries", "next_stage")
        ]

    def _config(self, cleaned: dict[str, Any]) -> dict[str, Any] | None:
        raw = (cleaned.get("config_json") or "").strip()
        original = (cleaned.get("config_json_original") or "").strip()
        self.raw_json_used = raw != original
        if self.raw_json_used:
            try:
                config = json.loads(raw or "{}")
            except json.JSONDecodeError as exc:
                self.add_error("config_json", f"Not valid JSON: {exc.msg} (line {exc.lineno}).")
                return None
            if not isinstance(config, dict):
                self.add_error("config_json", "The configuration is a JSON object: {...}.")
                return None
            return config
        config = dict(self.stage.config or {})
        for spec in self.config_specs:
            value = cleaned.get(CONFIG_PREFIX + spec.name)
            if value is None or value == "":
                config.pop(spec.name, None)
            else:
                config[spec.name] = value
        return config

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        # The API's shapes (lists of objects, objects), checked before the service sees them.
        for name in (*JSON_FIELDS, "handoff"):
            value = cleaned.get(name)
            if value in (None, "") or name in self.frozen:
                continue
            if name in ("escalation_rule", "handoff"):
                if not isinstance(value, dict):
                    self.add_error(name, "This is a JSON object: {...}.")
            elif not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
                self.add_error(name, "This is a JSON list of objects: [{...}, ...].")
        self._rows_into_settings(cleaned)
        self._countries_into_requirements(cleaned)
        if not self.adding:
            self._settings_checked(cleaned)
        config_inputs = [n for n in self.fields if n.startswith(CONFIG_PREFIX)] + ["config_json"]
        if any(n not in self.frozen for n in config_inputs):
            config = self._config(cleaned)
            if config is not None:
                # The task type's verdict, next to the input it concerns.
                for problem in self.task_type.validate_config(config):
                    key = problem.path.split("/")[0]
                    target = CONFIG_PREFIX + key
                    in_fields = target in self.fields and target not in self.frozen
                    if in_fields and not self.raw_json_used:
                        self.add_error(target, problem.message)
                    else:
                        self.add_error("config_json", str(problem))
                cleaned["config"] = config
        return cleaned

    def _rows_into_settings(self, cleaned: dict[str, Any]) -> None:
        """Each setting from its rows, unless its JSON was edited (then the JSON, as
        before the rows existed). Both edited, differently: refused, both kept."""
        for name, rows in self.rows.items():
            self.rows_used[name] = False
            if name in self.frozen or not rows.posted(self.data) or self.has_error(name):
                continue
            try:
                original = json.loads(cleaned.get(f"{name}_original") or "null")
            except json.JSONDecodeError:
                original = None
            typed = cleaned.get(name)
            if typed in (None, ""):
                typed = {} if rows.single else []
            from_rows = rows.value()
            json_changed = f"{name}_original" not in self.data or typed != original
            if json_changed and from_rows != original and from_rows != typed:
                self.add_error(name, BOTH_CHANGED)
            elif not json_changed:
                cleaned[name] = from_rows
                self.rows_used[name] = True

    def _settings_checked(self, cleaned: dict[str, Any]) -> None:
        """The checks saving runs (``requirement_problems``, the rule rooms' checks, the
        task type's hand-off schema), their messages beside the inputs they name."""
        problems: dict[str, list[str]] = {}
        if "qualification_requirements" not in self.frozen and not self.has_error(
            "qualification_requirements"
        ):
            found = requirement_problems(cleaned.get("qualification_requirements") or [])
            if found:
                problems["qualification_requirements"] = found
        rules = ("review_rules", "bonus_rules", "escalation_rule")
        if any(n not in self.frozen for n in rules) and not any(self.has_error(n) for n in rules):
            found_rules = stage_rules_problems(
                review_rules=cleaned.get("review_rules") or [],
                bonus_rules=cleaned.get("bonus_rules") or [],
                escalation_rule=cleaned.get("escalation_rule") or {},
            )
            problems.update({k: v for k, v in found_rules.items() if k not in self.frozen})
        if "handoff" not in self.frozen and not self.has_error("handoff"):
            found = [str(p) for p in self.task_type.validate_handoff(cleaned.get("handoff") or {})]
            if found:
                problems["handoff"] = found
        for name, messages in problems.items():
            self.add_error(name, messages)
        self.rows_place_errors()

    def rows_place_errors(self) -> None:
        """Put the errors of the settings edited by rows beside their inputs (also
        those the service raised on saving)."""
        for name, rows in self.rows.items():
            if not self.rows_used.get(name):
                continue
            placed = {m for r in rows.rows for ms in r.errors.values() for m in ms}
            placed |= {m for r in rows.rows for m in r.row_errors} | set(rows.errors)
            fresh = [str(m) for m in self.errors.get(name, []) if str(m) not in placed]
            rows.place_messages(fresh)

    def _countries_into_requirements(self, cleaned: dict[str, Any]) -> None:
        """A changed country selection rewrites the requirements' country requirement
        (the rest of them as the JSON field has them). Changing the countries in both
        places at once is refused rather than one silently winning."""
        field = self.fields.get("countries")
        if field is None or field.disabled or "qualification_requirements" in self.frozen:
            return
        picked = [str(c) for c in cleaned.get("countries") or []]
        before = [c for c in (cleaned.get("countries_original") or "").split(",") if c]
        if sorted(picked) == sorted(before):
            return
        requirements = cleaned.get("qualification_requirements")
        if self.has_error("qualification_requirements"):
            return
        if requirements in (None, ""):
            requirements = []
        if not isinstance(requirements, list):
            return  # the shape error is already said
        in_json = _country_requirement(requirements)
        json_codes = _countries_of(in_json[1]) if in_json else []
        if sorted(json_codes) != sorted(before):
            self.add_error(
                "countries",
                "You changed the countries both here and in the requirements' JSON; "
                "change them in one place.",
            )
            return
        cleaned["qualification_requirements"] = requirements_with_countries(requirements, picked)

    def link_change(self) -> tuple[int | None, dict[str, Any]] | None:
        """``(next stage id, handoff)`` when the link differs from the stored one, else None."""
        if "next_stage" in self.frozen:
            return None
        next_id = self.cleaned_data.get("next_stage")
        handoff = self.cleaned_data.get("handoff") or {}
        if next_id == self.stage.next_stage_id and handoff == (self.stage.handoff or {}):
            return None
        return next_id, handoff

    def changes(self) -> dict[str, Any]:
        """The stage fields that differ from the stored stage, as ``stage_update`` takes
        them; frozen fields are never among them."""
        data = self.cleaned_data
        values: dict[str, Any] = {}
        for name in ("name", "instructions", "reward", "assignments_per_hit", "items_per_hit"):
            values[name] = data.get(name)
        values["gold_ratio"] = data.get("gold_ratio")
        if "show_reward_to_local_workers" in self.fields:
            values["show_reward_to_local_workers"] = bool(data.get("show_reward_to_local_workers"))
        values["publish_added"] = bool(data.get("publish_added"))
        if data.get("assignment_minutes") is not None:
            values["assignment_duration"] = timedelta(minutes=data["assignment_minutes"])
        if data.get("lifetime_hours") is not None:
            values["lifetime"] = timedelta(hours=data["lifetime_hours"])
        for name in JSON_FIELDS:
            default: Any = {} if name == "escalation_rule" else []
            values[name] = default if data.get(name) in (None, "") else data[name]
        if "config" in data:
            values["config"] = data["config"]
        frozen_stage_fields = {self.stage_field(n) for n in self.frozen}
        return {
            k: v
            for k, v in values.items()
            if v is not None and k not in frozen_stage_fields and v != getattr(self.stage, k)
        }
