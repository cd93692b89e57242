"""Fixtures for the local workforce: a test task type with its template, stages, workers."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar

import pytest

from campaigns import tasktypes
from campaigns.models import Campaign, Item, ItemSource, Stage, Worker
from campaigns.tasktypes.base import Config, FieldError, FormView, TaskType, per_item_answer_schema
from campaigns.tasktypes.per_item import Entry, PerItemTask
from campaigns.work.invites import invite_create, invite_redeem, invite_token
from tests.factories import CampaignFactory, UserFactory

TEMPLATES_DIR = Path(__file__).parent / "templates"


class EchoTask(PerItemTask):
    """A small task type: write at least 3 characters about each item.

    Items may carry a ``cell`` (its exclusive key); each answer becomes one item
    of the next stage, its text upper-cased. All a task type needs: this class,
    its template (``templates/tests_work/echo.html``) and its registry entry (the
    ``echo_task_type`` fixture's, where ``campaigns/tasktypes/__init__.py`` lists
    the real ones).
    """

    name = "test_echo"
    label = "Echo (tests only)"
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "required": ["text"],
        "properties": {"text": {"type": "string", "minLength": 1}, "cell": {"type": "string"}},
    }
    answer_schema: ClassVar[dict[str, Any]] = per_item_answer_schema({"text": {"type": "string"}})
    template_name = "tests_work/echo.html"
    rows_key = "rows"

    def entry_from_form(self, form: Mapping[str, Any], at: str, cfg: Config) -> Entry:
        return {"text": str(form.get(f"{at}/text", ""))}

    def entry_errors(self, entry: Entry, data: Entry, at: str, cfg: Config) -> list[FieldError]:
        if len(entry["text"].strip()) < 3:
            return [FieldError(f"{at}/text", "Write at least 3 characters.")]
        return []

    def row(self, form: FormView, data: Entry, at: str, entry: Entry, cfg: Config) -> Entry:
        return {"data": data, "field": form.field(f"{at}/text", entry.get("text", ""))}

    def exclusive_key(self, *, item: dict[str, Any]) -> str | None:
        return item.get("cell")

    def next_items(
        self, *, answer: dict[str, Any], items: list[dict[str, Any]], handoff: dict[str, Any]
    ) -> Iterable[dict[str, Any]]:
        for entry in answer["items"]:
            text = entry["text"]
            # "!" produces an item the next stage refuses (empty text).
            data = {"text": "" if text.startswith("!") else text.upper()}
            yield {"external_id": f"{entry['external_id']}/0", "data": data}


class PlainEchoTask(EchoTask):
    """The test task type without exclusive keys (as ``rephrase``, the bench's type)."""

    name = "test_echo_plain"
    exclusive_key = TaskType.exclusive_key


@pytest.fixture(autouse=True)
def echo_task_type(monkeypatch, settings):
    monkeypatch.setitem(tasktypes._REGISTRY, EchoTask.name, EchoTask())
    engine = dict(settings.TEMPLATES[0])
    engine["DIRS"] = [*engine.get("DIRS", []), TEMPLATES_DIR]
    settings.TEMPLATES = [engine]
    settings.SITE_URL = "https://qa.example.org"
    settings.ROOT_URLCONF = "tests.campaigns.work.urls"


def add_items(stage: Stage, texts: list[str], *, cells: list[str] | None = None) -> list[Item]:
    return [
        Item.objects.create(
            stage=stage,
            external_id=f"s{stage.pk}-i{n}",
            data={"text": text, **({"cell": cells[n]} if cells else {})},
            source=ItemSource.UPLOADED,
        )
        for n, text in enumerate(texts)
    ]


@pytest.fixture
def make_stage() -> Callable[..., Stage]:
    def make(
        *,
        campaign: Campaign | None = None,
        state: str = "live",
        items: int = 0,
        position: int = 0,
        **fields: Any,
    ) -> Stage:
        campaign = campaign or CampaignFactory.create(state=state)
        stage = Stage.objects.create(
            campaign=campaign,
            name=f"Stage {position}",
            position=position,
            task_type="test_echo",
            **fields,
        )
        if items:
            add_items(stage, [f"text {n}" for n in range(items)])
        return stage

    return make


@pytest.fixture
def invited() -> Callable[..., Worker]:
    """A worker who joined ``campaign`` through an invite link."""

    def join(campaign: Campaign) -> Worker:
        link = invite_create(
            campaign=campaign, created_by=campaign.owner, expires_in=timedelta(days=1)
        )
        return invite_redeem(token=invite_token(invite=link))[1]

    return join


@pytest.fixture
def user_factory():
    return UserFactory
