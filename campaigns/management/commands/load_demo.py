"""Load the demo: a requester ``demo`` and a small Mintaka-style campaign.

Idempotent: what exists is left as it is, and a second run prints exactly what
the first printed. The demo account's password is public (it is printed and
documented), so on a server with ``DEBUG`` off the command warns on stderr.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.urls import reverse
from rest_framework.authtoken.models import Token

from campaigns.design.items import items_upload
from campaigns.design.services import campaign_create, stage_add, stage_link
from campaigns.models import Campaign, CampaignState, InviteLink, Provider, Stage
from campaigns.platforms.publishing import campaign_start
from campaigns.work.invites import invite_create, invite_url

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "demo-requester"
DEMO_EMAIL = "demo@example.org"
CAMPAIGN_SLUG = "mintaka-demo"
CAMPAIGN_NAME = "Mintaka demo"
STAGE_NAME = "Write questions"
LINK_STAGE_NAME = "Link answer entities"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CELLS_FILE = FIXTURES / "mintaka_demo_cells.csv"

STAGE_INSTRUCTIONS = """\
Write questions about the topic that need the given kind of reasoning to answer,
for example a count ("How many ...?"), a comparison ("Which is older, ...?"), a
superlative ("Which is the longest ...?") or a yes/no question. Give the answer
to each question; for count and superlative questions also give the number.
Each question must be answerable from facts, not opinions."""


class Command(BaseCommand):
    help = "Create the demo requester (demo / demo-requester) and the 'Mintaka demo' campaign."

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DEBUG:
            self.stderr.write(
                "warning: the demo account's password is public; "
                "do not leave it on a server others can reach."
            )
        with transaction.atomic():
            user = self._demo_user()
            token, _ = Token.objects.get_or_create(user=user)
            campaign = self._demo_campaign(user)
            stage = self._demo_stage(campaign)
            if not stage.items.exists():
                items_upload(stage=stage, content=CELLS_FILE.read_bytes(), filename=CELLS_FILE.name)
            self._demo_link_stage(campaign, stage)
            if campaign.state == CampaignState.DRAFT:
                campaign = campaign_start(campaign=campaign, to_state=CampaignState.LIVE)
            invite = self._demo_invite(campaign, user)
            item_count = stage.items.count()

        url = settings.SITE_URL.rstrip("/") + reverse(
            "frontend:campaign-detail", kwargs={"slug": campaign.slug}
        )
        self.stdout.write(f"demo requester: login: {DEMO_USERNAME} / password: {DEMO_PASSWORD}")
        self.stdout.write(f"API token: {token.key}")
        self.stdout.write(
            f"campaign: {campaign.name} ({campaign.slug}), stage {stage.name!r} "
            f"with {item_count} items"
        )
        self.stdout.write(f"campaign page: {url}")
        self.stdout.write(
            f"worker invite link (open it in a private window): {invite_url(invite=invite)}"
        )

    def _demo_user(self) -> Any:
        user_model = get_user_model()
        user, created = user_model.objects.get_or_create(
            username=DEMO_USERNAME, defaults={"email": DEMO_EMAIL}
        )
        # Set only when it differs: re-hashing on every run would change the row each time.
        if created or not user.check_password(DEMO_PASSWORD):
            user.set_password(DEMO_PASSWORD)
            user.save(update_fields=["password"])
        return user

    def _demo_campaign(self, user: Any) -> Campaign:
        campaign = Campaign.objects.filter(slug=CAMPAIGN_SLUG).first()
        if campaign is None:
            return campaign_create(
                owner=user,
                name=CAMPAIGN_NAME,
                slug=CAMPAIGN_SLUG,
                description=(
                    "Complex questions by topic and complexity type, after Mintaka "
                    "(Sen et al., COLING 2022)."
                ),
                provider=Provider.LOCAL,
            )
        if campaign.owner_id != user.pk:
            raise CommandError(
                f"A campaign with the slug {CAMPAIGN_SLUG!r} exists and belongs to someone "
                "else; rename it before loading the demo."
            )
        return campaign

    def _demo_stage(self, campaign: Campaign) -> Stage:
        stage = campaign.stages.filter(name=STAGE_NAME).first()
        if stage is not None:
            return stage
        return stage_add(
            campaign=campaign,
            name=STAGE_NAME,
            task_type="question_writing",
            config={"questions_per_hit": 5},
            instructions=STAGE_INSTRUCTIONS,
            reward=Decimal("1.25"),
            assignments_per_hit=1,
            items_per_hit=1,
        )

    def _demo_link_stage(self, campaign: Campaign, first: Stage) -> Stage:
        """Accepted QA pairs flow on to answer linking; yes/no and numbers stay behind."""
        stage = campaign.stages.filter(name=LINK_STAGE_NAME).first()
        if stage is None:
            stage = stage_add(
                campaign=campaign,
                name=LINK_STAGE_NAME,
                task_type="answer_entity_linking",
                instructions="Link each entity in the answer to its Wikidata item.",
                reward=Decimal("0.10"),
                assignments_per_hit=2,
            )
            stage_link(
                stage=first,
                next_stage=stage,
                handoff={"exclude_answer_types": ["boolean", "numeric"]},
            )
        return stage

    def _demo_invite(self, campaign: Campaign, user: Any) -> InviteLink:
        invite = InviteLink.objects.filter(campaign=campaign, revoked_at__isnull=True).first()
        if invite is None:
            invite = invite_create(
                campaign=campaign, created_by=user, expires_in=timedelta(days=365)
            )
        return invite
