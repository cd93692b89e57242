"""Entity-link review endpoints: the queue of a campaign's entity-link items its
annotators could not settle (each link with its id's label), and the requester's
decision on one of them. Who may see what is as in ``campaigns.api.review``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import (
    BAD_INPUT,
    NOT_VISIBLE,
    StrictInputSerializer,
    authenticated_user,
    campaign_or_404,
    campaign_stage_or_400,
    validated,
)
from campaigns.api.review import ItemBriefSerializer
from campaigns.design.selectors import campaign_list_visible
from campaigns.models import Item
from campaigns.tasktypes import task_type_names
from linking.models import EntityLinkResolution
from linking.selectors import annotation_links, entity_labels, link_review_queue
from linking.services import entity_link_decide


class LinkSerializer(serializers.Serializer):
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    text = serializers.CharField()
    qid = serializers.CharField(allow_null=True, required=False)
    none = serializers.BooleanField(required=False, help_text="Not in Wikidata.")


class LabelledLinkSerializer(LinkSerializer):
    def get_fields(self) -> dict[str, serializers.Field]:
        # Added here: a declared field named "label" would shadow ``Field.label``.
        fields = super().get_fields()
        fields["label"] = serializers.CharField(
            default="",
            help_text="The id's label from the Wikidata cache or the bundled offline "
            "index; empty when neither knows it (the API never waits on Wikidata).",
        )
        return fields


class LinkAnnotationSerializer(serializers.Serializer):
    assignment_id = serializers.IntegerField()
    worker = serializers.CharField(help_text="The annotator's pseudonym.")
    links = LabelledLinkSerializer(many=True)


class LinkReviewEntrySerializer(serializers.Serializer):
    item = ItemBriefSerializer()
    stage = serializers.IntegerField()
    stage_name = serializers.CharField()
    annotations = LinkAnnotationSerializer(many=True)


class LinkResolutionOutputSerializer(serializers.Serializer):
    item = serializers.IntegerField(source="item_id")
    external_id = serializers.CharField(source="item.external_id")
    stage = serializers.IntegerField(source="stage_id")
    status = serializers.CharField()
    links = LinkSerializer(many=True)
    decided_by = serializers.CharField(source="decided_by.username", allow_null=True, default=None)

    def get_fields(self) -> dict[str, serializers.Field]:
        # Added here: a declared field named "source" would shadow ``Field.source``.
        fields = super().get_fields()
        fields["source"] = serializers.CharField(help_text='"requester" or "agreement".')
        return fields


class CampaignLinkReviewApi(APIView):
    """Entity-link items of the campaign its annotators could not settle (up to the
    stage's maximum of annotators), oldest first, with each annotator's links."""

    class LinkReviewFilterSerializer(serializers.Serializer):
        stage = serializers.IntegerField(required=False, help_text="A stage of this campaign.")

    @extend_schema(
        parameters=[LinkReviewFilterSerializer],
        responses={200: LinkReviewEntrySerializer(many=True), 400: BAD_INPUT, 404: NOT_VISIBLE},
    )
    def get(self, request: Request, slug: str) -> Response:
        campaign = campaign_or_404(request=request, slug=slug)
        filters = validated(self.LinkReviewFilterSerializer, request.query_params)
        stage = campaign_stage_or_400(campaign=campaign, stage_id=filters.get("stage"))
        queue = link_review_queue(campaign=campaign, stage=stage)
        labels = entity_labels(
            qids={
                str(link["qid"])
                for entry in queue
                for annotation in entry["annotations"]
                for link in annotation["links"]
                if isinstance(link, Mapping) and link.get("qid")
            }
        )
        entries = [
            {
                "item": {
                    "id": entry["item"].pk,
                    "external_id": entry["item"].external_id,
                    "data": entry["item"].data,
                },
                "stage": entry["stage"].pk,
                "stage_name": entry["stage"].name,
                "annotations": [
                    {
                        **annotation,
                        "links": [
                            {**link, "label": labels.get(str(link.get("qid") or ""), "")}
                            for link in annotation["links"]
                            if isinstance(link, Mapping)
                        ],
                    }
                    for annotation in entry["annotations"]
                ],
            }
            for entry in queue
        ]
        return Response(LinkReviewEntrySerializer(entries, many=True).data)


class LinkReviewDecideApi(APIView):
    """Settle an entity-link item: the links of one annotation (``assignment``) or
    ``links`` given here, validated as a worker's answer. Deciding again replaces the
    decision."""

    class LinkDecideInputSerializer(StrictInputSerializer):
        assignment = serializers.IntegerField(
            required=False, help_text="Take this annotation's links."
        )
        links = serializers.ListField(
            child=serializers.DictField(),
            required=False,
            help_text="Links (start, end, text, qid or none) instead of an annotation's.",
        )

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            if ("assignment" in attrs) == ("links" in attrs):
                raise serializers.ValidationError(
                    {"non_field_errors": ["Give either assignment or links."]}
                )
            return attrs

    @extend_schema(
        request=LinkDecideInputSerializer,
        responses={200: LinkResolutionOutputSerializer, 400: BAD_INPUT, 404: NOT_VISIBLE},
    )
    def post(self, request: Request, item_id: int) -> Response:
        item = (
            Item.objects.filter(
                pk=item_id,
                stage__campaign__in=campaign_list_visible(user=request.user),
                stage__task_type__in=task_type_names(links_entities=True),
            )
            .select_related("stage")
            .first()
        )
        if item is None:
            raise Http404("No linking item with this id.")
        data = validated(self.LinkDecideInputSerializer, request.data)
        if "assignment" in data:
            links = annotation_links(item=item, assignment_id=data["assignment"])
            if links is None:
                raise serializers.ValidationError(
                    {"assignment": ["No annotation of this item with this id."]}
                )
        else:
            links = list(data["links"])
        resolution = entity_link_decide(
            item=item, links=links, decided_by=authenticated_user(request)
        )
        fresh = EntityLinkResolution.objects.select_related("item", "decided_by").get(
            pk=resolution.pk
        )
        return Response(LinkResolutionOutputSerializer(fresh).data)
