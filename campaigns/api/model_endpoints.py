"""A requester's model endpoints (model in the loop): the key is write-only.

Answers carry ``key_set`` and ``key_hint`` (its last characters), never the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import BAD_INPUT
from campaigns.assist.endpoints import (
    model_endpoint_create,
    model_endpoint_delete,
    model_endpoint_test,
    model_endpoint_update,
)
from campaigns.assist.selectors import model_endpoint_visible, model_endpoints_for
from campaigns.models import ModelEndpoint, ModelEndpointKind

NOT_YOURS = OpenApiResponse(description="No endpoint of yours has this id.")


class ModelEndpointOutputSerializer(serializers.ModelSerializer[ModelEndpoint]):
    key_set = serializers.SerializerMethodField()

    class Meta:
        model = ModelEndpoint
        fields = [
            "id",
            "name",
            "kind",
            "base_url",
            "model",
            "key_set",
            "key_hint",
            *ModelEndpoint.TUNING_FIELDS,
            "created_at",
            "updated_at",
        ]

    def get_key_set(self, endpoint: ModelEndpoint) -> bool:
        return bool(endpoint.key_ciphertext)


def _input(required: bool) -> Any:
    return inline_serializer(
        name="ModelEndpointInput" if required else "ModelEndpointPatch",
        fields={
            "name": serializers.CharField(max_length=120, required=required),
            "kind": serializers.ChoiceField(choices=ModelEndpointKind.choices, required=required),
            "base_url": serializers.URLField(
                required=False, help_text="Ends in /v1, e.g. http://127.0.0.1:8000/v1."
            ),
            "model": serializers.CharField(required=False),
            "api_key": serializers.CharField(
                required=False, write_only=True, help_text='Write-only; "" removes it.'
            ),
            "prompt_templates": serializers.DictField(
                child=serializers.CharField(),
                required=False,
                help_text='Task type name (or "default") to a template with {question} '
                "and {context}.",
            ),
            "timeout_seconds": serializers.DecimalField(
                max_digits=6, decimal_places=2, required=False
            ),
            "concurrency": serializers.IntegerField(required=False),
            "price_in_per_1k": serializers.DecimalField(
                max_digits=12, decimal_places=6, required=False
            ),
            "price_out_per_1k": serializers.DecimalField(
                max_digits=12, decimal_places=6, required=False
            ),
            "currency": serializers.CharField(required=False),
        },
    )


def _values(request: Request) -> dict[str, Any]:
    data = request.data
    if not isinstance(data, Mapping):
        raise serializers.ValidationError({"detail": ["Send the endpoint as an object."]})
    return {name: data.get(name) for name in data.keys()}  # noqa: SIM118 - QueryDict too


def _own_or_404(request: Request, endpoint_id: int) -> ModelEndpoint:
    endpoint = model_endpoint_visible(user=request.user, endpoint_id=endpoint_id)
    if endpoint is None:
        raise Http404
    return endpoint


class ModelEndpointListCreateApi(generics.ListAPIView):
    """Your model endpoints, by name."""

    serializer_class = ModelEndpointOutputSerializer

    def get_queryset(self) -> Any:
        return model_endpoints_for(user=self.request.user)

    @extend_schema(
        request=_input(required=True),
        responses={201: ModelEndpointOutputSerializer, 400: BAD_INPUT},
    )
    def post(self, request: Request) -> Response:
        endpoint = model_endpoint_create(owner=request.user, values=_values(request))
        return Response(
            ModelEndpointOutputSerializer(endpoint).data, status=status.HTTP_201_CREATED
        )


class ModelEndpointDetailApi(APIView):
    """One of your model endpoints."""

    @extend_schema(responses={200: ModelEndpointOutputSerializer, 404: NOT_YOURS})
    def get(self, request: Request, endpoint_id: int) -> Response:
        return Response(ModelEndpointOutputSerializer(_own_or_404(request, endpoint_id)).data)

    @extend_schema(
        request=_input(required=False),
        responses={200: ModelEndpointOutputSerializer, 400: BAD_INPUT, 404: NOT_YOURS},
    )
    def patch(self, request: Request, endpoint_id: int) -> Response:
        endpoint = model_endpoint_update(
            endpoint=_own_or_404(request, endpoint_id), actor=request.user, values=_values(request)
        )
        return Response(ModelEndpointOutputSerializer(endpoint).data)

    @extend_schema(responses={204: None, 400: BAD_INPUT, 404: NOT_YOURS})
    def delete(self, request: Request, endpoint_id: int) -> Response:
        model_endpoint_delete(endpoint=_own_or_404(request, endpoint_id), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ModelEndpointTestApi(APIView):
    """Ask the endpoint one fixed question now, within its timeout; records nothing."""

    @extend_schema(
        request=None,
        responses={
            200: inline_serializer(
                name="ModelEndpointTestOutput",
                fields={
                    "ok": serializers.BooleanField(),
                    "answer": serializers.CharField(),
                    "model_id": serializers.CharField(),
                    "model_version": serializers.CharField(),
                    "error": serializers.CharField(),
                    "seconds": serializers.FloatField(),
                },
            ),
            404: NOT_YOURS,
        },
    )
    def post(self, request: Request, endpoint_id: int) -> Response:
        endpoint = _own_or_404(request, endpoint_id)
        return Response(model_endpoint_test(endpoint=endpoint, actor=request.user))
