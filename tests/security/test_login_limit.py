"""Login rate limiting: five failures lock one username from one address, whatever the
password afterwards; another address or username is not affected; a success clears the
count; the admin's login is covered too; the page says why (429)."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery"


@pytest.fixture(autouse=True)
def _fresh_counts():
    cache.clear()
    yield
    cache.clear()


def _login(client: Client, username: str, password: str, path: str = "/accounts/login/"):
    return client.post(path, {"username": username, "password": password})


def test_five_failures_lock_the_username_from_that_address(settings):
    settings.LOGIN_FAILURE_LIMIT = 5
    UserFactory.create(username="alice")
    client = Client(REMOTE_ADDR="203.0.113.5")
    for _ in range(5):
        assert _login(client, "alice", "wrong").status_code == 200

    locked = _login(client, "alice", PASSWORD)

    assert locked.status_code == 429
    assert "Too many failed logins" in locked.content.decode()
    assert "_auth_user_id" not in client.session
    # Another address, or another username from this one, still logs in.
    assert _login(Client(REMOTE_ADDR="198.51.100.7"), "alice", PASSWORD).status_code == 302
    UserFactory.create(username="bob")
    assert _login(client, "bob", PASSWORD).status_code == 302


def test_the_admin_login_is_limited_too(settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    UserFactory.create(username="root", is_staff=True, is_superuser=True)
    client = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(3):
        _login(client, "root", "wrong", "/admin/login/")
    response = _login(client, "root", PASSWORD, "/admin/login/")
    assert response.status_code == 200  # the admin form, refused
    assert "_auth_user_id" not in client.session


def test_a_success_clears_the_count(settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    UserFactory.create(username="alice")
    client = Client(REMOTE_ADDR="203.0.113.6")
    for _ in range(2):
        _login(client, "alice", "wrong")
    assert _login(client, "alice", PASSWORD).status_code == 302
    client.logout()
    for _ in range(2):
        _login(client, "alice", "wrong")
    assert _login(client, "alice", PASSWORD).status_code == 302


def test_password_spraying_from_one_address_is_stopped(settings):
    settings.LOGIN_FAILURE_LIMIT = 1
    client = Client(REMOTE_ADDR="203.0.113.8")
    for n in range(10):
        _login(client, f"user{n}", "guess")
    UserFactory.create(username="victim")
    assert _login(client, "victim", PASSWORD).status_code == 429
