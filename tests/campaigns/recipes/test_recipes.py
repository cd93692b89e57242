"""Each recipe goes into a draft campaign through the ordinary services, and its cost at
the paper's scale is what the arithmetic says."""

from __future__ import annotations

import json
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from campaigns.design.services import campaign_create
from campaigns.models import Campaign, Item
from campaigns.recipes import RECIPES, recipe_names
from campaigns.recipes.services import recipe_apply, recipe_cost, recipe_paper_cost
from qaportal.errors import DomainError, StateConflict

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("name", recipe_names())
def test_every_recipe_applies_with_its_sample(requester, name):
    recipe = RECIPES[name]
    campaign = campaign_create(owner=requester, name=recipe.title, slug=f"r-{name}")
    stages = recipe_apply(campaign=campaign, name=name, scale="paper")
    assert [s.name for s in stages] == [spec.name for spec in recipe.stages]
    for stage, spec in zip(stages, recipe.stages, strict=True):
        assert stage.task_type == spec.task_type
        assert stage.reward == spec.reward
        assert stage.assignments_per_hit == spec.assignments_per_hit
        fed = stage.next_stage.name if stage.next_stage else None
        assert fed == spec.feeds
        assert Item.objects.filter(stage=stage).count() == len(
            recipe.sample_items.get(spec.name, [])
        )
    campaign.refresh_from_db()
    assert campaign.recipe == name


def test_a_recipe_needs_an_empty_draft_and_a_known_name(requester):
    campaign = campaign_create(owner=requester, name="M", slug="m")
    recipe_apply(campaign=campaign, name="mintaka", sample=False)
    with pytest.raises(StateConflict):
        recipe_apply(campaign=campaign, name="whyqa")
    assert campaign.stages.count() == 4
    other = campaign_create(owner=requester, name="N", slug="n")
    with pytest.raises(DomainError, match="No recipe 'squad'"):
        recipe_apply(campaign=other, name="squad")
    assert not other.stages.exists()


def test_mintaka_at_the_papers_scale_on_mturk():
    cost = recipe_paper_cost(name="mintaka", provider="mturk")
    write, link_answers, link_questions, translate = cost.stages
    # §3: 8 topics x (8 types x 250 + 500 generic) = 20,000 questions, 5 per HIT:
    # 80 writing items (generic cells have two) x 50 workers = 4,000 HITs at $1.25;
    # MTurk: 20 % + 20 % for HITs of 10+ assignments.
    assert (write.items, write.assignments) == (80, 4000)
    assert write.rewards == Decimal("5000.00")
    assert write.fees == Decimal("2000.00")
    # 4 of 5 questions go on to answer linking (yes/no and values stay behind), 2 each.
    assert link_answers.items == 4000 * 4
    assert link_answers.assignments == 2 * 4000 * 4
    assert link_answers.rewards == Decimal("0.10") * 2 * 4000 * 4
    # Every question is linked (§4.3), one place each to start (seen ones keep it).
    assert (link_questions.items, link_questions.assignments) == (20_000, 20_000)
    assert cost.total == sum(c.total for c in cost.stages)
    assert cost.currency == "USD"
    assert translate.rewards == 0


def test_mintaka_quotas_per_cell_are_the_papers():
    """§3: per topic 250 questions of each complexity type and 500 generic; the
    release's category names (``videogames``)."""
    from campaigns.recipes.mintaka import PAPER_QUOTAS, QUESTIONS_PER_HIT, WORKERS_PER_ITEM

    rows = RECIPES["mintaka"].sample_items["Write questions"]
    spec = RECIPES["mintaka"].stage("Write questions")
    per_cell: dict[tuple[str, str], int] = {}
    for row in rows:
        key = (row["topic"], row["complexity_type"])
        per_cell[key] = per_cell.get(key, 0) + spec.assignments_per_hit * QUESTIONS_PER_HIT
    assert {t for t, _ in per_cell} == {
        "movies", "music", "sports", "books", "geography", "politics", "videogames", "history"
    }  # fmt: skip
    assert all(n == 250 for (_, c), n in per_cell.items() if c != "generic")
    assert all(n == 500 for (_, c), n in per_cell.items() if c == "generic")
    assert sum(per_cell.values()) == 20_000
    assert PAPER_QUOTAS["generic"] == 500
    assert spec.assignments_per_hit == WORKERS_PER_ITEM


