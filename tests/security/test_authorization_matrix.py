"""Who reaches what: every URL of the app (but the admin, which has its own tests),
with every method, as anonymous, as another requester, as a logged-in annotator of
no campaign, as staff, and as the owner.

Alice owns a running campaign with submitted work, an invite, an annotator grant and
a qualification type. Nobody but Alice and staff may see or change any of it: the
others get 401/403/404 (or the login page) and the database is unchanged after all
their requests. Nobody gets a server error. The list of routes is read from the URL
resolver, so a route added later is in the matrix at once; a route must be classed
here (requester, worker page, public) or the test fails.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from campaigns.models import (
    Assignment,
    Campaign,
    HITItem,
    InviteLink,
    Item,
    Job,
    LedgerEntry,
    LocalGrant,
    ModelEndpoint,
    ProviderOperation,
    QualificationType,
    Stage,
    Worker,
    WorkerBlock,
)
from campaigns.work.invites import invite_create, invite_token, local_grant_add
from linking.models import GeneratedQuestion
from tests.factories import UserFactory
from tests.helpers import local_pipeline, submitted_assignment

pytestmark = pytest.mark.django_db

METHODS = ("get", "post", "put", "patch", "delete")

# Reachable without an account (each for its own reason).
PUBLIC = {
    "healthz",  # load balancers
    "livez",  # probes: nothing but "alive"
    "readyz",  # probes: which of database, broker, cache answers
    "metrics",  # aggregates only, behind a token or METRICS_NETWORKS (tests/qaportal)
    "login",
    "admin-login",  # the admin site's login, locked like the login page
    "logout",
    "api-schema",  # the API's shape, no data
    "api-docs",
    "invite",  # a signed invite token is the credential
    "entry",  # Prolific's study URL: identity is a claim, checked against the platform
    "hooks",  # Prolific's webhooks: signed with PROLIFIC_WEBHOOK_SECRET
    "submit",  # MTurk's worker page posts here with a signed token naming the assignment
    "stage",  # the worker pages check the worker session themselves (below)
    "accept",
    "suggest",
}
# Worker pages of one assignment: only its worker's session may act on it.
WORKER_PAGES = {
    "assignment",
    "return",
    "done",
    "adversarial_try",
    "adversarial_mark",
    "adversarial_state",
    "prolific_adversarial_try",
    "prolific_adversarial_mark",
    "prolific_adversarial_state",
}
# The user's own account pages.
ACCOUNT = {"password_change", "password_change_done"}
# Requester pages and API routes that show only what the user may see, never others'.
OWN_LISTS = {
    "campaign-list",
    "api-campaign-list",
    "api-recipe-list",
    "api-recipe-detail",
    "model-endpoints",  # a requester's own model endpoints
    "api-model-endpoint-list",
}
STATE = (
    GeneratedQuestion,
    Campaign,
    Stage,
    Item,
    HITItem,
    Assignment,
    InviteLink,
    Job,
    LocalGrant,
    LedgerEntry,
    ProviderOperation,
    QualificationType,
    Worker,
    WorkerBlock,
)


def _routes(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, str | None, Any]]:
    for p in patterns:
        if isinstance(p, URLResolver):
            if str(p.pattern).startswith("admin/"):
                continue
            yield from _routes(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), p.name, p.pattern


def _finished_job(campaign: Campaign, owner: Any) -> Job:
    """Alice's finished export job, its file in storage (a tmp MEDIA_ROOT)."""
    content = b"a,b\n1,2\n"
    name = default_storage.save("jobs/matrix/export.csv", ContentFile(content))
    return Job.objects.create(
        kind="export",
        campaign=campaign,
        created_by=owner,
        status="done",
        file_name=name,
        download_name="export.csv",
        content_type="text/csv",
        row_count=1,
        byte_count=len(content),
        checksum=hashlib.sha256(content).hexdigest(),
    )


