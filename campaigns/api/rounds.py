"""A writing stage's graded rounds (``campaigns.workforce.rounds``): preview the ranking
and each writer's feedback message, then close the round (grant the next round's
qualification to the top share, pay the round bonus, send the messages)."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import BAD_INPUT, MoneyField, stage_or_404, validated
from campaigns.api.stages import STAGE_ERRORS
from campaigns.models import Stage
from campaigns.payments.wages import stage_wage_topup_pay, wage_floor_rule
from campaigns.workforce.rounds import (
    DEFAULT_TEMPLATE,
    round_close,
    round_outcomes,
    round_settings,
)
from qaportal.errors import DomainError


class RoundInputSerializer(serializers.Serializer):
    grading_stage = serializers.IntegerField(
        required=False,
        help_text="The rubric_evaluation stage (default: the stage's config.round).",
    )
    round = serializers.IntegerField(min_value=1, required=False)
    qualify_share = serializers.FloatField(min_value=0.01, max_value=1.0, required=False)
    graders_share = serializers.FloatField(
        min_value=0.0,
        max_value=1.0,
        required=False,
        help_text="The top share promoted to grade the next round (crowd grading).",
    )
    min_examples = serializers.IntegerField(
        min_value=1,
        required=False,
        help_text="Graded examples a writer needs to be ranked (Nangia et al.: 4).",
    )
    bonus = MoneyField(
        max_digits=8, decimal_places=2, min_value=Decimal("0"), required=False, allow_null=True
    )
    grading_bonus = MoneyField(
        max_digits=8,
        decimal_places=2,
        min_value=Decimal("0"),
        required=False,
        allow_null=True,
        help_text="Paid once to each worker who graded the round's examples.",
    )
    template = serializers.CharField(
        default=DEFAULT_TEMPLATE,
        max_length=4000,
        help_text="$round $stage $examples $score $average $rank $writers $verdict "
        "$depth $depth_average $creativity $creativity_average "
        "$ambiguous_share $distracting_share $best $worst",
    )
    subject = serializers.CharField(default="", allow_blank=True, max_length=200)
    preview = serializers.BooleanField(default=True, help_text="false: close the round.")


def _round_input(stage: Stage, given: dict[str, Any]) -> dict[str, Any]:
    """What was sent, with the stage's ``config.round`` filling what was not."""
    settings = round_settings(stage=stage)
    v = dict(given)
    if "grading_stage" not in v:
        if settings.get("grading_stage") is None:
            raise ValidationError({"grading_stage": ["Name the grading stage."]})
        v["grading_stage"] = settings["grading_stage"]
    if "round" not in v:
        if settings.get("number") is None:
            raise ValidationError({"round": ["Give the round's number."]})
        v["round"] = settings["number"]
    v.setdefault("qualify_share", float(settings.get("qualify_share", 0.8)))
    v.setdefault("graders_share", float(settings.get("graders_share", 0.0)))
    try:
        v.setdefault("min_examples", max(1, int(settings.get("min_examples", 1))))
    except (TypeError, ValueError):
        raise ValidationError(
            {"min_examples": ["The stage's config.round has a bad count."]}
        ) from None
    for key in ("bonus", "grading_bonus"):
        if key not in v and settings.get(key) is not None:
            try:
                v[key] = Decimal(str(settings[key]))
            except InvalidOperation:
                raise ValidationError(
                    {key: ["The stage's config.round has a bad amount."]}
                ) from None
    return v


class RoundOutcomeSerializer(serializers.Serializer):
    worker = serializers.CharField(source="pseudonym")
    examples = serializers.IntegerField()
    score = serializers.FloatField(allow_null=True)
    rank = serializers.IntegerField(help_text="0: no graded example.")
    qualified = serializers.BooleanField()
    dimensions = serializers.DictField(
        child=serializers.FloatField(), help_text="Mean rubric score per dimension."
    )
    grader = serializers.BooleanField(help_text="Promoted to grade the next round.")
    ambiguous_share = serializers.FloatField()
    distracting_share = serializers.FloatField()
    message = serializers.CharField()


class StageRoundApi(APIView):
    """Preview (default) or close a graded round of this writing stage."""

    @extend_schema(
        request=RoundInputSerializer,
        responses={200: RoundOutcomeSerializer(many=True), 400: BAD_INPUT, 404: STAGE_ERRORS[404]},
    )
    def post(self, request: Request, stage_id: int) -> Response:
        stage = stage_or_404(request=request, stage_id=stage_id)
        data = validated(RoundInputSerializer, request.data)
        v = _round_input(stage, dict(data))
        grading = stage.campaign.stages.filter(pk=v["grading_stage"]).first()
        if grading is None:
            raise ValidationError({"grading_stage": ["No such stage in this campaign."]})
        try:
            if v["preview"]:
                outcomes = round_outcomes(
                    stage=stage,
                    grading_stage=grading,
                    round_number=v["round"],
                    qualify_share=v["qualify_share"],
                    template=v["template"],
                    graders_share=v["graders_share"],
                    min_examples=v["min_examples"],
                )
            else:
                outcomes = round_close(
                    stage=stage,
                    grading_stage=grading,
                    round_number=v["round"],
                    actor=request.user,  # type: ignore[arg-type]
                    qualify_share=v["qualify_share"],
                    bonus=v.get("bonus"),
                    template=v["template"],
                    subject=v["subject"],
                    graders_share=v["graders_share"],
                    grading_bonus=v.get("grading_bonus"),
                    min_examples=v["min_examples"],
                )
        except DomainError as exc:
            raise ValidationError(exc.errors or {"detail": [str(exc)]}) from None
        return Response(RoundOutcomeSerializer(outcomes, many=True).data)


class TopUpSerializer(serializers.Serializer):
    assignment = serializers.IntegerField(source="assignment_id")
    amount = serializers.DecimalField(max_digits=8, decimal_places=2, coerce_to_string=True)


class StageWageTopUpApi(APIView):
    """Pay the stage's ``wage_floor`` top-ups: approved work brought up to the hourly
    floor for its measured time (each assignment once). Lists what was paid."""

    @extend_schema(
        request=None,
        responses={200: TopUpSerializer(many=True), 400: BAD_INPUT, 404: STAGE_ERRORS[404]},
    )
    def post(self, request: Request, stage_id: int) -> Response:
        stage = stage_or_404(request=request, stage_id=stage_id)
        if wage_floor_rule(stage=stage) is None:
            raise ValidationError(
                {
                    "bonus_rules": [
                        'Add {"rule": "wage_floor", "hourly": "15.00"} to the stage first.'
                    ]
                }
            )
        try:
            paid = stage_wage_topup_pay(stage=stage)
        except DomainError as exc:
            raise ValidationError(exc.errors or {"detail": [str(exc)]}) from None
        return Response(TopUpSerializer(paid, many=True).data)
