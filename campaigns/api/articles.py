"""Upload a plain article to a WhyQA stage: split into numbered sentences, made items."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import stage_or_404, validated
from campaigns.design.articles import MAX_QUESTIONS, article_items_upload


class ArticleInput(serializers.Serializer):
    text = serializers.CharField(
        max_length=settings.ITEM_UPLOAD_MAX_BYTES,
        trim_whitespace=False,
        help_text="The article as plain text: title on the first line, '## Header' lines "
        "start sections, blank lines separate paragraphs.",
    )
    title = serializers.CharField(required=False, allow_blank=True, max_length=300, default="")
    article_id = serializers.CharField(required=False, allow_blank=True, max_length=120, default="")
    questions = serializers.ListField(
        child=serializers.CharField(max_length=2000),
        required=False,
        default=list,
        max_length=MAX_QUESTIONS,
        help_text="For a sentence-selection stage: the questions to answer, one item each.",
    )


class ArticleOutput(serializers.Serializer):
    created = serializers.IntegerField()
    batch = serializers.UUIDField()
    article_id = serializers.CharField()
    title = serializers.CharField()
    sentences = serializers.IntegerField()
    external_ids = serializers.ListField(child=serializers.CharField())


class StageArticleApi(APIView):
    """Split a plain article into sections, paragraphs and numbered sentences and add the
    items the stage takes: the article (why-question writing) or one item per question
    (sentence selection)."""

    @extend_schema(request=ArticleInput, responses={201: ArticleOutput})
    def post(self, request: Request, stage_id: int) -> Response:
        stage = stage_or_404(request=request, stage_id=stage_id)
        data = validated(ArticleInput, request.data)
        made = article_items_upload(stage=stage, **data)
        body = {
            "created": made.upload.created,
            "batch": made.upload.batch,
            "article_id": made.article_id,
            "title": made.title,
            "sentences": made.sentences,
            "external_ids": made.external_ids,
        }
        return Response(ArticleOutput(body).data, status=status.HTTP_201_CREATED)
