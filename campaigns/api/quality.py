"""Stage quality endpoints: run a stage's review rules; its quality numbers and final
labels."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import money_field, stage_or_404, validated
from campaigns.api.stages import STAGE_ERRORS
from campaigns.models import Item
from campaigns.tasktypes import task_type_get
from linking.selectors import stage_entity_agreement
from qaportal.outbox import task_after_commit
from validation.selectors import stage_agreement_series, stage_final_labels, stage_quality


class StageReviewQueuedSerializer(serializers.Serializer):
    stage = serializers.IntegerField()
    queued = serializers.BooleanField()


class StageReviewRunApi(APIView):
    """Queue the stage's review rules and gold actions (the Celery task
    ``validation.review_stage``, enqueued after commit); idempotent, so queueing twice
    is harmless. Decisions show in the assignments' ``review`` when it has run."""

    @extend_schema(
        request=None,
        responses={202: StageReviewQueuedSerializer, 404: STAGE_ERRORS[404]},
    )
    def post(self, request: Request, stage_id: int) -> Response:
        stage = stage_or_404(request=request, stage_id=stage_id)
        task_after_commit("validation.review_stage", stage.pk)
        return Response({"stage": stage.pk, "queued": True}, status=status.HTTP_202_ACCEPTED)


class AgreementOutputSerializer(serializers.Serializer):
    alpha = serializers.FloatField(allow_null=True, help_text="Krippendorff's alpha, nominal.")
    percent_agreement = serializers.FloatField(allow_null=True)
    items = serializers.IntegerField()
    annotators = serializers.IntegerField()
    labels = serializers.IntegerField()


class EntityAgreementOutputSerializer(serializers.Serializer):
    items = serializers.IntegerField()
    with_two = serializers.IntegerField(help_text="Items with at least two annotators.")
    agreed_after_2 = serializers.IntegerField()
    agreed_after_3 = serializers.IntegerField()
    after_2 = serializers.FloatField(allow_null=True)
    after_3 = serializers.FloatField(allow_null=True)


class WorkerQualityOutputSerializer(serializers.Serializer):
    worker = serializers.CharField(source="pseudonym", help_text="The worker's pseudonym.")
    submitted = serializers.IntegerField(help_text="Stored assignments in the stage.")
    approved = serializers.IntegerField()
    rejected = serializers.IntegerField()
    approval_rate = serializers.FloatField(allow_null=True)
    gold_correct = serializers.IntegerField()
    gold_total = serializers.IntegerField()
    gold_accuracy = serializers.FloatField(allow_null=True)
    agreement = serializers.FloatField(allow_null=True, help_text="Agreement with peers.")
    median_work_seconds = serializers.FloatField(allow_null=True)
    hourly_wage = money_field(allow_null=True)
    below_wage_floor = serializers.BooleanField()


class StageQualityOutputSerializer(serializers.Serializer):
    stage = serializers.IntegerField(source="stage_id")
    assignments = serializers.IntegerField(help_text="Stored: submitted, approved, rejected.")
    approved = serializers.IntegerField()
    rejected = serializers.IntegerField()
    held = serializers.IntegerField(help_text="Submitted with a rule's hold.")
    approval_rate = serializers.FloatField(allow_null=True)
    gold_correct = serializers.IntegerField()
    gold_total = serializers.IntegerField()
    gold_accuracy = serializers.FloatField(allow_null=True)
    agreement = AgreementOutputSerializer()
    median_work_seconds = serializers.FloatField(allow_null=True)
    hourly_wage = money_field(allow_null=True, help_text="Reward over the median work time.")
    wage_floor = money_field()
    below_wage_floor = serializers.BooleanField()
    entity_agreement = EntityAgreementOutputSerializer(
        allow_null=True, help_text="Linking stages: agreement after 2 and after 3 annotators."
    )
    workers = WorkerQualityOutputSerializer(many=True)


