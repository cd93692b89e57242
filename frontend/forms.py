"""Forms of the requester pages. They check shapes; the services check the domain."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms

from campaigns.models import Provider
from campaigns.tasktypes import task_type_get, task_type_names


class CampaignCreateForm(forms.Form):
    name = forms.CharField(max_length=200)
    provider = forms.ChoiceField(choices=Provider.choices, initial=Provider.LOCAL)
    sandbox = forms.BooleanField(
        required=False,
        initial=True,
        help_text="Use the provider's sandbox (no real money) where it has one.",
    )
    budget_cap = forms.DecimalField(
        required=False,
        min_value=Decimal("0"),
        max_digits=12,
        decimal_places=2,
        help_text="Hard limit on committed spending; leave empty for none.",
    )


class StageAddForm(forms.Form):
    name = forms.CharField(max_length=120)
    task_type = forms.ChoiceField(choices=())
    reward = forms.DecimalField(
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
    config = forms.JSONField(
        required=False,
        initial=dict,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text='Task-type settings as JSON, e.g. {"questions_per_hit": 5}.',
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
