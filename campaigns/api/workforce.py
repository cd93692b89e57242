"""Local workforce endpoints: invite links, grants to logged-in annotators, publishing.

Everything hangs off a campaign the user may see (owner, collaborators, staff);
anything else answers 404, exactly as if it did not exist.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.http import Http404
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from campaigns.api.common import (
    BAD_INPUT,
    NOT_VISIBLE,
    DurationSecondsField,
    StrictInputSerializer,
    authenticated_user,
    campaign_or_404,
    campaign_stage_or_400,
    stage_or_404,
    validated,
)
from campaigns.models import InviteLink, LocalGrant
from campaigns.work.invites import (
    MAX_INVITE_LIFETIME,
    invite_create,
    invite_quiz_retake_warning,
    invite_revoke,
    invite_token,
    local_grant_add,
    local_grant_remove,
)
from campaigns.work.publishing import stage_publish
from campaigns.work.selectors.access import WORKABLE_STATES, invite_list
from campaigns.work.selectors.review import invite_list_visible, local_grant_list
from qaportal.errors import StateConflict

DEFAULT_INVITE_LIFETIME = timedelta(days=7)


# --- Invite links ------------------------------------------------------------------------


class InviteOutputSerializer(serializers.ModelSerializer):
    campaign: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    stage: serializers.PrimaryKeyRelatedField[Any] = serializers.PrimaryKeyRelatedField(
        read_only=True, allow_null=True
    )
    created_by = serializers.CharField(source="created_by.username", read_only=True)
    active = serializers.SerializerMethodField(
        help_text="Whether the link still admits new workers (not revoked, expired or used up)."
    )
    token = serializers.SerializerMethodField(help_text="The signed token in the URL.")
    url = serializers.SerializerMethodField(help_text="The absolute URL to send to workers.")

    class Meta:
        model = InviteLink
        fields = [
            "id",
            "campaign",
            "stage",
            "created_by",
            "created_at",
            "expires_at",
            "revoked_at",
            "max_uses",
            "use_count",
            "active",
            "token",
            "url",
        ]
        read_only_fields = fields

    def get_active(self, invite: InviteLink) -> bool:
        return (
            invite.revoked_at is None
            and invite.expires_at > timezone.now()
            and (invite.max_uses is None or invite.use_count < invite.max_uses)
        )

    def _token(self, invite: InviteLink) -> str:
        # The token is signed with a timestamp: made once per invite, so that the
        # ``token`` and ``url`` of one answer agree even across a second boundary.
        tokens: dict[int, str] = self.__dict__.setdefault("_tokens", {})
        if invite.pk not in tokens:
            tokens[invite.pk] = invite_token(invite=invite)
        return tokens[invite.pk]

    def get_token(self, invite: InviteLink) -> str:
        return self._token(invite)

    def get_url(self, invite: InviteLink) -> str:
        path = reverse("worker:invite", kwargs={"token": self._token(invite)})
        return settings.SITE_URL.rstrip("/") + path


class CampaignInviteListCreateApi(generics.ListAPIView):
    """The campaign's invite links, newest first (local campaigns only have any)."""

    serializer_class = InviteOutputSerializer
    filter_backends: list[Any] = []

    class InviteCreateInputSerializer(StrictInputSerializer):
        stage = serializers.IntegerField(
            allow_null=True,
            default=None,
            help_text="Send workers straight to this stage; null: the campaign's first stage.",
        )
        expires_in = DurationSecondsField(
            default=DEFAULT_INVITE_LIFETIME,
            help_text="Lifetime in seconds, at most "
            f"{int(MAX_INVITE_LIFETIME.total_seconds())}; default 7 days.",
        )
        max_uses = serializers.IntegerField(
            min_value=1,
            max_value=1_000_000,
            allow_null=True,
            default=None,
            help_text="How many workers may join through it; null: no limit.",
        )

    def get_queryset(self) -> QuerySet[InviteLink]:
        if getattr(self, "swagger_fake_view", False):
            return InviteLink.objects.none()
        campaign = campaign_or_404(request=self.request, slug=self.kwargs["slug"])
        return invite_list(campaign=campaign).select_related("campaign")

    @extend_schema(
        operation_id="campaigns_invites_create",
        request=InviteCreateInputSerializer,
        responses={201: InviteOutputSerializer, 400: BAD_INPUT, 404: NOT_VISIBLE},
    )
    def post(self, request: Request, slug: str) -> Response:
        """Create an invite link; the answer holds its URL and token."""
        campaign = campaign_or_404(request=request, slug=slug)
        data = validated(self.InviteCreateInputSerializer, request.data)
        stage = campaign_stage_or_400(campaign=campaign, stage_id=data["stage"])
        invite = invite_create(
            campaign=campaign,
            stage=stage,
            created_by=authenticated_user(request),
            expires_in=data["expires_in"],
            max_uses=data["max_uses"],
        )
        body = dict(InviteOutputSerializer(invite).data)
        warning = invite_quiz_retake_warning(invite=invite)
        if warning:
            body["warnings"] = [warning]
        return Response(body, status=status.HTTP_201_CREATED)


