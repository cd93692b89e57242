"""Questions generated from a knowledge base (GraphQuestions; ``linking.graphquestions``):
list and generate them, edit a canonical question, accept or reject, send the accepted
ones to a paraphrasing stage. Visible to the owner, collaborators and staff.

Generating through the API takes the knowledge base as Turtle text in the request, or
the URL of a SPARQL endpoint on the ``GRAPHQUESTIONS_ENDPOINTS`` allow-list (the server
never fetches a URL a client made up)."""

from __future__ import annotations

import tempfile
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import BAD_INPUT, NOT_VISIBLE, campaign_or_404, validated
from campaigns.design.selectors import campaign_list_visible
from campaigns.models import Campaign
from linking.graphquestions.generate import DEFAULT_MIN_COMMONNESS, SPEC_FUNCTIONS, Spec
from linking.graphquestions.kb import KnowledgeBaseError
from linking.graphquestions.services import (
    generated_question_edit,
    generated_questions_decide,
    generated_questions_propose,
    generated_questions_send,
    knowledge_base_open,
)
from linking.models import GeneratedQuestion, GeneratedQuestionStatus
from qaportal.errors import DomainError

MAX_TURTLE_CHARS = 5_000_000


class GeneratedQuestionSerializer(serializers.ModelSerializer):
    class Meta:
        model = GeneratedQuestion
        fields = [
            "id",
            "canonical_question",
            "status",
            "characteristics",
            "answers",
            "answer_labels",
            "entities",
            "sparql",
            "query",
            "source",
            "seed",
            "item",
            "checks",
            "decided_at",
            "created_at",
        ]
        read_only_fields = [f for f in fields if f not in ("canonical_question", "status")]


class GenerateInputSerializer(serializers.Serializer):
    rdf_turtle = serializers.CharField(
        required=False, max_length=MAX_TURTLE_CHARS, help_text="The knowledge base as Turtle."
    )
    endpoint = serializers.URLField(
        required=False, help_text="A SPARQL endpoint from GRAPHQUESTIONS_ENDPOINTS."
    )
    classes = serializers.ListField(child=serializers.CharField(), required=False, default=list)
    edges = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=5),
        min_length=2,
        max_length=2,
        default=[1, 3],
    )
    function = serializers.ChoiceField(
        choices=SPEC_FUNCTIONS,
        default="random",
        help_text="random (default): per query none or a function its question node allows, "
        "as Su et al. §4 do; or one family or kind for every query.",
    )
    cardinality = serializers.ListField(
        child=serializers.IntegerField(min_value=0),
        min_length=2,
        max_length=2,
        default=[1, 1_000_000],
    )
    min_commonness = serializers.FloatField(
        required=False,
        allow_null=True,
        default=DEFAULT_MIN_COMMONNESS,
        help_text="Floor on log10 p(q) (default -40, Su et al. §7.1); null: no floor.",
    )
    seed = serializers.IntegerField(default=0)
    count = serializers.IntegerField(min_value=1, max_value=200, default=10)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if bool(attrs.get("rdf_turtle")) == bool(attrs.get("endpoint")):
            raise ValidationError({"rdf_turtle": ["Give either rdf_turtle or endpoint."]})
        endpoint = attrs.get("endpoint")
        if endpoint and endpoint not in settings.GRAPHQUESTIONS_ENDPOINTS:
            raise ValidationError(
                {"endpoint": ["Not on the server's GRAPHQUESTIONS_ENDPOINTS list."]}
            )
        for name in ("edges", "cardinality"):
            low, high = attrs[name]
            if low > high:
                raise ValidationError({name: ["The first number must not exceed the second."]})
        return attrs