def test_load_recipe_command_creates_and_reports(requester):
    out = StringIO()
    call_command(
        "load_recipe", "graphquestions", "--campaign", "gq", "--owner", "alice", stdout=out
    )
    summary = json.loads(out.getvalue())
    assert summary["campaign"] == "gq"
    assert summary["stages"] == [
        {
            "name": "Paraphrase canonical questions",
            "task_type": "paraphrase_canonical",
            "items": 4,
            "reward": "0.25",
            "estimated_minutes": 2,
        }
    ]
    assert (
        Decimal(summary["paper_cost"]["total"])
        == recipe_paper_cost(name="graphquestions", provider="local").total
    )
    assert Campaign.objects.get(slug="gq").owner == requester
    with pytest.raises(CommandError, match="draft campaign without stages"):
        call_command("load_recipe", "mintaka", "--campaign", "gq", stdout=StringIO())
    with pytest.raises(CommandError, match="give --owner"):
        call_command("load_recipe", "mintaka", "--campaign", "nope", stdout=StringIO())


def test_recipes_api_lists_stages_sources_and_paper_cost(token_client, api_client):
    assert api_client.get("/api/v1/recipes/").status_code == 401
    response = token_client.get("/api/v1/recipes/")
    assert response.status_code == 200
    by_name = {r["name"]: r for r in response.json()}
    assert set(by_name) == {"adversarial_qa", "graphquestions", "mintaka", "nangia", "whyqa"}
    mintaka = by_name["mintaka"]
    assert mintaka["stages"][0]["reward"] == "1.25"
    assert "§4.1" in mintaka["stages"][0]["source"]
    expected = recipe_paper_cost(name="mintaka", provider="mturk")
    assert mintaka["paper_cost"]["total"] == str(expected.total)
    on_prolific = token_client.get("/api/v1/recipes/whyqa/?provider=prolific").json()
    assert on_prolific["paper_cost"]["currency"] == "GBP"
    assert token_client.get("/api/v1/recipes/squad/").status_code == 404
    bad = token_client.get("/api/v1/recipes/?provider=amazon")
    assert bad.status_code == 400
    assert "provider" in bad.json()


