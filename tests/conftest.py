from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.factories import UserFactory


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
