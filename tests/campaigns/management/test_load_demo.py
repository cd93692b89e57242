"""manage.py load_demo: the demo requester and campaign, loaded once however often it runs."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command
from rest_framework.authtoken.models import Token

import campaigns
from campaigns.models import Campaign, Item, Stage
from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.question_writing import COMPLEXITY_TYPES
from tests.factories import CampaignFactory, UserFactory

pytestmark = pytest.mark.django_db

FIXTURES = Path(campaigns.__file__).parent / "fixtures"


def run() -> str:
    out = StringIO()
    call_command("load_demo", stdout=out, stderr=StringIO())
    return out.getvalue()


def _counts() -> dict[str, int]:
    return {
        "users": get_user_model().objects.count(),
        "tokens": Token.objects.count(),
        "campaigns": Campaign.objects.count(),
        "stages": Stage.objects.count(),
        "items": Item.objects.count(),
    }


def test_loads_the_demo_requester_and_campaign():
    output = run()
    assert "login: demo / password: demo-requester" in output
    user = authenticate(username="demo", password="demo-requester")
    assert user is not None
    match = re.search(r"token: (\w+)", output)
    assert match, output
    assert Token.objects.get(key=match.group(1)).user == user

    campaign = Campaign.objects.get(slug="mintaka-demo")
    assert (campaign.name, campaign.owner, campaign.provider) == ("Mintaka demo", user, "local")
    assert "/campaigns/mintaka-demo/" in output
    stage, linking = campaign.stages.order_by("position")
    assert stage.task_type == "question_writing"
    assert linking.task_type == "answer_entity_linking"
    assert stage.next_stage == linking
    assert stage.handoff == {"exclude_answer_types": ["boolean", "numeric"]}
    # Live on the local workforce, its HITs published, and a link to work as a worker.
    assert campaign.state == "live"
    assert stage.hits.filter(status="published").count() == stage.items.count()
    invite = re.search(r"invite link.*: (\S+)", output)
    assert invite, output
    assert "/work/i/" in invite.group(1)
    assert stage.reward == Decimal("1.25")
    assert (stage.items_per_hit, stage.assignments_per_hit) == (1, 1)
    assert stage.config == {"questions_per_hit": 5}
    cells = {(i.data["topic"], i.data["complexity_type"]) for i in stage.items.all()}
    assert len(cells) == stage.items.count() >= 8
    assert {"movies", "music", "sports"} <= {topic for topic, _ in cells}
    assert {"count", "comparative", "superlative", "yesno"} <= {kind for _, kind in cells}


def test_second_run_changes_nothing_and_prints_the_same():
    first = run()
    counts = _counts()
    password_hash = get_user_model().objects.get(username="demo").password
    second = run()
    assert second == first
    assert _counts() == counts
    assert get_user_model().objects.get(username="demo").password == password_hash


def test_resets_a_changed_demo_password():
    run()
    demo = get_user_model().objects.get(username="demo")
    demo.set_password("something else entirely")
    demo.save()
    run()
    assert authenticate(username="demo", password="demo-requester") is not None


def test_refuses_a_foreign_campaign_with_the_demo_slug():
    CampaignFactory(slug="mintaka-demo", owner=UserFactory(username="mallory"))
    with pytest.raises(CommandError, match="belongs to someone else"):
        run()


def test_mintaka_sample_is_bundled_with_its_licence():
    rows = [
        json.loads(line)
        for line in (FIXTURES / "mintaka_sample.jsonl").read_text("utf-8").splitlines()
    ]
    assert 30 <= len(rows) <= 50
    keys = {"id", "question", "answer", "complexityType", "category", "questionEntity"}
    assert all(set(row) == keys for row in rows)
    assert len({row["id"] for row in rows}) == len(rows)
    assert {row["complexityType"] for row in rows} <= set(COMPLEXITY_TYPES)
    licence = (FIXTURES / "LICENSE-mintaka.md").read_text("utf-8")
    assert "CC BY 4.0" in licence
    assert "https://github.com/amazon-science/mintaka" in licence


def test_demo_cells_are_valid_question_writing_items():
    task_type = task_type_get("question_writing")
    lines = (FIXTURES / "mintaka_demo_cells.csv").read_text("utf-8").splitlines()
    header, *rows = (line.split(",") for line in lines)
    assert header == ["external_id", "topic", "complexity_type"]
    for _, topic, kind in rows:
        assert task_type.validate_item({"topic": topic, "complexity_type": kind}) == []
