"""Set up qaportal's side of bench/worker_cycles.py (run with qaportal's venv python).

Environment as the server's (DATABASE_URL, ...), cwd = the repository, after
``migrate``. Through the services: a requester, a local campaign with one stage
of a simple task type (``rephrase`` when registered, else ``question_writing``
with one question per HIT and one topic per item, so exclusive keys never bite),
``--items`` items (uploaded as JSONL through ``items_upload``), an invite link
to the stage, and ``campaign_start(live)``, which publishes one HIT per item.
Prints one JSON line: invite path, stage path and id, answer fields.

``--queries CONFIG_JSON``: database queries per worker request (invite join,
stage page, accept, assignment page, submit) through Django's test client with
CaptureQueriesContext, on a fresh worker who joins through the same invite.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "qaportal.settings")

import django

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402

from campaigns.design.items import items_upload  # noqa: E402
from campaigns.design.services import campaign_create, stage_add  # noqa: E402
from campaigns.platforms.publishing import campaign_start  # noqa: E402
from campaigns.tasktypes import task_type_names  # noqa: E402
from campaigns.work.invites import invite_create, invite_token  # noqa: E402


def _task_type(preferred: str) -> str:
    names = task_type_names()
    for name in (preferred, "rephrase", "question_writing"):
        if name and name in names:
            return name
    raise SystemExit(f"no usable task type among {names}")


def _items_and_answer(task_type: str, n: int) -> tuple[bytes, dict, dict[str, str]]:
    """JSONL items, stage config, and the answer form ({field: value template})."""
    lines = []
    if task_type == "rephrase":
        for i in range(n):
            lines.append(
                json.dumps({"id": f"q{i}", "question": f"Why did event number {i} happen at all?"})
            )
        config: dict = {}
        answer = {"items/0/rephrasing": "What caused that occurrence, in plain words, case {id}?"}
    elif task_type in ("answer_entity_linking", "question_entity_linking"):
        # Mintaka's linking stages: one text with two proposed spans, both linked.
        for i in range(n):
            question = f"Did George Lucas direct Star Wars before film {i}?"
            answer_text = f"George Lucas and Steven Spielberg, film {i}"
            text = answer_text if task_type == "answer_entity_linking" else question
            spans = [
                {"start": text.index(w), "end": text.index(w) + len(w), "text": w, "kind": "PERSON"}
                for w in (
                    ("George Lucas", "Steven Spielberg")
                    if text is answer_text
                    else ("George Lucas", "Star Wars")
                )
            ]
            lines.append(
                json.dumps(
                    {
                        "id": f"l{i}",
                        "question": question,
                        "answer": answer_text,
                        "proposed_spans": spans,
                    }
                )
            )
        config = {}
        answer = {}
        for j, w in enumerate(
            ("George Lucas", "Steven Spielberg")
            if task_type == "answer_entity_linking"
            else ("George Lucas", "Star Wars")
        ):
            key = "answer" if task_type == "answer_entity_linking" else "question"
            text = json.loads(lines[0])[key]
            start = text.index(w)
            answer[f"items/0/spans/{j}/start"] = str(start)
            answer[f"items/0/spans/{j}/end"] = str(start + len(w))
            answer[f"items/0/spans/{j}/text"] = w
            answer[f"items/0/spans/{j}/qid"] = ("Q38222", "Q8877", "Q462")[j]
    else:  # question_writing: one question per HIT, a distinct topic per item
        for i in range(n):
            lines.append(
                json.dumps({"id": f"c{i}", "topic": f"topic {i}", "complexity_type": "generic"})
            )
        config = {"questions_per_hit": 1}
        answer = {
            "questions/0/question": "Which city hosted event {id}?",
            "questions/0/answer": "Paris",
        }
    return ("\n".join(lines) + "\n").encode(), config, answer


def setup(n_workers: int, n_items: int, preferred: str) -> dict:
    user_model = get_user_model()
    owner = user_model.objects.create(username="bench_requester", is_staff=False)
    owner.set_unusable_password()
    owner.save()
    tt = _task_type(preferred)
    content, config, answer = _items_and_answer(tt, n_items)
    campaign = campaign_create(owner=owner, name="bench worker cycles", provider="local")
    linking = tt.endswith("entity_linking")
    stage = stage_add(
        campaign=campaign,
        name="bench stage",
        task_type=tt,
        config=config,
        instructions="Benchmark stage.",
        items_per_hit=1,
        assignments_per_hit=1,
        assignment_duration=timedelta(hours=2),
        # as Mintaka's linking stages: agreement checked after each submission
        escalation_rule=(
            {"rule": "entity_agreement", "annotators": 2, "max": 3} if linking else None
        ),
    )
    t0 = time.perf_counter()
    items_upload(stage=stage, content=content, filename="items.jsonl")
    t_upload = time.perf_counter() - t0
    invite = invite_create(
        campaign=campaign, stage=stage, created_by=owner, expires_in=timedelta(days=1)
    )
    t0 = time.perf_counter()
    campaign_start(campaign=campaign, to_state="live")
    t_publish = time.perf_counter() - t0
    return {
        "stage_id": stage.pk,
        "stage_path": f"/work/s/{stage.pk}/",
        "invites": [f"/work/i/{invite_token(invite=invite)}/"],
        "task_type": tt,
        "items": n_items,
        "assignments_per_hit": 1,
        "answer": answer,
        "submit_ok": [302, 303],
        "setup_seconds": {"items_upload": round(t_upload, 2), "publish": round(t_publish, 2)},
        "workers": n_workers,
    }


def queries(cfg: dict) -> dict:
    """Queries per request, steady state (third cycle), through the test client."""
    import re

    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, setup_test_environment

    setup_test_environment()
    client = Client()
    out: dict[str, int] = {}

    def measure(name: str, method: str, path: str, data: dict | None = None, ok=(200, 302)):
        with CaptureQueriesContext(connection) as ctx:
            r = client.get(path) if method == "GET" else client.post(path, data or {})
        if r.status_code not in ok:
            raise SystemExit(f"{name}: {method} {path} -> {r.status_code}")
        out[name] = len(ctx)
        return r

    invite = cfg["invites"][0]
    measure("invite_get", "GET", invite)
    measure("invite_join", "POST", invite)
    for _ in range(3):
        measure("stage_page", "GET", cfg["stage_path"])
        r = measure("accept", "POST", cfg["stage_path"] + "accept/", ok=(302,))
        page = r["Location"]
        m = re.search(r"/work/a/(\d+)/", page)
        assert m, page
        measure("page", "GET", page)
        data = {k: v.format(id=m.group(1)) for k, v in cfg["answer"].items()}
        data["telemetry"] = json.dumps({"keystrokes": 40, "page_ms": 9000})
        r = measure("submit", "POST", page, data, ok=(302,))
        assert r["Location"].endswith("/done/"), r["Location"]
        measure("done_page", "GET", r["Location"])
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=50)
    p.add_argument("--items", type=int, default=10000)
    p.add_argument("--task-type", default="")
    p.add_argument("--queries", default="", metavar="CONFIG_JSON")
    a = p.parse_args()
    result = queries(json.loads(a.queries)) if a.queries else setup(a.workers, a.items, a.task_type)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
