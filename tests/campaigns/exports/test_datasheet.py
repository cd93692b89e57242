"""The datasheet: pre-filled with Gebru et al.'s questions and the campaign's records,
the requester's answers marked; edited on its page, kept with the campaign and put in
the ``hf`` export."""

from __future__ import annotations

from typing import cast

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from campaigns.exports.card_facts import campaign_facts
from campaigns.exports.datasheet import TO_ANSWER, datasheet_prefill
from campaigns.exports.hf import hf_folder_write
from campaigns.models import Datasheet
from tests.campaigns.exports.test_hf_export import agreed  # noqa: F401 - the fixture
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _owner(stage) -> Client:
    client = Client()
    client.force_login(stage.campaign.owner)
    return client


def test_prefill_answers_from_records_and_marks_the_rest(agreed):  # noqa: F811
    text = datasheet_prefill(facts=campaign_facts(campaign=agreed.campaign))
    for section in ("Motivation", "Composition", "Collection process", "Uses", "Maintenance"):
        assert f"## {section}" in text
    assert "20.00 USD/h" in text  # the stage's effective hourly wage
    assert "3 crowd workers" in text
    assert text.count(TO_ANSWER) >= 10
    assert "**Were any ethical review processes conducted?**\n" + TO_ANSWER in text


def test_page_edits_and_the_export_includes_it(agreed, tmp_path):  # noqa: F811
    campaign = agreed.campaign
    client = _owner(agreed)
    url = reverse("frontend:campaign-datasheet", args=[campaign.slug])
    page = client.get(url).content.decode()
    assert "Not saved yet" in page
    assert "still to answer" in page
    assert "[TO ANSWER]" in page

    text = "# Datasheet\n\n**Who funded it?** The Example Foundation.\n"
    response = client.post(url, {"text": text, "save": ""})
    assert response.status_code == 302
    sheet = Datasheet.objects.get(campaign=campaign)
    assert sheet.text == text
    assert sheet.updated_by == campaign.owner
    page = client.get(url).content.decode()
    assert "No question left to answer" in page

    hf_folder_write(campaign=campaign, target=tmp_path)
    assert (tmp_path / "datasheet.md").read_text() == text
    assert "The Example Foundation." in (tmp_path / "README.md").read_text()

    assert client.post(url, {"text": "   ", "save": ""}).status_code == 400
    assert Datasheet.objects.get(campaign=campaign).text == text
    assert client.post(url, {"text": "x" * 100_001}).status_code == 400

    assert client.post(url, {"reset": ""}).status_code == 302
    assert not Datasheet.objects.filter(campaign=campaign).exists()


def test_others_cannot_see_or_edit(agreed):  # noqa: F811
    campaign = agreed.campaign
    stranger = Client()
    stranger.force_login(cast(User, UserFactory(username="mallory")))
    url = reverse("frontend:campaign-datasheet", args=[campaign.slug])
    assert stranger.get(url).status_code == 404
    assert stranger.post(url, {"text": "mine now"}).status_code == 404
    assert not Datasheet.objects.exists()
    assert Client().get(url).status_code == 302  # to the login page
