"""Issue 19, point 11: a plain article becomes WhyQA items: split into numbered
sentences (Mrozinski, Whittaker and Furui, ACL-08: HLT, §3), as the article for
question writing or one answering item per question; page, API and command."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from campaigns.design.services import campaign_create
from campaigns.models import Item
from campaigns.recipes.services import recipe_apply
from campaigns.tasktypes.articles import article_parse, sentences_split

ARTICLE = """Fermi paradox

The Fermi paradox is the contradiction between high estimates of alien life and the
lack of evidence. It is named after Enrico Fermi, who asked "Where is everybody?" in 1950.

## Rare Earth hypothesis
The moon is crucial to the hypothesis. Its gravitational pull creates tides that
stabilize Earth's axis, e.g. against precession. Dr. Ward and Mr. Brownlee proposed it.
- Plate tectonics
- A large moon

== Criticism ==
Critics say the argument is 4.45 times too pessimistic.
"""


def test_sentences_split_keeps_abbreviations_initials_and_numbers():
    assert sentences_split(
        "Formed 4.45 billion years ago. Dr. Smith said so. J. R. R. Tolkien wrote in the "
        'U.S. Army days! Why? "Because." See Fig. 2 e.g. here.'
    ) == [
        "Formed 4.45 billion years ago.",
        "Dr. Smith said so.",
        "J. R. R. Tolkien wrote in the U.S. Army days!",
        "Why?",
        '"Because."',
        "See Fig. 2 e.g. here.",
    ]


def test_article_parse_sections_paragraphs_and_list_items():
    article = article_parse(ARTICLE)
    assert (article["article_id"], article["title"]) == ("fermi-paradox", "Fermi paradox")
    assert [s["header"] for s in article["sections"]] == ["", "Rare Earth hypothesis", "Criticism"]
    intro, rare, criticism = (s["paragraphs"] for s in article["sections"])
    assert len(intro[0]) == 2  # a paragraph over two lines, two sentences
    assert rare == [
        [
            "The moon is crucial to the hypothesis.",
            "Its gravitational pull creates tides that stabilize Earth's axis, e.g. against "
            "precession.",
            "Dr. Ward and Mr. Brownlee proposed it.",
        ],
        ["Plate tectonics"],
        ["A large moon"],
    ]
    assert criticism == [["Critics say the argument is 4.45 times too pessimistic."]]
    with pytest.raises(ValueError, match="no sentence"):
        article_parse("Just a title\n\n")


@pytest.mark.django_db
def test_plain_article_to_items_by_api_page_and_command(requester, token_client, client):
    campaign = campaign_create(owner=requester, name="Why", slug="why-articles")
    _quiz, write, answer, rephrase = recipe_apply(campaign=campaign, name="whyqa", sample=False)
    made = token_client.post(
        f"/api/v1/stages/{write.pk}/articles/", {"text": ARTICLE}, format="json"
    )
    assert made.status_code == 201, made.content
    assert made.json()["sentences"] == 8  # 2 + 3 + 2 list items + 1
    article = Item.objects.get(stage=write, external_id="fermi-paradox")
    assert article.data["sections"][1]["header"] == "Rare Earth hypothesis"

    questions = ["Why is the moon crucial to the rare earth hypothesis?", "Why Fermi?"]
    made = token_client.post(
        f"/api/v1/stages/{answer.pk}/articles/",
        {"text": ARTICLE, "questions": questions},
        format="json",
    )
    assert made.status_code == 201, made.content
    assert made.json()["external_ids"] == ["fermi-paradox/q1", "fermi-paradox/q2"]
    item = Item.objects.get(stage=answer, external_id="fermi-paradox/q1")
    assert item.data["question"] == questions[0]
    assert item.data["sentences"][2] == "The moon is crucial to the hypothesis."
    assert {"sentence": 2, "header": "Rare Earth hypothesis"} in item.data["section_breaks"]
    # No question for an answering stage, a stage that takes no articles, empty text.
    for stage, body in (
        (answer, {"text": ARTICLE, "article_id": "other"}),
        (rephrase, {"text": ARTICLE}),
        (write, {"text": "Title only"}),
    ):
        bad = token_client.post(f"/api/v1/stages/{stage.pk}/articles/", body, format="json")
        assert bad.status_code == 400, bad.content
    # The same article twice: refused, nothing doubled.
    again = token_client.post(f"/api/v1/stages/{write.pk}/articles/", {"text": ARTICLE})
    assert again.status_code == 400
    assert Item.objects.filter(stage=write).count() == 1

    client.force_login(requester)
    page = client.get(f"/campaigns/{campaign.slug}/").content.decode()
    assert f'action="/campaigns/{campaign.slug}/stages/{write.pk}/article/"' in page
    assert f"/stages/{rephrase.pk}/article/" not in page
    client.post(
        f"/campaigns/{campaign.slug}/stages/{write.pk}/article/",
        {"text": ARTICLE, "article_id": "fermi-2"},
    )
    assert Item.objects.filter(stage=write, external_id="fermi-2").exists()

    out = StringIO()
    path = "/tmp/recb-article.txt"
    with open(path, "w", encoding="utf-8") as f:
        f.write(ARTICLE)
    call_command("article_items", str(write.pk), path, "--article-id", "fermi-3", stdout=out)
    assert json.loads(out.getvalue())["items"] == ["fermi-3"]
    with pytest.raises(CommandError, match="does not take articles"):
        call_command("article_items", str(rephrase.pk), path, stdout=StringIO())