class CampaignGeneratedQuestionListApi(generics.ListAPIView):
    """The campaign's generated questions, oldest first; ``status`` filters. POST
    generates more (stored as proposals; a query the campaign has is not stored twice)."""

    serializer_class = GeneratedQuestionSerializer

    def get_queryset(self) -> QuerySet[GeneratedQuestion]:
        if getattr(self, "swagger_fake_view", False):
            return GeneratedQuestion.objects.none()
        campaign = campaign_or_404(request=self.request, slug=self.kwargs["slug"])
        queryset = campaign.generated_questions.order_by("pk")
        wanted = self.request.query_params.get("status")
        if wanted:
            if wanted not in GeneratedQuestionStatus.values:
                raise ValidationError({"status": [f"Use one of {GeneratedQuestionStatus.values}."]})
            queryset = queryset.filter(status=wanted)
        return queryset

    @extend_schema(
        parameters=[OpenApiParameter("status", str, enum=GeneratedQuestionStatus.values)],
        responses={200: GeneratedQuestionSerializer(many=True), 400: BAD_INPUT, 404: NOT_VISIBLE},
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        request=GenerateInputSerializer,
        responses={201: GeneratedQuestionSerializer(many=True), 400: BAD_INPUT, 404: NOT_VISIBLE},
    )
    def post(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        v = validated(GenerateInputSerializer, request.data)
        spec = Spec(
            classes=tuple(v["classes"]),
            edges=(v["edges"][0], v["edges"][1]),
            function=v["function"],
            cardinality=(v["cardinality"][0], v["cardinality"][1]),
            min_commonness=v["min_commonness"],
        )
        try:
            with tempfile.NamedTemporaryFile("w", suffix=".ttl", encoding="utf-8") as ttl:
                if v.get("rdf_turtle"):
                    ttl.write(v["rdf_turtle"])
                    ttl.flush()
                kb = knowledge_base_open(
                    rdf=ttl.name if v.get("rdf_turtle") else None, endpoint=v.get("endpoint")
                )
                stored = generated_questions_propose(
                    campaign=campaign,
                    kb=kb,
                    spec=spec,
                    count=v["count"],
                    seed=v["seed"],
                    source=v.get("endpoint") or "uploaded Turtle",
                )
        except (KnowledgeBaseError, DomainError) as exc:
            raise ValidationError({"knowledge_base": [str(exc)]}) from None
        body = GeneratedQuestionSerializer(stored, many=True).data
        return Response(body, status=status.HTTP_201_CREATED)


def _question_or_404(request: Request, question_id: int) -> tuple[GeneratedQuestion, Campaign]:
    visible = campaign_list_visible(user=request.user)
    found = (
        GeneratedQuestion.objects.select_related("campaign")
        .filter(pk=question_id, campaign__in=visible)
        .first()
    )
    if found is None:
        raise Http404("No generated question with this id.")
    return found, found.campaign


class GeneratedQuestionDetailApi(APIView):
    """One generated question; PATCH edits the canonical question and/or decides it
    (``status`` accepted or rejected). A question already sent cannot change."""

    @extend_schema(responses={200: GeneratedQuestionSerializer, 404: NOT_VISIBLE})
    def get(self, request: Request, question_id: int) -> Response:
        question, _ = _question_or_404(request, question_id)
        return Response(GeneratedQuestionSerializer(question).data)

    @extend_schema(
        request=GeneratedQuestionSerializer,
        responses={200: GeneratedQuestionSerializer, 400: BAD_INPUT, 404: NOT_VISIBLE},
    )
    def patch(self, request: Request, question_id: int) -> Response:
        question, _ = _question_or_404(request, question_id)
        body = request.data if isinstance(request.data, dict) else {}
        wanted = body.get("status")
        if wanted is not None and wanted not in ("accepted", "rejected"):
            raise ValidationError({"status": ["Set accepted or rejected."]})
        try:
            if "canonical_question" in body:
                generated_question_edit(
                    question=question, canonical_question=str(body["canonical_question"])
                )
            if wanted is not None:
                if question.status == GeneratedQuestionStatus.SENT:
                    raise DomainError("This question was already sent to paraphrasing.")
                generated_questions_decide(
                    questions=[question],
                    accept=wanted == "accepted",
                    user=request.user,  # type: ignore[arg-type]
                )
        except DomainError as exc:
            raise ValidationError(exc.errors or {"detail": [str(exc)]}) from None
        question.refresh_from_db()
        return Response(GeneratedQuestionSerializer(question).data)


class SendInputSerializer(serializers.Serializer):
    stage = serializers.IntegerField(help_text="A paraphrase_canonical stage of the campaign.")


class SentSerializer(serializers.Serializer):
    sent = serializers.IntegerField()


class CampaignGeneratedQuestionSendApi(APIView):
    """Send the accepted questions to a paraphrasing stage as items (all or none)."""

    @extend_schema(
        request=SendInputSerializer,
        responses={200: SentSerializer, 400: BAD_INPUT, 404: NOT_VISIBLE},
    )
    def post(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        data = validated(SendInputSerializer, request.data)
        stage = campaign.stages.filter(pk=data["stage"]).first()
        if stage is None:
            raise ValidationError({"stage": ["No such stage in this campaign."]})
        try:
            sent = generated_questions_send(campaign=campaign, stage=stage)
        except DomainError as exc:
            raise ValidationError(exc.errors or {"detail": [str(exc)]}) from None
        return Response({"sent": sent})
