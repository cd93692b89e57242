"""Login, logout and password change through the pages."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery"  # tests.factories.UserFactory's


def test_login_page_renders_form():
    response = Client().get(reverse("login"))
    assert response.status_code == 200
    content = response.content.decode()
    assert 'name="username"' in content
    assert 'name="password"' in content
    assert "app.css" in content


def test_login_redirects_to_campaign_list(requester):
    client = Client()
    response = client.post(reverse("login"), {"username": "alice", "password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == reverse("frontend:campaign-list")
    page = client.get(response["Location"])
    assert page.status_code == 200
    assert page.context["user"] == requester


def test_login_honours_next(requester, campaign):
    detail = reverse("frontend:campaign-detail", kwargs={"slug": campaign.slug})
    response = Client().post(
        f"{reverse('login')}?next={detail}",
        {"username": "alice", "password": PASSWORD, "next": detail},
    )
    assert response["Location"] == detail


def test_login_rejects_wrong_password(requester):
    client = Client()
    response = client.post(reverse("login"), {"username": "alice", "password": "wrong"})
    assert response.status_code == 200
    assert "errorlist" in response.content.decode()
    assert client.get(reverse("frontend:campaign-list")).status_code == 302


def test_login_does_not_redirect_offsite(requester):
    response = Client().post(
        reverse("login"),
        {"username": "alice", "password": PASSWORD, "next": "https://evil.example/"},
    )
    assert response["Location"] == reverse("frontend:campaign-list")


def test_header_shows_user_and_logout_form(alice_client):
    content = alice_client.get(reverse("frontend:campaign-list")).content.decode()
    assert "alice" in content
    assert f'action="{reverse("logout")}"' in content
    assert f'href="{reverse("password_change")}"' in content


def test_logout_is_post_only_and_ends_the_session(alice_client):
    assert alice_client.get(reverse("logout")).status_code == 405
    response = alice_client.post(reverse("logout"))
    assert response.status_code == 302
    assert response["Location"] == reverse("login")
    after = alice_client.get(reverse("frontend:campaign-list"))
    assert after.status_code == 302
    assert after["Location"].startswith(reverse("login"))


def test_password_change_needs_login():
    response = Client().get(reverse("password_change"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_password_change_changes_password_and_keeps_session(alice_client, requester):
    assert alice_client.get(reverse("password_change")).status_code == 200
    response = alice_client.post(
        reverse("password_change"),
        {
            "old_password": PASSWORD,
            "new_password1": "a much longer new passphrase",
            "new_password2": "a much longer new passphrase",
        },
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("password_change_done")
    assert alice_client.get(response["Location"]).status_code == 200
    requester.refresh_from_db()
    assert requester.check_password("a much longer new passphrase")
    # The session that changed the password stays logged in.
    assert alice_client.get(reverse("frontend:campaign-list")).status_code == 200


def test_password_change_refuses_wrong_old_password(alice_client, requester):
    response = alice_client.post(
        reverse("password_change"),
        {
            "old_password": "not it",
            "new_password1": "a much longer new passphrase",
            "new_password2": "a much longer new passphrase",
        },
    )
    assert response.status_code == 200
    assert "errorlist" in response.content.decode()
    assert get_user_model().objects.get(pk=requester.pk).check_password(PASSWORD)
