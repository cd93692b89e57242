"""``manage.py prolific_filters``: the catalogue read again, the countries listed."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from tests.campaigns.platforms.conftest import fake  # noqa: F401  (the Prolific fake)

pytestmark = pytest.mark.django_db


def test_refresh_reads_the_catalogue_and_lists_the_countries(fake):  # noqa: F811
    out = io.StringIO()
    call_command("prolific_filters", stdout=out)
    call_command("prolific_filters", stdout=out)
    text = out.getvalue()
    assert "US  United States (choice 1)" in text
    assert "GB  United Kingdom (choice 0)" in text
    assert len(fake.calls("GET", r"/api/v1/filters/")) == 2  # each run reads again
