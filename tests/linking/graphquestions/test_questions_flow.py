"""Generated questions in a campaign: the command stores proposals (no duplicate on a
second run), the requester edits, accepts and rejects them on the page and through the
API, and the accepted ones become paraphrasing items carrying their characteristics;
the SPARQL endpoint back end follows the Query Service's etiquette (429 + Retry-After)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from pathlib import Path
from typing import cast
from urllib.parse import parse_qs

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.urls import reverse

from campaigns.design.services import campaign_create, stage_add
from campaigns.models import Item, ItemSource
from linking.graphquestions.generate import Spec, query_answers
from linking.graphquestions.kb import (
    KnowledgeBaseError,
    RDFFileKnowledgeBase,
    SparqlEndpointKnowledgeBase,
)
from linking.graphquestions.query import GraphQuery
from linking.graphquestions.services import generated_questions_decide, generated_questions_propose
from linking.models import GeneratedQuestion
from tests.factories import UserFactory
from tests.helpers import FakeTerminal, progress_lines

pytestmark = pytest.mark.django_db

TTL = Path(__file__).parent / "people.ttl"
PERSON = "http://example.org/Person"


@pytest.fixture
def campaign(requester):
    campaign = campaign_create(owner=requester, name="KB questions", slug="kbq")
    stage_add(campaign=campaign, name="Paraphrase", task_type="paraphrase_canonical")
    return campaign


def _generate(campaign, stderr=None, **kw):
    out = StringIO()
    call_command(
        "generate_questions",
        "--campaign",
        campaign.slug,
        "--rdf",
        str(TTL),
        "--classes",
        PERSON,
        "--count",
        "5",
        "--seed",
        "2",
        *[f"--{k.replace('_', '-')}={v}" for k, v in kw.items()],
        stdout=out,
        stderr=stderr or StringIO(),
    )
    return json.loads(out.getvalue())


def test_command_shows_progress_on_a_terminal_only(campaign):
    terminal, logged = FakeTerminal(), StringIO()
    found = _generate(campaign, stderr=terminal)["generated"]
    drawn = progress_lines(terminal)
    assert drawn[0].startswith("generate questions [")
    assert f"{found}/5 questions" in drawn[-1]
    _generate(campaign, stderr=logged)
    assert logged.getvalue() == ""


def test_command_stores_proposals_once(campaign):
    first = _generate(campaign)
    assert first["generated"] >= 1
    stored = list(GeneratedQuestion.objects.filter(campaign=campaign))
    assert len(stored) == first["generated"]
    kb = RDFFileKnowledgeBase(TTL)
    for q in stored:
        assert query_answers(kb=kb, query=GraphQuery.from_dict(q.query)) == q.answers
        assert q.status == "proposed"
    again = _generate(campaign)
    assert GeneratedQuestion.objects.filter(campaign=campaign).count() == len(stored)
    assert [q["id"] for q in again["questions"]] == [q.pk for q in stored][
        : len(again["questions"])
    ]
    count = _generate(campaign, function="count", edges="1-2")
    assert all(q["characteristics"]["function"] == "count" for q in count["questions"])


def test_command_refuses_bad_input(campaign):
    with pytest.raises(CommandError, match="No campaign"):
        call_command("generate_questions", "--campaign", "nope", "--rdf", str(TTL))
    with pytest.raises(CommandError, match="not a range"):
        call_command(
            "generate_questions", "--campaign", campaign.slug, "--rdf", str(TTL), "--edges", "3-1"
        )
    with pytest.raises(CommandError, match="Cannot read the RDF file"):
        call_command("generate_questions", "--campaign", campaign.slug, "--rdf", "/nonexistent.ttl")


def test_page_edit_accept_reject_and_send(campaign, alice_client):
    stored = generated_questions_propose(
        campaign=campaign,
        kb=RDFFileKnowledgeBase(TTL),
        spec=Spec(classes=(PERSON,)),
        count=3,
        seed=4,
    )
    assert len(stored) >= 2
    keep, drop = stored[0], stored[1]
    url = reverse("frontend:generated-questions", kwargs={"slug": campaign.slug})
    page = alice_client.get(url).content.decode()
    assert keep.canonical_question.replace("'", "&#x27;") in page
    act = reverse(
        "frontend:generated-question-act", kwargs={"slug": campaign.slug, "question_id": keep.pk}
    )
    alice_client.post(
        act, {"canonical_question": "Who is <b>Carl</b>'s child?", "decision": "accept"}
    )
    drop_url = reverse(
        "frontend:generated-question-act", kwargs={"slug": campaign.slug, "question_id": drop.pk}
    )
    alice_client.post(drop_url, {"decision": "reject"})
    keep.refresh_from_db()
    drop.refresh_from_db()
    # GraphQuestions §7.1: one check is not enough; a second person's makes it sendable.
    assert (keep.status, keep.canonical_question) == ("proposed", "Who is <b>Carl</b>'s child?")
    assert "checked by 1 of 2 people" in alice_client.get(url).content.decode()
    generated_questions_decide(
        questions=[keep], accept=True, user=cast(User, UserFactory(username="carol"))
    )
    keep.refresh_from_db()
    assert keep.status == "accepted"
    assert drop.status == "rejected"
    assert "<b>Carl</b>" not in alice_client.get(url).content.decode()

    stage = campaign.stages.get()
    alice_client.post(
        reverse("frontend:generated-questions-send", kwargs={"slug": campaign.slug}),
        {"stage": stage.pk},
    )
    item = Item.objects.get(stage=stage)
    assert item.source == ItemSource.GENERATED
    assert item.data["canonical_question"] == "Who is <b>Carl</b>'s child?"
    assert item.data["characteristics"]["edges"] == keep.characteristics["edges"]
    assert item.data["characteristics"]["function"] == keep.characteristics["function"]
    assert item.data["sparql"] == keep.sparql
    keep.refresh_from_db()
    assert (keep.status, keep.item_id) == ("sent", item.pk)
    # Sending again sends nothing more.
    alice_client.post(
        reverse("frontend:generated-questions-send", kwargs={"slug": campaign.slug}),
        {"stage": stage.pk},
    )
    assert Item.objects.filter(stage=stage).count() == 1


def test_api_generate_list_patch_send(campaign, token_client, other_requester):
    base = f"/api/v1/campaigns/{campaign.slug}/generated-questions/"
    made = token_client.post(
        base,
        {
            "rdf_turtle": TTL.read_text(),
            "classes": [PERSON],
            "function": "count",
            "count": 3,
            "seed": 1,
        },
        format="json",
    )
    assert made.status_code == 201, made.content
    ids = [q["id"] for q in made.json()]
    assert ids
    assert all(q["characteristics"]["function"] == "count" for q in made.json())
    listed = token_client.get(base + "?status=proposed").json()
    assert [q["id"] for q in listed["results"]] == ids
    patched = token_client.patch(
        f"/api/v1/generated-questions/{ids[0]}/",
        {"status": "accepted", "canonical_question": "How many?"},
        format="json",
    )
    assert patched.json()["status"] == "proposed"
    assert len(patched.json()["checks"]) == 1
    stage = campaign.stages.get()
    assert token_client.post(base + "send/", {"stage": stage.pk}, format="json").json() == {
        "sent": 0
    }
    generated_questions_decide(
        questions=GeneratedQuestion.objects.filter(pk=ids[0]),
        accept=True,
        user=other_requester,
    )
    sent = token_client.post(base + "send/", {"stage": stage.pk}, format="json")
    assert sent.json() == {"sent": 1}

    assert token_client.post(base, {"classes": [PERSON]}, format="json").status_code == 400
    bad = token_client.post(base, {"endpoint": "http://169.254.169.254/latest"}, format="json")
    assert bad.status_code == 400
    assert "endpoint" in bad.json()
    broken = token_client.post(base, {"rdf_turtle": "@prefix broken"}, format="json")
    assert broken.status_code == 400
    assert "knowledge_base" in broken.json()
    assert (
        token_client.patch(
            f"/api/v1/generated-questions/{ids[0]}/", {"status": "rejected"}, format="json"
        ).status_code
        == 400
    )
    from rest_framework.test import APIClient

    bob = APIClient()
    bob.force_authenticate(other_requester)
    assert bob.get(base).status_code == 404
    assert bob.get(f"/api/v1/generated-questions/{ids[0]}/").status_code == 404


class _Endpoint(BaseHTTPRequestHandler):
    """A SPARQL 1.1 endpoint answering from the test graph; the first request of each
    query gets 429 with Retry-After."""

    graph = RDFFileKnowledgeBase(TTL)
    seen: list[dict[str, str]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        query = parse_qs(self.rfile.read(length).decode())["query"][0]
        self.seen.append({"ua": self.headers.get("User-Agent", ""), "query": query})
        if sum(1 for s in self.seen if s["query"] == query) == 1:
            self.send_response(429)
            self.send_header("Retry-After", "0.05")
            self.end_headers()
            return
        rows = self.graph.select(query)
        names = sorted({k for r in rows for k in r})
        body = {
            "head": {"vars": names},
            "results": {
                "bindings": [
                    {k: {"type": "literal", "value": v} for k, v in r.items()} for r in rows
                ]
            },
        }
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/sparql-results+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        return


def test_sparql_endpoint_honours_retry_after_and_user_agent():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/sparql"
        kb = SparqlEndpointKnowledgeBase(url, user_agent="qaportal-tests/1.0 (ops@example.org)")
        rows = kb.select(
            "SELECT ?s WHERE { ?s <http://example.org/parent> <http://example.org/Carl> }"
        )
        assert sorted(r["s"] for r in rows) == [
            "http://example.org/Dora",
            "http://example.org/Fay",
            "http://example.org/Gus",
        ]
        assert len(_Endpoint.seen) == 2  # a 429, then the answer
        assert all(s["ua"] == "qaportal-tests/1.0 (ops@example.org)" for s in _Endpoint.seen)
        with pytest.raises(KnowledgeBaseError, match="User-Agent"):
            SparqlEndpointKnowledgeBase(url, user_agent=" ")
    finally:
        server.shutdown()
