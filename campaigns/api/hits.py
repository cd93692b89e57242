"""HITs and single assignments: a campaign's HITs, one HIT, one assignment, and a
bonus on an assignment. Visible to the owner, collaborators and staff; 404 otherwise.
Workers appear by pseudonym only."""

from __future__ import annotations

import hashlib
from decimal import Decimal
from typing import Any

import django_filters
from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import (
    NOT_VISIBLE,
    MoneyField,
    StrictInputSerializer,
    authenticated_user,
    campaign_or_404,
    money_field,
    validated,
)
from campaigns.api.idempotency import idempotent_action
from campaigns.api.idempotency_store import IdempotencyKeyReused
from campaigns.api.review import AssignmentOutputSerializer, ItemBriefSerializer
from campaigns.models import (
    HIT,
    Assignment,
    HITStatus,
    LedgerEntry,
    LedgerKind,
    ProviderOperation,
)
from campaigns.payments.bonus_keys import bonus_natural_key
from campaigns.platforms.worker_actions import assignment_bonus_pay
from campaigns.work.selectors.hits import hit_list_for_campaign, hit_list_visible
from campaigns.work.selectors.review import assignment_list_visible, hit_items_by_hit

BAD_INPUT = OpenApiResponse(description="Invalid input; field names map to messages.")


class HITOutputSerializer(serializers.ModelSerializer):
    stage_name = serializers.CharField(source="stage.name", read_only=True)
    reward = money_field()
    item_count = serializers.IntegerField(read_only=True)
    assignment_count = serializers.IntegerField(read_only=True)
    submitted_count = serializers.IntegerField(
        read_only=True, help_text="Submitted, awaiting a decision."
    )
    approved_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = HIT
        fields = [
            "id",
            "stage",
            "stage_name",
            "status",
            "provider",
            "provider_hit_id",
            "max_assignments",
            "places_left",
            "reward",
            "item_count",
            "assignment_count",
            "submitted_count",
            "approved_count",
            "created_at",
            "published_at",
            "expires_at",
        ]
        read_only_fields = fields


class HITFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(choices=HITStatus.choices)
    stage = django_filters.NumberFilter(field_name="stage_id")
    created_after = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = HIT
        fields = ["status", "stage", "created_after", "created_before"]