def test_campaign_created_from_a_recipe_through_api_and_page(token_client, client, requester):
    response = token_client.post(
        "/api/v1/campaigns/",
        {"name": "Why", "slug": "why", "recipe": "whyqa", "sample": False},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["recipe"] == "whyqa"
    why = Campaign.objects.get(slug="why")
    assert why.stages.count() == 4
    assert not Item.objects.filter(stage__campaign=why).exists()
    bad = token_client.post("/api/v1/campaigns/", {"name": "X", "recipe": "squad"}, format="json")
    assert bad.status_code == 400
    assert "recipe" in bad.json()

    client.force_login(requester)
    page = client.post(
        "/campaigns/new/",
        {"name": "Mintaka 2", "provider": "local", "recipe": "mintaka", "sample": "on"},
    )
    assert page.status_code == 302
    made = Campaign.objects.get(name="Mintaka 2")
    assert made.recipe == "mintaka"
    assert Item.objects.filter(stage__campaign=made).count() == 80


@pytest.mark.parametrize("name", recipe_names())
def test_a_recipe_loads_as_a_pilot_unless_the_papers_size_is_asked_for(requester, name):
    """Issue 19, point 19: loading gives a small pilot at a stated cost; the paper's
    sizes are one explicit ``scale="paper"`` away."""
    recipe = RECIPES[name]
    assert recipe.pilot_scale
    pilot_cost = recipe_cost(name=name, provider="mturk", scale="pilot")
    paper_cost = recipe_cost(name=name, provider="mturk", scale="paper")
    assert pilot_cost.total < paper_cost.total / 5
    campaign = campaign_create(owner=requester, name=recipe.title, slug=f"p-{name}")
    stages = recipe_apply(campaign=campaign, name=name)
    shrunk = 0
    for stage, spec in zip(stages, recipe.stages, strict=True):
        assert stage.assignments_per_hit == spec.at("pilot").assignments_per_hit
        shrunk += stage.assignments_per_hit < spec.assignments_per_hit
    assert shrunk or any(s.pilot_items is not None for s in recipe.stages)
    with pytest.raises(DomainError, match="pilot"):
        recipe_apply(campaign=campaign_create(owner=requester, name="x"), name=name, scale="huge")


def test_recipe_scales_in_the_api_and_the_page(token_client, client, requester):
    whyqa = token_client.get("/api/v1/recipes/whyqa/").json()
    assert whyqa["pilot_cost"]["scale"] == "pilot"
    assert whyqa["paper_cost"]["scale"] == "paper"
    assert Decimal(whyqa["pilot_cost"]["total"]) < Decimal(whyqa["paper_cost"]["total"])
    assert whyqa["stages"][0]["pilot"] == {"assignments_per_hit": 20}
    made = token_client.post(
        "/api/v1/campaigns/",
        {"name": "Why", "slug": "why-paper", "recipe": "whyqa", "scale": "paper"},
        format="json",
    )
    assert made.status_code == 201, made.content
    quiz = Campaign.objects.get(slug="why-paper").stages.order_by("position").first()
    assert quiz is not None
    assert quiz.assignments_per_hit == 2355
    bad = token_client.post(
        "/api/v1/campaigns/", {"name": "X", "recipe": "whyqa", "scale": "huge"}, format="json"
    )
    assert bad.status_code == 400
    assert "scale" in bad.json()
    client.force_login(requester)
    page = client.get("/")
    assert b'id="recipe-scales"' in page.content
    assert b"Pilot: a few HITs per cell" in page.content
    client.post(
        "/campaigns/new/",
        {"name": "Why paper", "provider": "local", "recipe": "whyqa", "scale": "paper"},
    )
    quiz = Campaign.objects.get(name="Why paper").stages.order_by("position").first()
    assert quiz is not None
    assert quiz.assignments_per_hit == 2355


def test_each_recipe_stage_says_who_approves(token_client):
    """Issue 19, point 21: every stage names what approves its work."""
    for recipe in token_client.get("/api/v1/recipes/").json():
        for stage in recipe["stages"]:
            assert stage["approval"].startswith(("rule: ", "person")), stage
    mintaka = token_client.get("/api/v1/recipes/mintaka/").json()
    assert mintaka["stages"][0]["approval"].startswith("person")  # duplicates only looks


def test_load_recipe_takes_a_name_for_a_second_campaign_of_one_recipe(requester):
    """Issue 35, point 13: a campaign's name is unique per owner, so a second campaign of
    one recipe needs ``--name``; without it the refusal says so."""
    call_command(
        "load_recipe", "nangia", "--campaign", "ng-1", "--owner", "alice", stdout=StringIO()
    )
    with pytest.raises(CommandError, match="--name"):
        call_command(
            "load_recipe", "nangia", "--campaign", "ng-2", "--owner", "alice", stdout=StringIO()
        )
    assert not Campaign.objects.filter(slug="ng-2").exists()
    out = StringIO()
    call_command(
        "load_recipe",
        "nangia",
        "--campaign",
        "ng-2",
        "--owner",
        "alice",
        "--name",
        "Nangia, second run",
        stdout=out,
    )
    second = Campaign.objects.get(slug="ng-2")
    assert (second.name, second.recipe, second.owner) == ("Nangia, second run", "nangia", requester)
    assert json.loads(out.getvalue())["campaign"] == "ng-2"
    with pytest.raises(CommandError, match="only applies to a campaign this command creates"):
        call_command(
            "load_recipe", "whyqa", "--campaign", "ng-2", "--name", "Other", stdout=StringIO()
        )
