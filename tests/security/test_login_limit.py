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
        assert _login(client, "root", "wrong", "/admin/login/").status_code == 200
    response = _login(client, "root", PASSWORD, "/admin/login/")
    assert response.status_code == 429
    assert "Too many failed logins" in response.content.decode()
    assert int(response["Retry-After"]) > 0
    assert "_auth_user_id" not in client.session
    # Elsewhere the right password opens the admin.
    other = Client(REMOTE_ADDR="198.51.100.9")
    opened = _login(other, "root", PASSWORD, "/admin/login/")
    assert (opened.status_code, opened["Location"]) == (302, "/admin/")


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


# --- Behind the reverse proxy, with backoff, never site-wide ------------------------------

PROXY = "10.0.0.2"


def _via_proxy(client_ip: str) -> Client:
    return Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=f"{client_ip}")


def test_behind_a_trusted_proxy_each_client_is_counted_apart(settings):
    settings.LOGIN_FAILURE_LIMIT = 5
    settings.TRUSTED_PROXIES = ["10.0.0.0/24"]
    UserFactory.create(username="alice")
    UserFactory.create(username="carol")
    attacker = _via_proxy("203.0.113.66")
    # Fifty failures through the proxy, across many usernames.
    for n in range(50):
        _login(attacker, f"user{n}", "wrong")
    assert _login(attacker, "alice", PASSWORD).status_code == 429  # the sprayer is stopped
    # Everyone else behind the same proxy still logs in.
    assert _login(_via_proxy("198.51.100.20"), "alice", PASSWORD).status_code == 302
    assert _login(_via_proxy("198.51.100.21"), "carol", PASSWORD).status_code == 302


def test_a_forged_forwarded_for_is_not_believed(settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    settings.TRUSTED_PROXIES = ["10.0.0.0/24"]
    UserFactory.create(username="alice")
    # The client prepends addresses of its own; only the proxy's entry (the last) counts.
    for n in range(3):
        forged = Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=f"192.0.2.{n}, 203.0.113.7")
        _login(forged, "alice", "wrong")
    assert _login(_via_proxy("203.0.113.7"), "alice", PASSWORD).status_code == 429
    # Without a trusted proxy, X-Forwarded-For is ignored altogether.
    settings.TRUSTED_PROXIES = []
    direct = Client(REMOTE_ADDR="198.51.100.9", HTTP_X_FORWARDED_FOR="203.0.113.7")
    assert _login(direct, "alice", PASSWORD).status_code == 302


def test_locks_back_off_and_end(settings, monkeypatch):
    from qaportal import login_limit

    settings.LOGIN_FAILURE_LIMIT = 2
    settings.LOGIN_BACKOFF_BASE_SECONDS = 10
    UserFactory.create(username="alice")
    client = Client(REMOTE_ADDR="203.0.113.5")
    clock = [1_000_000.0]
    monkeypatch.setattr(login_limit.time, "time", lambda: clock[0])
    for _ in range(2):
        _login(client, "alice", "wrong")
    locked = _login(client, "alice", PASSWORD)
    assert locked.status_code == 429
    assert locked["Retry-After"] == "10"
    assert "10 seconds" in locked.content.decode()
    clock[0] += 11
    _login(client, "alice", "wrong")  # the third failure: twice as long
    assert _login(client, "alice", PASSWORD)["Retry-After"] == "20"
    clock[0] += 21
    assert _login(client, "alice", PASSWORD).status_code == 302


def test_one_account_attacked_from_many_addresses_is_slowed_not_locked_for_long(settings):
    settings.LOGIN_FAILURE_LIMIT = 5
    settings.LOGIN_ACCOUNT_FAILURE_LIMIT = 20
    settings.LOGIN_ACCOUNT_BACKOFF_MAX_SECONDS = 60
    UserFactory.create(username="alice")
    for n in range(20):
        _login(Client(REMOTE_ADDR=f"198.51.100.{n}"), "alice", "wrong")
    # The addresses that failed on the account are slowed down, for at most a minute...
    refused = _login(Client(REMOTE_ADDR="198.51.100.3"), "alice", PASSWORD)
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) <= 60
    # ...while the owner, from an address that has not failed, still logs in.
    assert _login(Client(REMOTE_ADDR="203.0.113.200"), "alice", PASSWORD).status_code == 302
    # Other accounts are untouched.
    UserFactory.create(username="bob")
    assert _login(Client(REMOTE_ADDR="198.51.100.3"), "bob", PASSWORD).status_code == 302


# --- One policy on every path; only passwords actually tried count ----------------------


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_attempts_while_locked_are_not_counted_and_the_victim_gets_in(settings, path):
    """The hostile tester's case: 26 wrong passwords on the admin's login from one
    address kept counting toward the account's lock (each refusal while locked was a
    failure too), then the victim's right password from elsewhere got 429."""
    settings.LOGIN_FAILURE_LIMIT = 5
    settings.LOGIN_ACCOUNT_FAILURE_LIMIT = 20
    UserFactory.create(username="victim", is_staff=True)
    attacker = Client(REMOTE_ADDR="203.0.113.66")
    answers = [_login(attacker, "victim", f"guess{n}", path).status_code for n in range(26)]
    assert answers[:5] == [200] * 5
    assert set(answers[5:]) == {429}  # refused unheard: no password tried
    victim = Client(REMOTE_ADDR="198.51.100.44")
    assert _login(victim, "victim", PASSWORD, path).status_code == 302


def test_the_password_change_is_limited_like_login(settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    user = UserFactory.create(username="alice")
    thief = Client(REMOTE_ADDR="203.0.113.5")
    thief.force_login(user)  # a stolen session guessing the old password
    form = {"new_password1": "a brand new secret 42", "new_password2": "a brand new secret 42"}
    url = "/accounts/password_change/"
    for n in range(3):
        assert thief.post(url, {**form, "old_password": f"guess{n}"}).status_code == 200
    locked = thief.post(url, {**form, "old_password": PASSWORD})
    assert locked.status_code == 429
    assert "Too many wrong passwords" in locked.content.decode()
    assert int(locked["Retry-After"]) > 0
    user.refresh_from_db()
    assert user.check_password(PASSWORD)
    # The same lock holds on the login page for that address...
    assert _login(Client(REMOTE_ADDR="203.0.113.5"), "alice", PASSWORD).status_code == 429
    # ...and the owner elsewhere changes the password.
    owner = Client(REMOTE_ADDR="198.51.100.5")
    owner.force_login(user)
    changed = owner.post(url, {**form, "old_password": PASSWORD})
    assert changed.status_code == 302