@pytest.fixture
def world(requester, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    campaign, writing, _linking = local_pipeline(requester, slug="alices")
    work = submitted_assignment(writing)
    item = Item.objects.filter(hits=work.hit_id).get()
    invite = invite_create(campaign=campaign, created_by=requester, expires_in=timedelta(days=1))
    annotator = UserFactory.create(username="annie")
    grant = local_grant_add(campaign=campaign, user=annotator, granted_by=requester)
    QualificationType.objects.create(owner=requester, name="Alice's quiz", kind="manual")
    generated = GeneratedQuestion.objects.create(
        campaign=campaign, query={}, query_key="k", sparql="SELECT", canonical_question="Who?"
    )
    values = {
        "slug": campaign.slug,
        "stage_id": writing.pk,
        "fmt": "csv",
        "item_id": item.pk,
        "assignment_id": work.pk,
        "hit_id": work.hit_id,
        "invite_id": invite.pk,
        "grant_id": grant.pk,
        "pseudonym": work.worker.pseudonym,
        "username": "annie",
        "export_format": "jsonl",
        "name": "jsonl",
        "token": invite_token(invite=invite),
        "question_id": generated.pk,
        "try_number": 1,
        "job_id": _finished_job(campaign, requester).pk,
        "endpoint_id": ModelEndpoint.objects.create(
            owner=requester, name="Alice's baseline", kind="baseline_bm25"
        ).pk,
    }
    return campaign, work, values


# Routes that measure one kind of stage and refuse the others with a 400.
STAGE_KIND_ONLY = frozenset({"api-stage-answer-agreement", "api-stage-ten-way"})


# Pages that exist only for campaigns that move money (404 for the local workforce).
PAID_ONLY = frozenset({"chart-spend"})


def _fill(route: str, values: dict[str, Any]) -> str:
    url = "/" + route
    for key, value in values.items():
        for converter in ("slug", "int", "str", "uuid"):
            url = url.replace(f"<{converter}:{key}>", str(value))
    assert "<" not in url, f"no value for a parameter of {route}"
    return url


def _snapshot() -> dict[str, list[tuple]]:
    return {m.__name__: list(m.objects.order_by("pk").values_list()) for m in STATE}


def _clients(requester: User) -> dict[str, Any]:
    bob = UserFactory.create(username="bob")
    mallory = UserFactory.create(username="mallory")
    api_bob = APIClient()
    api_bob.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=bob).key}")
    api_mallory = APIClient()
    api_mallory.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=mallory).key}")
    page_bob, page_mallory = Client(), Client()
    page_bob.force_login(bob)
    page_mallory.force_login(mallory)
    return {
        "anonymous": (Client(), APIClient()),
        "bob": (page_bob, api_bob),
        "annotator of no campaign": (page_mallory, api_mallory),
    }


def _call(client: Any, method: str, url: str) -> Any:
    if isinstance(client, APIClient):
        return getattr(client, method)(url, {}, format="json")
    return getattr(client, method)(url)


def test_every_route_is_classed():
    """A route without a parameter naming one of Alice's objects must be classed above:
    the matrix below can only prove that others cannot reach *her* objects."""
    unclassed = sorted(
        f"{route} ({name})"
        for route, name, _ in _routes(get_resolver().url_patterns)
        if "<" not in route and name not in PUBLIC | OWN_LISTS | ACCOUNT | {"campaign-create"}
    )
    assert not unclassed, f"class these routes in the authorization matrix: {unclassed}"


def test_nobody_else_reaches_alices_campaign(world, requester):
    _campaign, work, values = world
    before = _snapshot()
    clients = _clients(requester)
    seen: list[str] = []
    for route, name, _ in _routes(get_resolver().url_patterns):
        if name in PUBLIC | OWN_LISTS | ACCOUNT or name == "campaign-create":
            continue
        url = _fill(route, values)
        is_api = route.startswith("api/")
        for who, (page, api) in clients.items():
            for method in METHODS:
                response = _call(api if is_api else page, method, url)
                status = response.status_code
                where = f"{method.upper()} {url} as {who}: {status}"
                seen.append(where)
                assert status < 500, where
                if status == 405:
                    continue
                if who == "anonymous" and is_api:
                    assert status in (401, 403), where
                elif status == 302:
                    # The login page, or a worker page sending a stranger back to the start.
                    target = response["Location"]
                    assert "/accounts/login/" in target or name in WORKER_PAGES, where
                    assert "/done/" not in target, where
                else:
                    assert status in (403, 404), where
    assert _snapshot() == before
    work.refresh_from_db()
    assert work.status == "submitted"
    assert len(seen) > 300


def test_own_lists_show_only_ones_own(world, requester):
    campaign, _work, _values = world
    bob = UserFactory.create(username="bob")
    page, api = Client(), APIClient()
    page.force_login(bob)
    api.force_authenticate(bob)
    assert campaign.name not in page.get("/").content.decode()
    assert campaign.slug not in api.get("/api/v1/campaigns/").content.decode()


def test_owner_and_staff_reach_every_get_without_errors(world, requester):
    _campaign, _work, values = world
    staff = UserFactory.create(username="sam", is_staff=True)
    for user in (requester, staff):
        page = Client()
        page.force_login(user)
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
        for route, name, _ in _routes(get_resolver().url_patterns):
            if name in PUBLIC | WORKER_PAGES:
                continue
            url = _fill(route, {**values, "name": "mintaka"} if "recipes" in route else values)
            response = (api if route.startswith("api/") else page).get(url)
            where = f"GET {url} as {user.username}: {response.status_code}"
            # The stage in ``values`` writes questions; measures of answer sentences
            # answer it 400 by design (they are for sentence-selection stages).
            expected: tuple[int, ...] = (200, 302, 405)
            if name in STAGE_KIND_ONLY:
                expected = (200, 302, 405, 400)
            if name in PAID_ONLY:  # the campaign here is the local workforce's
                expected = (404,)
            assert response.status_code in expected, where
