"""Issue 34: ``GET /api/v1/recipes/?provider=prolific`` quotes the pilot a recipe loads
on Prolific at the rewards it loads there, the loaded campaign's own cost estimate."""

from __future__ import annotations

import pytest

from campaigns.recipes.services import campaign_create_with_recipe

pytestmark = pytest.mark.django_db


def test_prolific_pilot_cost_is_what_the_loaded_campaign_estimates(token_client, requester):
    quoted = {
        r["name"]: r["pilot_cost"]
        for r in token_client.get("/api/v1/recipes/?provider=prolific").json()
    }
    campaign = campaign_create_with_recipe(
        owner=requester, name="Nangia", slug="nangia-p", provider="prolific", recipe="nangia"
    )
    estimate = token_client.get(f"/api/v1/campaigns/{campaign.slug}/cost-estimate/").json()
    assert quoted["nangia"]["currency"] == estimate["currency"] == "GBP"
    assert quoted["nangia"]["total"] == estimate["total"]
