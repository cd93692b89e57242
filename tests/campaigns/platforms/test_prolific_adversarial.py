"""Model in the loop on Prolific (issue 38): the participant sees the adversarial panel
on the Prolific work page, asks the model and marks its answer through the Prolific
routes (the participant the session remembers from the entry), and submits only after
asking; another participant's browser, or none, is refused."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from campaigns.assist.endpoints import model_endpoint_create
from campaigns.design.services import campaign_create, campaign_transition, stage_add
from campaigns.models import (
    AdversarialTry,
    Assignment,
    AssignmentStatus,
    CampaignState,
    Item,
    ItemSource,
)
from tests.campaigns.platforms.test_prolific_flow import publish

pytestmark = pytest.mark.django_db

SENTENCES = [
    "The Amazon river flows through Brazil.",
    "Its basin covers seven million square kilometres.",
    "Francisco de Orellana sailed it in 1542.",
]


def _form(question: str, sentence: int) -> dict[str, str]:
    return {"items/0/question": question, "items/0/sentences": str(sentence)}


@pytest.fixture
def adversarial_study(requester, fake):
    campaign = campaign_create(owner=requester, name="Beat the model", slug="beat-prolific")
    campaign.provider = "prolific"
    campaign.currency = "GBP"
    campaign.save(update_fields=["provider", "currency"])
    endpoint = model_endpoint_create(
        owner=requester, values={"name": "bm25", "kind": "baseline_bm25"}
    )
    stage = stage_add(
        campaign=campaign,
        name="Write",
        task_type="adversarial_passage_question",
        config={
            "adversarial": {"endpoint": endpoint.pk, "max_tries": 2, "judge": "worker"},
            "estimated_minutes": 5,
        },
    )
    stage.reward = Decimal("1.00")
    stage.save(update_fields=["reward"])
    for external_id in ("p1", "p2"):  # two HITs: two participants
        Item.objects.create(
            stage=stage,
            external_id=external_id,
            data={"title": "Amazon", "sentences": SENTENCES},
            source=ItemSource.UPLOADED,
        )
    campaign_transition(campaign=campaign, to_state=CampaignState.PILOT)
    stage.refresh_from_db()
    study_id, _codes = publish(stage, fake)
    return stage, study_id


def _enter(client: Client, fake, stage, study_id: str) -> tuple[str, Assignment]:
    session = fake.start_submission(study_id)
    response = client.get(
        "/work/prolific/",
        {
            "PROLIFIC_PID": session["participant"],
            "STUDY_ID": study_id,
            "SESSION_ID": session["id"],
            "qa_stage": stage.pk,
        },
    )
    assert response.status_code == 302, response.content[:500]
    return response["Location"], Assignment.objects.get(provider_assignment_id=session["id"])


def _routes(assignment: Assignment, try_number: int = 1) -> dict[str, str]:
    one = {"assignment_id": assignment.pk}
    numbered = {**one, "try_number": try_number}
    return {
        "try": reverse("worker:prolific_adversarial_try", kwargs=one),
        "mark": reverse("worker:prolific_adversarial_mark", kwargs=numbered),
        "state": reverse("worker:prolific_adversarial_state", kwargs=numbered),
    }


def test_the_adversarial_flow_through_the_prolific_entry(
    adversarial_study, fake, django_capture_on_commit_callbacks
):
    stage, study_id = adversarial_study
    client = Client()
    page, assignment = _enter(client, fake, stage, study_id)
    routes = _routes(assignment)
    html = client.get(page).content.decode()
    assert "Beat the model" in html
    assert f'formaction="{routes["try"]}"' in html

    # Submitting before asking the model is refused, and nothing is stored.
    response = client.post(page, _form("Who sailed the river?", 2))
    assert response.status_code == 400
    assert "Ask the model your question first" in response.content.decode()
    assert Assignment.objects.get(pk=assignment.pk).status == AssignmentStatus.ACCEPTED

    with django_capture_on_commit_callbacks(execute=True):  # the model answers
        response = client.post(routes["try"], _form("Who sailed the river?", 2))
    assert response.status_code == 302
    assert response["Location"] == page
    html = client.get(page).content.decode()
    assert "Is the model's answer right?" in html
    assert f'formaction="{routes["mark"]}"' in html
    assert client.get(routes["state"]).json()["final"]

    response = client.post(routes["mark"], {"model_right": "no"})
    assert response.status_code == 302
    assert response["Location"] == page
    assert AdversarialTry.objects.get().fooled is True

    done = client.post(page, _form("Who sailed the river?", 2))
    assert done.status_code == 302
    assert "app.prolific.com" in done["Location"]
    stored = Assignment.objects.get(pk=assignment.pk)
    assert stored.status == AssignmentStatus.SUBMITTED
    assert isinstance(stored.answers, dict)
    (claim,) = stored.answers["adversarial"].values()
    assert claim["fooled"]


def test_another_participant_or_a_bare_id_is_refused(adversarial_study, fake):
    stage, study_id = adversarial_study
    owner = Client()
    _page, assignment = _enter(owner, fake, stage, study_id)
    owner.post(_routes(assignment)["try"], _form("Who sailed the river?", 2))
    other = Client()
    _enter(other, fake, stage, study_id)  # a participant of the same study, own session
    routes = _routes(assignment)
    for client in (other, Client()):
        assert client.post(routes["try"], _form("Who?", 2)).status_code == 404
        assert client.post(routes["mark"], {"model_right": "no"}).status_code == 404
        assert client.get(routes["state"]).status_code == 404
    assert AdversarialTry.objects.count() == 1
    assert AdversarialTry.objects.get().fooled is None
    # The local routes do not take a Prolific participant's session either.
    local = reverse("worker:adversarial_try", kwargs={"assignment_id": assignment.pk})
    assert owner.post(local, _form("Who?", 2)).status_code == 404
