"""One sync task and one beat entry serve every registered platform."""

from __future__ import annotations

import pytest
from django.conf import settings

from campaigns.design.platform import platform_for, platform_register, platform_unregister
from campaigns.platforms.local.platform import LocalPlatform
from campaigns.tasks import platform_sync_task, prolific_sync_task

pytestmark = pytest.mark.django_db


class Syncing(LocalPlatform):
    """A platform that records what it was asked to sync."""

    def __init__(self, name: str, *, fails: bool = False) -> None:
        self.name = name
        self.fails = fails
        self.asked: list[str | None] = []

    def sync(self, *, scope: str | None = None) -> dict[str, int]:
        self.asked.append(scope)
        if self.fails:
            raise RuntimeError(f"{self.name} is down")
        return {"changed": len(self.asked)}


@pytest.fixture
def two():
    platforms = [Syncing("sync-a"), Syncing("sync-b", fails=True)]
    for platform in platforms:
        platform_register(platform)
    yield platforms
    for platform in platforms:
        platform_unregister(platform.name)


def test_one_beat_entry_syncs_every_platform():
    tasks = [entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()]
    assert tasks.count("campaigns.platform_sync") == 1
    assert not [t for t in tasks if str(t).endswith("_sync") and t != "campaigns.platform_sync"]


def test_the_sync_runs_every_platform_and_a_failure_stops_none(two):
    a, b = two
    with pytest.raises(RuntimeError, match="sync-b is down"):
        platform_sync_task()
    assert a.asked == [None]
    assert b.asked == [None]


def test_the_sync_of_one_platform_gets_its_scope(two):
    a, b = two
    assert platform_sync_task("sync-a", "study-1") == {"sync-a": {"changed": 1}}
    assert (a.asked, b.asked) == (["study-1"], [])


@pytest.fixture
def fake_sync(monkeypatch):
    asked: list[str | None] = []

    def sync(*, scope: str | None = None) -> int:
        asked.append(scope)
        return 7

    monkeypatch.setattr(platform_for("prolific"), "sync", sync)
    return asked


def test_prolifics_former_task_name_syncs_prolific(fake_sync):
    assert prolific_sync_task("study-9") == {"prolific": 7}
    assert fake_sync == ["study-9"]
