"""manage.py create_requester: an account, an API token, and secrets printed only when made here."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db

PASSWORD = "a long enough passphrase"


def run(*args: str) -> str:
    out = StringIO()
    call_command("create_requester", *args, stdout=out)
    return out.getvalue()


def _token(output: str) -> str:
    match = re.search(r"^token: (\w+)$", output, re.MULTILINE)
    assert match, output
    return match.group(1)


def test_prints_a_token_that_authenticates_the_new_user():
    output = run("carol", "--email", "carol@example.org", "--password", PASSWORD)
    user = get_user_model().objects.get(username="carol")
    key = _token(output)
    assert Token.objects.get(key=key).user == user
    assert user.email == "carol@example.org"
    assert not user.is_staff
    authenticated, _ = TokenAuthentication().authenticate_credentials(key)
    assert authenticated == user


def test_given_password_works_and_is_never_printed():
    output = run("carol", "--password", PASSWORD)
    assert PASSWORD not in output
    assert "password" not in output.lower()
    assert authenticate(username="carol", password=PASSWORD) is not None


def test_generated_password_is_printed_once_and_works():
    output = run("carol")
    lines = [line for line in output.splitlines() if line.startswith("password: ")]
    assert len(lines) == 1
    generated = lines[0].split()[1]
    assert len(generated) >= 16
    assert output.count(generated) == 1
    assert authenticate(username="carol", password=generated) is not None


def test_password_from_env(monkeypatch):
    monkeypatch.setenv("CAROL_PW", PASSWORD)
    output = run("carol", "--password-from-env", "CAROL_PW")
    assert PASSWORD not in output
    assert authenticate(username="carol", password=PASSWORD) is not None


def test_password_from_missing_env_is_an_error(monkeypatch):
    monkeypatch.delenv("NO_SUCH_PW", raising=False)
    with pytest.raises(CommandError, match="NO_SUCH_PW"):
        run("carol", "--password-from-env", "NO_SUCH_PW")
    assert not get_user_model().objects.filter(username="carol").exists()


def test_weak_password_is_refused():
    with pytest.raises(CommandError, match="refused"):
        run("carol", "--password", "123")
    assert not get_user_model().objects.filter(username="carol").exists()


def test_staff_flag():
    run("carol", "--password", PASSWORD, "--staff")
    assert get_user_model().objects.get(username="carol").is_staff


def test_existing_user_is_an_error_without_reset_token():
    key = _token(run("carol", "--password", PASSWORD))
    with pytest.raises(CommandError, match="--reset-token"):
        run("carol")
    assert Token.objects.get(user__username="carol").key == key


def test_reset_token_replaces_the_token_and_keeps_the_password():
    old = _token(run("carol", "--password", PASSWORD))
    output = run("carol", "--reset-token")
    new = _token(output)
    assert new != old
    assert not Token.objects.filter(key=old).exists()
    assert Token.objects.get(key=new).user.username == "carol"
    assert "password" not in output.lower()
    assert authenticate(username="carol", password=PASSWORD) is not None
