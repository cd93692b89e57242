"""Worker endpoints of a campaign: the workers table and the actions on workers
(message, block, unblock, grant or revoke a qualification), thin over
``campaigns.insights.workers`` and ``campaigns.platforms.worker_actions``.

Workers are addressed by pseudonym, never by external id. A worker who has not
worked in (or been placed into) the campaign answers 404, as does a campaign the
user may not see. Blocking is the owner's (or staff's) alone: collaborators get 403.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import (
    NOT_VISIBLE,
    StrictInputSerializer,
    authenticated_user,
    campaign_or_404,
    money_field,
    validated,
)
from campaigns.api.idempotency import idempotent_action
from campaigns.insights.workers import (
    ORDERING_FIELDS,
    campaign_worker_get,
    campaign_worker_table,
    campaign_workers_by_pseudonym,
)
from campaigns.models import AssignmentStatus, Campaign, QualificationType, Worker
from campaigns.platforms.worker_actions import (
    MAX_MESSAGE_WORKERS,
    worker_block,
    worker_qualification_set,
    worker_unblock,
    workers_message,
)

BAD_INPUT = OpenApiResponse(description="Invalid input; field names map to messages.")
OWNER_ONLY = OpenApiResponse(description="Only the campaign's owner (or staff) may do this.")
WORKER_NOT_FOUND = OpenApiResponse(
    description="No such campaign visible to you, or no worker with this pseudonym in it."
)


class QualificationHeldSerializer(serializers.Serializer):
    qualification_type_id = serializers.IntegerField()
    name = serializers.CharField()
    value = serializers.IntegerField()


class WorkerRowSerializer(serializers.Serializer):
    pseudonym = serializers.CharField()
    provider = serializers.CharField()
    arm = serializers.CharField(allow_blank=True)
    blocked = serializers.BooleanField(help_text="Blocked by the campaign's owner.")
    qualifications = QualificationHeldSerializer(many=True)
    assignments = serializers.IntegerField(help_text="All assignments, whatever their status.")
    submitted = serializers.IntegerField(help_text="Submitted, approved or rejected.")
    approved = serializers.IntegerField()
    rejected = serializers.IntegerField()
    awaiting = serializers.IntegerField(help_text="Submitted, awaiting a decision.")
    approval_rate = serializers.FloatField(allow_null=True)
    gold_correct = serializers.IntegerField()
    gold_total = serializers.IntegerField()
    gold_accuracy = serializers.FloatField(allow_null=True)
    agreement = serializers.FloatField(allow_null=True)
    median_work_seconds = serializers.FloatField(allow_null=True)
    paste_share = serializers.FloatField(
        allow_null=True, help_text="Share of submitted work with at least one paste."
    )
    earnings = money_field(help_text="Rewards, bonuses and quiz pay, committed or paid.")


class OperationBriefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    state = serializers.CharField()
    created_at = serializers.DateTimeField()


def _worker_or_404(request: Request, slug: str, pseudonym: str) -> tuple[Campaign, Worker]:
    """The campaign ``slug`` (as ``campaign_or_404`` finds it) and its worker ``pseudonym``."""
    campaign = campaign_or_404(request=request, slug=slug)
    try:
        return campaign, campaign_worker_get(campaign=campaign, pseudonym=pseudonym)
    except Worker.DoesNotExist:
        raise Http404("No worker with this pseudonym in this campaign.") from None


def _operation(op: Any) -> dict[str, Any] | None:
    return None if op is None else dict(OperationBriefSerializer(op).data)


class CampaignWorkerListApi(generics.GenericAPIView):
    """The campaign's workers with their numbers; filter and order (see parameters)."""

    serializer_class = WorkerRowSerializer
    filter_backends: list[Any] = []

    class WorkerFilterSerializer(serializers.Serializer):
        status = serializers.ChoiceField(
            choices=AssignmentStatus.choices,
            required=False,
            help_text="Workers with at least one assignment in this status.",
        )
        min_approval = serializers.FloatField(
            min_value=0,
            max_value=1,
            required=False,
            help_text="Approval rate (approved over decided) of at least this, 0 to 1.",
        )
        blocked = serializers.BooleanField(required=False, allow_null=True, default=None)
        arm = serializers.CharField(required=False, max_length=40)
        ordering = serializers.ChoiceField(
            choices=[*ORDERING_FIELDS, *(f"-{f}" for f in ORDERING_FIELDS)],
            required=False,
            default="pseudonym",
        )

    def _page_hint(self) -> tuple[int, int] | None:
        """The slice the paginator will ask for (read with the count in one query)."""
        paginator = self.paginator
        if not isinstance(paginator, PageNumberPagination):
            return None
        size = paginator.get_page_size(self.request)
        number = self.request.query_params.get("page") or "1"
        if not size or not number.isdigit() or int(number) < 1:
            return None
        return (int(number) - 1) * size, size

    @extend_schema(
        parameters=[WorkerFilterSerializer],
        responses={200: WorkerRowSerializer(many=True), 400: BAD_INPUT, 404: NOT_VISIBLE},
    )
    def get(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        filters = validated(self.WorkerFilterSerializer, request.query_params)
        rows = campaign_worker_table(campaign=campaign, **filters, page_hint=self._page_hint())
        page = self.paginate_queryset(rows)  # type: ignore[arg-type]  # a lazy sequence
        data = WorkerRowSerializer(page if page is not None else rows, many=True).data
        return self.get_paginated_response(data) if page is not None else Response(data)


class WorkerBlockOutputSerializer(serializers.Serializer):
    worker = serializers.CharField(help_text="Pseudonym.")
    blocked = serializers.BooleanField()
    operation = OperationBriefSerializer(allow_null=True)


class WorkerBlockApi(APIView):
    """Block the worker from all of the campaign owner's work (here and on the platform).
    Owner or staff only. Blocking a blocked worker changes nothing."""

    class BlockInputSerializer(StrictInputSerializer):
        reason = serializers.CharField(max_length=5000)

    @idempotent_action(
        request=BlockInputSerializer,
        responses={
            200: WorkerBlockOutputSerializer,
            400: BAD_INPUT,
            403: OWNER_ONLY,
            404: WORKER_NOT_FOUND,
        },
    )
    def post(self, request: Request, slug: str, pseudonym: str) -> Response:
        campaign, worker = _worker_or_404(request, slug, pseudonym)
        data = validated(self.BlockInputSerializer, request.data)
        _, op = worker_block(
            campaign=campaign,
            actor=authenticated_user(request),
            worker=worker,
            reason=data["reason"],
        )
        return Response({"worker": worker.pseudonym, "blocked": True, "operation": _operation(op)})


class WorkerUnblockApi(APIView):
    """Lift the owner's block of the worker. Owner or staff only. Unblocking a worker
    who is not blocked answers 200 with ``operation: null``."""

    @idempotent_action(
        request=None,
        responses={
            200: WorkerBlockOutputSerializer,
            403: OWNER_ONLY,
            404: WORKER_NOT_FOUND,
        },
    )
    def post(self, request: Request, slug: str, pseudonym: str) -> Response:
        campaign, worker = _worker_or_404(request, slug, pseudonym)
        lifted = worker_unblock(campaign=campaign, actor=authenticated_user(request), worker=worker)
        op = lifted[1] if lifted else None
        return Response({"worker": worker.pseudonym, "blocked": False, "operation": _operation(op)})


class WorkerQualifyOutputSerializer(serializers.Serializer):
    worker = serializers.CharField(help_text="Pseudonym.")
    qualification_type = serializers.IntegerField()
    granted = serializers.BooleanField()
    value = serializers.IntegerField(allow_null=True)
    operation = OperationBriefSerializer(allow_null=True)


class WorkerQualifyApi(APIView):
    """Grant or revoke one of the campaign owner's custom qualification types."""

    class QualifyInputSerializer(StrictInputSerializer):
        qualification_type = serializers.IntegerField(min_value=1)
        action = serializers.ChoiceField(choices=["grant", "revoke"], default="grant")
        value = serializers.IntegerField(default=1, min_value=0, max_value=1_000_000)

    @idempotent_action(
        request=QualifyInputSerializer,
        responses={
            200: WorkerQualifyOutputSerializer,
            400: BAD_INPUT,
            404: WORKER_NOT_FOUND,
        },
    )
    def post(self, request: Request, slug: str, pseudonym: str) -> Response:
        campaign, worker = _worker_or_404(request, slug, pseudonym)
        data = validated(self.QualifyInputSerializer, request.data)
        qualification_type = QualificationType.objects.filter(
            pk=data["qualification_type"], owner_id=campaign.owner_id
        ).first()
        if qualification_type is None:
            raise serializers.ValidationError(
                {"qualification_type": ["No such qualification type of the campaign's owner."]}
            )
        done = worker_qualification_set(
            campaign=campaign,
            worker=worker,
            qualification_type=qualification_type,
            granted=data["action"] == "grant",
            value=data["value"],
        )
        grant, op = done if done else (None, None)
        return Response(
            {
                "worker": worker.pseudonym,
                "qualification_type": qualification_type.pk,
                "granted": grant is not None and grant.revoked_at is None,
                "value": grant.value if grant is not None else None,
                "operation": _operation(op),
            }
        )


class MessageOutputSerializer(serializers.Serializer):
    workers = serializers.ListField(child=serializers.CharField(), help_text="Pseudonyms.")
    operation = OperationBriefSerializer()


class MessageFields(StrictInputSerializer):
    subject = serializers.CharField(max_length=200, allow_blank=True, default="")
    body = serializers.CharField(max_length=10_000)


def _message(request: Request, campaign: Campaign, workers: list[Worker], data: Any) -> Response:
    op = workers_message(
        campaign=campaign,
        actor=authenticated_user(request),
        workers=workers,
        subject=data["subject"],
        body=data["body"],
    )
    return Response(
        {"workers": [w.pseudonym for w in workers], "operation": _operation(op)},
        status=status.HTTP_201_CREATED,
    )


class WorkerMessageApi(APIView):
    """Send the worker a message (a ``notify`` provider operation). Without an
    ``Idempotency-Key`` every request sends a new message."""

    @idempotent_action(
        request=MessageFields,
        responses={
            201: MessageOutputSerializer,
            400: BAD_INPUT,
            404: WORKER_NOT_FOUND,
        },
    )
    def post(self, request: Request, slug: str, pseudonym: str) -> Response:
        campaign, worker = _worker_or_404(request, slug, pseudonym)
        data = validated(MessageFields, request.data)
        return _message(request, campaign, [worker], data)


class CampaignMessageApi(APIView):
    """Send one message to several workers of the campaign, named by pseudonym."""

    class ManyMessageInputSerializer(MessageFields):
        workers = serializers.ListField(
            child=serializers.CharField(max_length=40),
            min_length=1,
            max_length=MAX_MESSAGE_WORKERS,
            help_text="Pseudonyms of workers of this campaign.",
        )

    @idempotent_action(
        request=ManyMessageInputSerializer,
        responses={
            201: MessageOutputSerializer,
            400: BAD_INPUT,
            404: NOT_VISIBLE,
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        data = validated(self.ManyMessageInputSerializer, request.data)
        wanted = list(dict.fromkeys(data["workers"]))
        found = campaign_workers_by_pseudonym(campaign=campaign, pseudonyms=wanted)
        unknown = [p for p in wanted if p not in found]
        if unknown:
            raise serializers.ValidationError(
                {"workers": [f"Not a worker of this campaign: {', '.join(unknown)}."]}
            )
        return _message(request, campaign, [found[p] for p in wanted], data)
