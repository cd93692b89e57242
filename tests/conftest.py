from __future__ import annotations

import os

import pytest
from django.core.servers.basehttp import WSGIRequestHandler
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.factories import UserFactory
from tests.liveserver import live_server_start

# Live servers (``live_server``, browser tests) answer with TCP_NODELAY, as gunicorn
# does: wsgiref writes a response's headers and body in two sends, and with Nagle's
# algorithm on, the body waits for the client's delayed ACK of the headers (40 ms on
# Linux loopback), which made the API fuzz test, thousands of small requests, wait
# most of its time. (The fuzz test closes each connection after its answer: a request
# whose body the dev server left unread must not be read as the next request.)
WSGIRequestHandler.disable_nagle_algorithm = True


@pytest.fixture(scope="session")
def live_server(request: pytest.FixtureRequest, django_db_setup: None):
    """pytest-django's ``live_server`` (same address options), its requests served by
    kept threads that keep their database connections (tests/liveserver.py): it needs
    the test databases first, so that it stops, closing them, before they are dropped."""
    addr = (
        request.config.getvalue("liveserver")
        or os.getenv("DJANGO_LIVE_TEST_SERVER_ADDRESS")
        or "localhost"
    )
    server = live_server_start(addr)
    yield server
    server.stop()


@pytest.fixture
def requester(db):
    return UserFactory(username="alice")


@pytest.fixture
def other_requester(db):
    return UserFactory(username="bob")


@pytest.fixture
def api_client() -> APIClient:
    return APIClient()


@pytest.fixture
def token_client(requester) -> APIClient:
    """An API client authenticated as ``requester`` with a DRF token."""
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=requester)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full-size",
        action="store_true",
        default=False,
        help="run the crowd simulations at their full size (bench/suite_simulations.py); "
        "the suite runs them small",
    )


@pytest.fixture(scope="session")
def full_size(request: pytest.FixtureRequest) -> bool:
    """True under ``--full-size``: simulations at the size a requester's pilot has."""
    return bool(request.config.getoption("--full-size"))


# Seconds a ``slow`` test without ``seconds=`` is taken to last when ordering.
SLOW_DEFAULT_SECONDS = 20.0


def _expected_seconds(item: pytest.Item) -> float:
    marker = item.get_closest_marker("slow")
    return float(marker.kwargs.get("seconds", SLOW_DEFAULT_SECONDS)) if marker else 0.0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Long tests first, spread over the parallel workers.

    pytest-xdist's ``worksteal`` hands each worker an equal consecutive share of the
    collection and lets an idle worker steal from the *end* of a busy one's share: a
    long test collected late (the API fuzz test, in ``tests/security``) starts last
    and becomes the whole run's tail. So the ``slow`` tests (longest first, by their
    ``seconds=`` estimate) are dealt to the workers' shares longest-first onto the
    least-loaded share, each share then filled with the other tests in their
    collection order. Every worker collects the same order (xdist checks it)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    slow = sorted(
        (item for item in items if item.get_closest_marker("slow")),
        key=lambda item: (-_expected_seconds(item), item.nodeid),
    )
    if not slow:
        return
    slow_ids = {id(item) for item in slow}
    rest = [item for item in items if id(item) not in slow_ids]
    # The shares worksteal's first schedule cuts: pending // workers remaining.
    sizes, left = [], len(items)
    for remaining in range(workers, 0, -1):
        sizes.append(left // remaining)
        left -= sizes[-1]
    shares: list[list[pytest.Item]] = [[] for _ in sizes]
    loads = [0.0] * len(sizes)
    for item in slow:
        open_shares = [i for i in range(len(sizes)) if len(shares[i]) < sizes[i]]
        target = min(open_shares, key=lambda i: (loads[i], i))
        shares[target].append(item)
        loads[target] += _expected_seconds(item)
    ordered: list[pytest.Item] = []
    for share, size in zip(shares, sizes, strict=True):
        fill = size - len(share)
        ordered += share + rest[:fill]
        rest = rest[fill:]
    items[:] = ordered + rest
