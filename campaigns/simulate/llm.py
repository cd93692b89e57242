"""Simulated workers who paste a language model's output (``--llm-share``).

On a stage that asks for the LLM flag (config ``llm_flag``), such a worker puts the same
task to the stage's own model endpoint, as a worker would to a chatbot, and pastes its
answer into each free-text field of the form (``TaskType.text_fields``), sometimes
lightly edited; the page's telemetry then reports those pastes and little typing. The
run records which stored assignments were pasted (``SimulationResult.llm_pasted``): the
ground truth the LLM flag's precision and recall are measured against (bench/).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any

from campaigns.assist.client import ModelUnavailable
from campaigns.assist.endpoints import endpoint_ask
from campaigns.models import ModelEndpoint
from campaigns.tasktypes import task_type_get
from campaigns.tasktypes.base import LLM_FLAG_KEY

_ITEM_FIELD = re.compile(r"^items/(\d+)/")


def llm_workers(*, workers: int, share: float, seed: int) -> set[int]:
    """The numbers of the ``round(workers * share)`` workers who paste, seeded."""
    count = max(0, min(workers, round(workers * share)))
    numbers = list(range(workers))
    random.Random(f"{seed}:llm").shuffle(numbers)
    return set(numbers[:count])


def light_edit(text: str, rng: random.Random) -> str:
    """``text`` as pasted, or with one small edit a worker makes to hide a paste."""
    choice = rng.randrange(4)
    if choice == 1 and text[:1].isupper():
        return text[:1].lower() + text[1:]
    if choice == 2:
        return text.replace("Could you", "Can you", 1)
    if choice == 3:
        return re.sub(r"\s+", " ", text).replace(" me ", " me, please, ", 1)
    return text


class ModelPaster:
    """What pasting workers get from the model, asked once per (stage, item)."""

    def __init__(self) -> None:
        self._answers: dict[tuple[int, int], str] = {}

    def model_text(
        self, *, stage_id: int, config: Mapping[str, Any], task_type: str, item: Mapping[str, Any]
    ) -> str:
        setting = config.get(LLM_FLAG_KEY)
        key = (stage_id, int(item["id"]))
        if key not in self._answers:
            text = ""
            endpoint_id = setting.get("endpoint") if isinstance(setting, Mapping) else None
            endpoint = (
                ModelEndpoint.objects.filter(pk=int(endpoint_id)).first() if endpoint_id else None
            )
            if endpoint is not None:
                question, context = task_type_get(task_type).model_task(
                    data=item.get("data") or {}, config=config
                )
                try:
                    text = endpoint_ask(
                        endpoint=endpoint, task_type=task_type, question=question, context=context
                    ).text
                except ModelUnavailable:
                    text = ""
            self._answers[key] = text
        return self._answers[key]

    def paste(
        self,
        *,
        stage_id: int,
        config: Mapping[str, Any],
        task_type: str,
        items: list[dict[str, Any]],
        fields: dict[str, list[str]],
        rng: random.Random,
    ) -> list[dict[str, Any]] | None:
        """Replace ``fields``' free texts with the model's answers (in place); the pastes
        the page would report, or None when the stage has no model to paste from."""
        tt = task_type_get(task_type)
        if not tt.writes_free_text or not isinstance(config.get(LLM_FLAG_KEY), Mapping):
            return None
        pastes = []
        for name, values in fields.items():
            if name.rsplit("/", 1)[-1] not in tt.text_fields or not values:
                continue
            found = _ITEM_FIELD.match(name)
            index = int(found.group(1)) if found else 0
            if index >= len(items):
                continue
            text = self.model_text(
                stage_id=stage_id, config=config, task_type=task_type, item=items[index]
            )
            if not text:
                continue
            fields[name] = [light_edit(text, rng)]
            pastes.append({"field": name, "length": len(text)})
        return pastes or None
