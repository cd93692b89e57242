"""Forms of the requester pages. They check shapes; the services check the domain."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.forms.fields import InvalidJSONInput

from campaigns.design.platform import platform_for
from campaigns.models import Provider
from campaigns.models.choices import provider_choices
from campaigns.recipes import RECIPES
from campaigns.recipes.base import PAPER, PILOT
from campaigns.tasktypes import task_type_get, task_type_names
from qaportal.jsonsafe import MAX_JSON_DEPTH, json_depth_exceeds, unstorable_path
from qaportal.money import MoneyFormatError, money_parse


class MoneyFormField(forms.DecimalField):
    """Django's decimal field, parsing with ``qaportal.money.money_parse``: ``1e1``,
    ``1_0``, full-width digits, NaN and Infinity are refused with a message, not read."""

    def to_python(self, value: Any) -> Any:
        if value in self.empty_values:
            return None
        try:
            money_parse(value, places=None, allow_negative=True)
        except MoneyFormatError as exc:
            raise forms.ValidationError(str(exc), code="invalid") from None
        return super().to_python(value)


class CampaignCreateForm(forms.Form):
    name = forms.CharField(max_length=200)
    provider = forms.ChoiceField(choices=provider_choices, initial=Provider.LOCAL)
    sandbox = forms.BooleanField(
        required=False,
        # The default provider (the local workforce) has no sandbox; choosing a platform
        # with one ticks it (campaign_new.js).
        initial=False,
        help_text="Use the provider's sandbox (no real money) where it has one.",
    )
    budget_cap = MoneyFormField(
        required=False,
        min_value=Decimal("0"),
        max_digits=12,
        decimal_places=2,
        help_text="Hard limit on committed spending; leave empty for none.",
    )
    recipe = forms.ChoiceField(
        required=False,
        choices=[("", "From scratch")] + [(r.name, r.title) for r in RECIPES.values()],
        help_text="Start from a published protocol's stages, pay and rules; change them after.",
    )
    sample = forms.BooleanField(
        required=False, initial=True, label="Load the recipe's sample items"
    )
    scale = forms.ChoiceField(
        choices=[
            (PILOT, "Pilot: a few HITs per cell (cost below)"),
            (PAPER, "The paper's sizes (cost below)"),
        ],
        initial=PILOT,
        required=False,
        label="Recipe scale",
        help_text="A recipe loads as a small pilot; choose the paper's sizes explicitly.",
    )

    def clean_scale(self) -> str:
        return self.cleaned_data.get("scale") or PILOT

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        provider = data.get("provider")
        # A platform without a sandbox (the local workforce) stores none: its campaigns
        # never read as "sandbox".
        if provider and not platform_for(provider).has_sandbox:
            data["sandbox"] = False
        return data


class SafeJSONField(forms.JSONField):
    """Django's JSON field, refusing JSON nested too deep to parse safely (a 400 with a
    message instead of a RecursionError) and text ``jsonb`` cannot store."""

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and json_depth_exceeds(value):
            raise forms.ValidationError(
                f"The JSON is nested more than {MAX_JSON_DEPTH} levels deep.", code="invalid"
            )
        converted = super().to_python(value)
        found = unstorable_path(converted)
        if found is not None:
            where, reason = found
            raise forms.ValidationError(f"The value at {where or 'the top'!r} {reason}.")
        return converted

    def bound_data(self, data: Any, initial: Any) -> Any:
        # Shown again as typed: decoding it again would recurse or yield unprintable text.
        if isinstance(data, str) and (
            json_depth_exceeds(data) or unstorable_path(super().bound_data(data, initial))
        ):
            return InvalidJSONInput(data)
        return super().bound_data(data, initial)


class StageAddForm(forms.Form):
    name = forms.CharField(max_length=120)
    task_type = forms.ChoiceField(choices=())
    reward = MoneyFormField(
        min_value=Decimal("0"),
        max_digits=8,
        decimal_places=2,
        initial=Decimal("0.00"),
        help_text="Per assignment.",
    )
    assignments_per_hit = forms.IntegerField(
        label="Assignments per HIT", min_value=1, max_value=1000, initial=1
    )
    items_per_hit = forms.IntegerField(
        label="Items per HIT", min_value=1, max_value=1000, initial=1
    )
    instructions = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}))
    config = SafeJSONField(
        required=False,
        initial=dict,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text='Optional task-type settings as JSON, e.g. {"questions_per_hit": 5}; '
        "the stage's Edit page has a form for them.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Choices come from the task-type registry at form creation, not at import, so this
        # module does not depend on the order in which apps import their task types.
        choice_field = self.fields["task_type"]
        assert isinstance(choice_field, forms.ChoiceField)
        choice_field.choices = [(name, task_type_get(name).label) for name in task_type_names()]

    def clean_config(self) -> dict[str, Any]:
        config = self.cleaned_data.get("config")
        if config in (None, ""):
            return {}
        if not isinstance(config, dict):
            raise forms.ValidationError("The configuration is a JSON object: {...}.")
        return config


class ItemUploadForm(forms.Form):
    file = forms.FileField(help_text="CSV or JSON Lines, one item per row.")


# --- Local workforce and review -------------------------------------------------------

MAX_INVITE_DAYS = 365
MAX_BULK_IDS = 500


class InviteCreateForm(forms.Form):
    stage = forms.TypedChoiceField(
        coerce=int,
        required=False,
        empty_value=None,
        choices=(),
        help_text="Send workers straight to one stage; campaign-wide links start at the first.",
    )
    expires_in_days = forms.IntegerField(
        label="Expires in (days)", min_value=1, max_value=MAX_INVITE_DAYS, initial=7
    )
    max_uses = forms.IntegerField(
        label="Maximum uses",
        required=False,
        min_value=1,
        help_text="How many workers may join through it; empty: no limit.",
    )

    def __init__(self, *args: Any, stages: list[tuple[int, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        stage_field = self.fields["stage"]
        assert isinstance(stage_field, forms.ChoiceField)
        stage_field.choices = [("", "Whole campaign"), *stages]


class GrantAddForm(forms.Form):
    username = forms.CharField(
        max_length=150, help_text="A qaportal account; they work on /work/ pages when logged in."
    )


class ReviewDecisionForm(forms.Form):
    """One decision; rejecting needs feedback, which the worker sees on their page."""

    decision = forms.ChoiceField(choices=[("approve", "Approve"), ("reject", "Reject")])
    feedback = forms.CharField(
        required=False,
        max_length=5000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Required to reject, and shown to the worker; on approval kept as the reason.",
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("decision") == "reject" and not cleaned.get("feedback", "").strip():
            self.add_error("feedback", "Say why you reject: the worker sees this feedback.")
        return cleaned


class IdListField(forms.Field):
    """Several whole numbers from checkboxes of the same name (``ids``)."""

    widget = forms.MultipleHiddenInput
    default_error_messages = {"invalid": "Ids are whole numbers."}

    def to_python(self, value: Any) -> list[int]:
        if not value:
            return []
        values = value if isinstance(value, list | tuple) else [value]
        try:
            return list(dict.fromkeys(int(v) for v in values))
        except (TypeError, ValueError):
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid") from None


class BulkReviewForm(ReviewDecisionForm):
    ids = IdListField(error_messages={"required": "Select at least one assignment."})

    def clean_ids(self) -> list[int]:
        ids: list[int] = self.cleaned_data["ids"]
        if len(ids) > MAX_BULK_IDS:
            raise forms.ValidationError(f"At most {MAX_BULK_IDS} assignments at a time.")
        return ids


class CredentialsForm(forms.Form):
    """A campaign's own platform credentials: the fields of its provider, never re-shown."""

    def __init__(self, *args: Any, provider: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for spec in platform_for(provider).credential_fields:
            self.fields[spec.name] = forms.CharField(
                label=spec.help,
                required=spec.required,
                strip=True,
                widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
            )


class ModelEndpointForm(forms.Form):
    """A model endpoint (model in the loop). The API key is write-only: left empty on an
    edit it keeps the stored one; ``remove_key`` removes it."""

    name = forms.CharField(max_length=120)
    kind = forms.ChoiceField(
        choices=[
            ("openai", "OpenAI-compatible chat completions"),
            ("baseline_bm25", "Built-in baseline (BM25 sentence retrieval, no network)"),
        ]
    )
    base_url = forms.CharField(
        label="Base URL",
        required=False,
        max_length=500,
        help_text="Ends in /v1, e.g. http://127.0.0.1:8000/v1 (vLLM) or "
        "http://127.0.0.1:11434/v1 (Ollama).",
    )
    model = forms.CharField(label="Model name", required=False, max_length=200)
    api_key = forms.CharField(
        label="API key",
        required=False,
        strip=True,
        help_text="Stored encrypted, never shown again. Leave empty to keep the stored one.",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
    )
    remove_key = forms.BooleanField(label="Remove the stored API key", required=False)
    prompt_template = forms.CharField(
        label="Prompt template",
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="With {question} and {context}; empty: the built-in one.",
    )
    timeout_seconds = forms.CharField(label="Timeout (seconds)", initial="10", max_length=8)
    concurrency = forms.IntegerField(label="Concurrent calls at most", initial=4)
    price_in_per_1k = forms.CharField(
        label="Price per 1,000 input tokens", initial="0", max_length=20
    )
    price_out_per_1k = forms.CharField(
        label="Price per 1,000 output tokens", initial="0", max_length=20
    )
    currency = forms.CharField(initial="USD", max_length=3)

    def values(self, *, editing: bool) -> dict[str, Any]:
        """The service's values from the cleaned form."""
        data = dict(self.cleaned_data)
        template = data.pop("prompt_template", "").strip()
        remove = data.pop("remove_key", False)
        key = data.pop("api_key", "")
        values = {**data, "prompt_templates": {"default": template} if template else {}}
        if remove:
            values["api_key"] = ""
        elif key or not editing:
            values["api_key"] = key
        return values
