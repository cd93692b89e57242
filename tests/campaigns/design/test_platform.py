"""The platform registry: names, the models' provider choices and settings keys follow
what is registered."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from campaigns.design.platform import (
    SettingKey,
    platform_for,
    platform_names,
    platform_register,
    platform_unregister,
)
from campaigns.models.choices import provider_choices
from campaigns.platforms.local.platform import LocalPlatform


class Elsewhere(LocalPlatform):
    name = "elsewhere"
    label = "Elsewhere"
    settings_keys = (
        SettingKey("ELSEWHERE_TIMEOUT", 9.5, "float"),
        SettingKey("ELSEWHERE_LIVE", True, "bool"),
        SettingKey("ELSEWHERE_HOSTS", [], "list"),
    )


@pytest.fixture
def elsewhere(settings, monkeypatch):
    monkeypatch.setenv("ELSEWHERE_TIMEOUT", "2")
    monkeypatch.setenv("ELSEWHERE_LIVE", "")
    monkeypatch.setenv("ELSEWHERE_HOSTS", "https://a.example, https://b.example")
    platform_register(Elsewhere())
    yield platform_for("elsewhere")
    platform_unregister("elsewhere")
    for key in Elsewhere.settings_keys:
        delattr(settings, key.name)


def test_the_built_in_platforms_are_the_choices_in_name_order():
    assert platform_names() == ["local", "mturk", "prolific"]
    assert provider_choices() == [
        ("local", "Local workforce"),
        ("mturk", "Amazon Mechanical Turk"),
        ("prolific", "Prolific"),
    ]


def test_a_registered_platform_is_a_choice_and_reads_its_settings(elsewhere, settings):
    assert ("elsewhere", "Elsewhere") in provider_choices()
    assert "elsewhere" in platform_names()
    assert settings.ELSEWHERE_TIMEOUT == 2.0
    assert settings.ELSEWHERE_LIVE is True  # empty: the default
    assert settings.ELSEWHERE_HOSTS == ["https://a.example", "https://b.example"]


def test_unregistered_it_is_gone(elsewhere):
    platform_unregister("elsewhere")
    assert "elsewhere" not in dict(provider_choices())
    with pytest.raises(ValueError, match="Unknown provider"):
        platform_for("elsewhere")


def test_a_bad_setting_is_refused_by_name():
    with pytest.raises(ImproperlyConfigured, match="ELSEWHERE_LIVE"):
        SettingKey("ELSEWHERE_LIVE", True, "bool").read({"ELSEWHERE_LIVE": "maybe"})
    with pytest.raises(ImproperlyConfigured, match="ELSEWHERE_TIMEOUT"):
        SettingKey("ELSEWHERE_TIMEOUT", 1.0, "float").read({"ELSEWHERE_TIMEOUT": "soon"})
