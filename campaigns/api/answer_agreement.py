"""WhyQA's answer agreement of a sentence-selection stage (Mrozinski et al., §3.2)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import stage_or_404
from validation.selectors.answers import stage_answer_agreement


class AnswerAgreementOutput(serializers.Serializer):
    """Documentation only: ``AnswerAgreement.as_json`` builds it."""

    questions = serializers.IntegerField(help_text="Answerable questions with 2+ answers.")
    answers = serializers.DictField(help_text="Answers per data set.")
    pairs = serializers.DictField(help_text="Pairs compared per data set.")
    sentence_ids = serializers.DictField(
        help_text="noa_not_included / noa_included: total_average, best_match (Table 3)."
    )
    rouge = serializers.DictField(
        help_text="noa_not_included / noa_included / random: rouge1, rouge2, rougeSU4, "
        "rougeL F-measures (Table 4)."
    )
    paper = serializers.DictField(help_text="The paper's own figures, for comparison.")


class StageAnswerAgreementApi(APIView):
    """Sentence-id overlap (Total Avg, Best Match) and ROUGE-1/2/SU4/L with and without
    No-Answer, and the random baseline, over the stage's answerable questions."""

    @extend_schema(responses={200: AnswerAgreementOutput})
    def get(self, request: Request, stage_id: int) -> Response:
        stage = stage_or_404(request=request, stage_id=stage_id)
        result = stage_answer_agreement(stage=stage)
        if result is None:
            raise ValidationError(
                {"stage": ["Answer agreement is measured on sentence-selection stages."]}
            )
        return Response(result.as_json())