class InviteRevokeApi(APIView):
    """Revoke an invite link: nobody joins through it any more, and those who did stop.

    Idempotent: revoking twice keeps the first revocation time.
    """

    @extend_schema(request=None, responses={200: InviteOutputSerializer, 404: NOT_VISIBLE})
    def post(self, request: Request, invite_id: int) -> Response:
        invite = invite_list_visible(user=request.user).filter(pk=invite_id).first()
        if invite is None:
            raise Http404("No invite link with this id.")
        return Response(InviteOutputSerializer(invite_revoke(invite=invite)).data)


# --- Grants to logged-in annotators ----------------------------------------------------


class GrantOutputSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)
    granted_by = serializers.CharField(
        source="granted_by.username", read_only=True, allow_null=True
    )

    class Meta:
        model = LocalGrant
        fields = ["username", "granted_by", "created_at"]
        read_only_fields = fields


class CampaignGrantListCreateApi(generics.ListAPIView):
    """Accounts that may work on the campaign's /work/ pages when logged in."""

    serializer_class = GrantOutputSerializer
    filter_backends: list[Any] = []

    class GrantCreateInputSerializer(StrictInputSerializer):
        username = serializers.CharField(max_length=150)

    def get_queryset(self) -> QuerySet[LocalGrant]:
        if getattr(self, "swagger_fake_view", False):
            return LocalGrant.objects.none()
        campaign = campaign_or_404(request=self.request, slug=self.kwargs["slug"])
        return local_grant_list(campaign=campaign)

    @extend_schema(
        operation_id="campaigns_grants_create",
        request=GrantCreateInputSerializer,
        responses={
            201: GrantOutputSerializer,
            200: OpenApiResponse(GrantOutputSerializer, description="The grant already existed."),
            400: BAD_INPUT,
            404: NOT_VISIBLE,
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        """Grant the campaign to an active account, by username. Idempotent."""
        campaign = campaign_or_404(request=request, slug=slug)
        values = validated(self.GrantCreateInputSerializer, request.data)
        username = values["username"]
        user_model = get_user_model()
        user = user_model.objects.filter(
            **{user_model.USERNAME_FIELD: username, "is_active": True}
        ).first()
        if user is None:
            raise serializers.ValidationError({"username": ["No active account with this name."]})
        existed = LocalGrant.objects.filter(campaign=campaign, user_id=user.pk).exists()
        grant = local_grant_add(
            campaign=campaign, user=user, granted_by=authenticated_user(request)
        )
        grant = local_grant_list(campaign=campaign).get(pk=grant.pk)
        return Response(
            GrantOutputSerializer(grant).data,
            status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED,
        )


class CampaignGrantDetailApi(APIView):
    """One account's grant on the campaign."""

    @extend_schema(
        responses={
            204: None,
            404: OpenApiResponse(description="No such campaign, or that account has no grant."),
        }
    )
    def delete(self, request: Request, slug: str, username: str) -> Response:
        """Withdraw the grant; the account's past work stays."""
        campaign = campaign_or_404(request=request, slug=slug)
        grant = local_grant_list(campaign=campaign).filter(user__username=username).first()
        if grant is None:
            raise Http404("This account has no grant on the campaign.")
        local_grant_remove(campaign=campaign, user=grant.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- Publishing ------------------------------------------------------------------------


class PublishOutputSerializer(serializers.Serializer):
    stage = serializers.IntegerField()
    hits_created = serializers.IntegerField()


class StagePublishApi(APIView):
    """Put the stage's pending items into HITs (on the local provider: open for work at once).

    Use it after uploading items to a campaign that is already running; starting
    the campaign publishes what is there.
    """

    class StagePublishInputSerializer(StrictInputSerializer):
        allow_partial = serializers.BooleanField(
            default=True,
            help_text="Publish a trailing group smaller than items_per_hit as its own HIT.",
        )

    @extend_schema(
        request=StagePublishInputSerializer,
        responses={
            200: PublishOutputSerializer,
            404: NOT_VISIBLE,
            409: OpenApiResponse(description="The campaign is not in pilot or live."),
        },
    )
    def post(self, request: Request, stage_id: int) -> Response:
        stage = stage_or_404(request=request, stage_id=stage_id)
        data = validated(self.StagePublishInputSerializer, request.data)
        campaign = stage.campaign
        if campaign.state not in WORKABLE_STATES:
            raise StateConflict(
                f"The campaign is {campaign.state}; stages are published in pilot or live only.",
                errors={"state": [campaign.state]},
            )
        created = stage_publish(stage=stage, allow_partial=data["allow_partial"])
        return Response({"stage": stage.pk, "hits_created": created})
