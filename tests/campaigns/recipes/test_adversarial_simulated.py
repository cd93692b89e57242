"""The adversarial QA recipe piloted on the local workforce by the crowd simulator,
through the real worker pages: writers ask the model (the built-in baseline) until it is
fooled or their tries run out, claimed fools go to validation, confirmed fools are paid
their bonus once, and the dashboard counts the fooled rate."""

from __future__ import annotations

import pytest

from campaigns.design.services import campaign_create
from campaigns.insights.adversarial import campaign_fooled_rates
from campaigns.models import (
    AdversarialTry,
    Assignment,
    AssignmentStatus,
    Item,
    LedgerEntry,
    LedgerKind,
    ModelCall,
    ModelCallStatus,
)
from campaigns.platforms.publishing import campaign_start
from campaigns.recipes.adversarial_qa import PILOT_PASSAGES
from campaigns.recipes.services import recipe_apply
from campaigns.simulate import simulate_crowd
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.slow(seconds=30)
def test_adversarial_pilot_writes_validates_and_pays_fools_once():
    owner = UserFactory.create(username="owner-adv")
    campaign = campaign_create(owner=owner, name="Beat the model", slug="adv-pilot")
    write, validate = recipe_apply(campaign=campaign, name="adversarial_qa")
    assert write.config["adversarial"]["endpoint"]
    campaign = campaign_start(campaign=campaign, to_state="pilot")

    result = simulate_crowd(
        campaign=campaign, workers=6, seed=3, approve_all=True, shares={"good": 1.0}
    )

    assert result.ok, "\n".join(result.lines())
    assert result.server_errors() == 0
    written = Assignment.objects.filter(hit__stage=write, status=AssignmentStatus.APPROVED)
    assert written.count() == len(PILOT_PASSAGES)
    # Every try was put to the model once, and every call is recorded once.
    tries = AdversarialTry.objects.filter(stage=write)
    assert tries.count() >= len(PILOT_PASSAGES)
    assert ModelCall.objects.filter(stage=write).count() == tries.count()
    assert not ModelCall.objects.exclude(status=ModelCallStatus.DONE).exists()
    assert LedgerEntry.objects.filter(kind=LedgerKind.MODEL_USAGE).count() == tries.count()
    assert all(t.judged_by for t in tries)
    for assignment in written:
        claims = (assignment.answers or {}).get("adversarial", {})
        assert len(claims) == 1
    # Claimed fools went to validation; the verified ones were paid once each.
    fools = tries.filter(fooled=True)
    assert fools.exists()
    assert Item.objects.filter(stage=validate).count() == fools.count()
    verified = tries.filter(verified=True).count()
    assert verified >= 1
    assert LedgerEntry.objects.filter(kind=LedgerKind.BONUS).count() == verified
    rates = campaign_fooled_rates(campaign=campaign)
    assert rates is not None
    assert rates.total.tries == tries.count()
    assert rates.total.fooled == fools.count()