class CampaignHITListApi(generics.ListAPIView):
    """The campaign's HITs, newest first, with item and assignment counts. Filter by
    status, stage, creation time; order by ``created_at``, ``published_at``,
    ``places_left``, ``id``."""

    serializer_class = HITOutputSerializer
    filterset_class = HITFilter
    ordering_fields = ["created_at", "published_at", "places_left", "id"]

    def get_queryset(self) -> QuerySet[HIT]:
        if getattr(self, "swagger_fake_view", False):
            return HIT.objects.none()
        campaign = campaign_or_404(request=self.request, slug=self.kwargs["slug"])
        return hit_list_for_campaign(campaign=campaign)

    @extend_schema(
        responses={200: HITOutputSerializer(many=True), 400: BAD_INPUT, 404: NOT_VISIBLE}
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


class HITAssignmentBriefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    worker = serializers.CharField(source="worker.pseudonym", help_text="Pseudonym.")
    status = serializers.CharField()
    submitted_at = serializers.DateTimeField(allow_null=True)


class HITDetailSerializer(HITOutputSerializer):
    items = serializers.SerializerMethodField()
    assignments = serializers.SerializerMethodField()

    class Meta(HITOutputSerializer.Meta):
        fields = [*HITOutputSerializer.Meta.fields, "items", "assignments"]
        read_only_fields = fields

    @extend_schema_field(ItemBriefSerializer(many=True))
    def get_items(self, hit: HIT) -> list[dict[str, Any]]:
        return hit_items_by_hit(hit_ids=[hit.pk]).get(hit.pk, [])

    @extend_schema_field(HITAssignmentBriefSerializer(many=True))
    def get_assignments(self, hit: HIT) -> list[dict[str, Any]]:
        rows = hit.assignments.select_related("worker").order_by("id")
        return list(HITAssignmentBriefSerializer(rows, many=True).data)


class HITDetailApi(APIView):
    """One HIT with its items and its assignments (worker by pseudonym)."""

    @extend_schema(responses={200: HITDetailSerializer, 404: NOT_VISIBLE})
    def get(self, request: Request, hit_id: int) -> Response:
        hit = hit_list_visible(user=request.user).filter(pk=hit_id).first()
        if hit is None:
            raise Http404("No HIT with this id.")
        return Response(HITDetailSerializer(hit).data)


def _assignment_or_404(request: Request, assignment_id: int) -> Assignment:
    assignment = (
        assignment_list_visible(user=request.user)
        .select_related("worker", "hit__stage", "decided_by")
        .filter(pk=assignment_id)
        .first()
    )
    if assignment is None:
        raise Http404("No assignment with this id.")
    return assignment


class AssignmentDetailApi(APIView):
    """One assignment as a reviewer sees it (answers, telemetry, rule verdicts)."""

    @extend_schema(responses={200: AssignmentOutputSerializer, 404: NOT_VISIBLE})
    def get(self, request: Request, assignment_id: int) -> Response:
        return Response(AssignmentOutputSerializer(_assignment_or_404(request, assignment_id)).data)


class BonusOutputSerializer(serializers.Serializer):
    assignment = serializers.IntegerField()
    worker = serializers.CharField(help_text="Pseudonym.")
    amount = money_field()
    fee = money_field(help_text="The platform's fee on the bonus (0 on the local workforce).")
    currency = serializers.CharField()
    reason = serializers.CharField()
    operation = serializers.IntegerField(help_text="The provider operation that pays it.")
    state = serializers.CharField(help_text="The operation's state when answered.")


def _check_same_bonus(
    *,
    op: ProviderOperation,
    bonus: LedgerEntry | None,
    assignment: Assignment,
    data: dict[str, Any],
    key: str,
) -> None:
    """Refuse (``IdempotencyKeyReused``, 422) a key that already names another payment.

    The payment's key outlives the idempotency record: once the record expired, the
    same header on another assignment, amount or reason found the first payment and
    answered as if it were this one, paying nobody. Compared at any age."""
    paid_to = bonus.assignment_id if bonus else op.payload.get("assignment_id")
    amount = bonus.amount if bonus else op.payload.get("amount")
    reason = op.payload.get("reason", data["reason"])
    same = (
        paid_to == assignment.pk
        and amount is not None
        and Decimal(str(amount)) == data["amount"]
        and reason == data["reason"]
    )
    if not same:
        raise IdempotencyKeyReused(
            f"The Idempotency-Key {key!r} already paid another bonus (operation {op.pk}); "
            "use a new key for a new bonus.",
            errors={"Idempotency-Key": ["already used for another bonus"]},
        )


class AssignmentBonusApi(APIView):
    """Pay the assignment's worker a bonus, budget checked.

    Send an ``Idempotency-Key``: the same key and body pay once and answer the same
    (and the key also names the payment itself, so the bonus is paid once even after
    the key has expired). Without a key, the same bonus (assignment, amount, reason)
    asked again within ``BONUS_NATURAL_KEY_SECONDS`` is the same payment: a retried
    request never pays twice. ``amount`` is plain decimal text (``12``, ``0.50``): no
    exponents, underscores or non-ASCII digits.
    """

    class BonusInputSerializer(StrictInputSerializer):
        amount = MoneyField(
            max_digits=8,
            decimal_places=2,
            min_value=Decimal("0.01"),
            coerce_to_string=True,
            help_text='A decimal string in whole cents, e.g. "0.50".',
        )
        reason = serializers.CharField(max_length=300, help_text="Shown to the worker.")

    @idempotent_action(
        request=BonusInputSerializer,
        responses={
            201: BonusOutputSerializer,
            400: OpenApiResponse(
                description="Invalid input, over budget (code budget_exceeded), or the "
                "worker's identity is not confirmed (identity_unconfirmed)."
            ),
            404: NOT_VISIBLE,
        },
    )
    def post(self, request: Request, assignment_id: int) -> Response:
        assignment = _assignment_or_404(request, assignment_id)
        data = validated(self.BonusInputSerializer, request.data)
        user = authenticated_user(request)
        header = (request.headers.get("Idempotency-Key") or "").strip()
        # The payment's own key: derived from the client's key, so it pays once even
        # after the idempotency record expired; a digest keeps it short.
        digest = hashlib.sha256(header.encode()).hexdigest()[:32]
        key = (
            f"api:{user.pk}:{digest}"
            if header
            else bonus_natural_key(
                assignment_id=assignment.pk, amount=data["amount"], reason=data["reason"]
            )
        )
        op = assignment_bonus_pay(
            assignment=assignment, amount=data["amount"], reason=data["reason"], key=key
        )
        entries = {e.kind: e for e in LedgerEntry.objects.filter(operation=op)}
        bonus = entries.get(LedgerKind.BONUS)
        fee = entries.get(LedgerKind.BONUS_FEE)
        if header:
            _check_same_bonus(op=op, bonus=bonus, assignment=assignment, data=data, key=header)
        body = {
            "assignment": assignment.pk,
            "worker": assignment.worker.pseudonym,
            "amount": bonus.amount if bonus else data["amount"],
            "fee": fee.amount if fee else Decimal("0.00"),
            "currency": bonus.currency if bonus else assignment.hit.stage.campaign.currency,
            "reason": data["reason"],
            "operation": op.pk,
            "state": op.state,
        }
        return Response(BonusOutputSerializer(body).data, status=status.HTTP_201_CREATED)