class StageQualityApi(APIView):
    """The stage's quality numbers, as on the campaign page: agreement, gold accuracy,
    approval rate, median work time, effective hourly wage against the floor, per
    worker too; on linking stages entity agreement after 2 and after 3 annotators."""

    @extend_schema(responses={200: StageQualityOutputSerializer, 404: STAGE_ERRORS[404]})
    def get(self, request: Request, stage_id: int) -> Response:
        stage = stage_or_404(request=request, stage_id=stage_id)
        quality = stage_quality(stage=stage)
        entity = (
            stage_entity_agreement(stage=stage)
            if task_type_get(stage.task_type).links_entities
            else None
        )
        body = StageQualityOutputSerializer(quality).data
        body["entity_agreement"] = (
            None if entity is None else EntityAgreementOutputSerializer(entity.as_dict()).data
        )
        return Response(body)


class FinalLabelSerializer(serializers.Serializer):
    item = serializers.IntegerField()
    external_id = serializers.CharField()

    def get_fields(self) -> dict[str, serializers.Field]:
        # Added here: a declared field named "label" would shadow ``Field.label``.
        fields = super().get_fields()
        fields["label"] = serializers.JSONField(help_text="The majority label.")
        return fields


class DiscardedLabelSerializer(serializers.Serializer):
    item = serializers.IntegerField()
    external_id = serializers.CharField()
    reason = serializers.CharField(help_text="tie, no majority, or a discard label.")
    majority = serializers.JSONField(allow_null=True)


class StageLabelsOutputSerializer(serializers.Serializer):
    stage = serializers.IntegerField()
    labels = FinalLabelSerializer(many=True)
    discarded = DiscardedLabelSerializer(many=True)


class StageLabelsApi(APIView):
    """Final label per item by majority vote over the stage's non-rejected answers, with
    the stage's ``final_labels`` options; discarded items say why."""

    @extend_schema(responses={200: StageLabelsOutputSerializer, 404: STAGE_ERRORS[404]})
    def get(self, request: Request, stage_id: int) -> Response:
        stage = stage_or_404(request=request, stage_id=stage_id)
        vote = stage_final_labels(stage=stage)
        wanted = {*vote.labels, *vote.discarded}
        external = dict(
            Item.objects.filter(stage=stage, pk__in=list(wanted)).values_list("pk", "external_id")
        )

        def _ext(item: Any) -> str:
            return str(external.get(item, ""))

        body = {
            "stage": stage.pk,
            "labels": [
                {"item": item, "external_id": _ext(item), "label": label}
                for item, label in sorted(vote.labels.items(), key=lambda kv: str(kv[0]))
            ],
            "discarded": [
                {
                    "item": item,
                    "external_id": _ext(item),
                    "reason": str(reason),
                    "majority": vote.majority.get(item),
                }
                for item, reason in sorted(vote.discarded.items(), key=lambda kv: str(kv[0]))
            ],
        }
        return Response(StageLabelsOutputSerializer(body).data)


class AgreementPointSerializer(serializers.Serializer):
    at = serializers.DateTimeField(help_text="The last submission counted in this point.")
    alpha = serializers.FloatField(allow_null=True, help_text="Krippendorff's alpha, nominal.")
    percent_agreement = serializers.FloatField(allow_null=True)
    items = serializers.IntegerField(help_text="Items with at least one label by then.")


class StageAgreementSeriesApi(APIView):
    """The stage's agreement over time: alpha and percent agreement over the answers
    submitted up to each of ``points`` moments (default 12, spread evenly over the
    submissions); the last is the agreement now. Empty for task types without
    categorical answers."""

    class QuerySerializer(serializers.Serializer):
        points = serializers.IntegerField(min_value=1, max_value=100, default=12)

    @extend_schema(
        parameters=[QuerySerializer],
        responses={200: AgreementPointSerializer(many=True), 404: STAGE_ERRORS[404]},
    )
    def get(self, request: Request, stage_id: int) -> Response:
        stage = stage_or_404(request=request, stage_id=stage_id)
        query = validated(self.QuerySerializer, request.query_params)
        series = stage_agreement_series(stage=stage, points=query["points"])
        return Response(AgreementPointSerializer(series, many=True).data)
