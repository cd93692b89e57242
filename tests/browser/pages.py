"""Builders for the browser tests: a live local campaign with one stage, an invited
worker's way to its task page, and screenshots for the docs.

Screenshots are written only when ``QAPORTAL_SCREENSHOTS`` names a folder (the docs'
``docs/screenshots``): ordinary runs write nothing.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.urls import reverse

from campaigns.services import campaign_create, stage_add
from campaigns.services.invites import invite_create, invite_token
from campaigns.services.items import items_upload
from campaigns.services.work import campaign_start
from tests.factories import UserFactory

WIDTHS = {"desktop": 1280, "phone": 390}


def live_stage(
    *,
    task_type: str,
    config: dict[str, Any],
    items: list[dict[str, Any]],
    owner: Any = None,
    name: str = "work",
    **stage_fields: Any,
) -> tuple[Any, str]:
    """A live local campaign with one stage of ``items`` and an invite link to it."""
    owner = owner or UserFactory.create()
    campaign = campaign_create(owner=owner, name=f"Browser {task_type}")
    stage = stage_add(
        campaign=campaign,
        name=name,
        task_type=task_type,
        config=config,
        reward=Decimal("0.50"),
        **stage_fields,
    )
    rows = "\n".join(json.dumps({"id": it["external_id"], **it["data"]}) for it in items)
    items_upload(stage=stage, content=rows.encode(), filename="items.jsonl")
    campaign_start(campaign=campaign, to_state="live")
    invite = invite_create(campaign=campaign, created_by=owner, expires_in=timedelta(days=1))
    return stage, reverse("worker:invite", kwargs={"token": invite_token(invite=invite)})


def start(page: Any, invite_path: str) -> None:
    """Open the invite and press Start: the worker is on the stage page."""
    page.goto(invite_path)
    page.get_by_role("button", name="Start").click()
    page.wait_for_url("**/work/s/*/")


def accept(page: Any) -> None:
    page.get_by_role("button", name="Accept this task").click()
    page.wait_for_url("**/work/a/*/")


def screenshot(page: Any, name: str) -> None:
    """``<name>-<width>.png`` of the whole page, when screenshots are asked for."""
    folder = os.environ.get("QAPORTAL_SCREENSHOTS")
    if not folder:
        return
    width = page.viewport_size["width"]
    Path(folder).mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(Path(folder) / f"{name}-{width}.png"), full_page=True)
    # A full-page capture resizes the viewport and restores the scroll position a
    # little later: let that settle before the test clicks on.
    page.wait_for_timeout(300)
