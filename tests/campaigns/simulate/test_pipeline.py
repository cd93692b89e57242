"""The crowd simulator through the real worker pages: a three-stage pipeline end to end."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.models import Count

from campaigns.models import Assignment, AssignmentStatus, Item, Worker
from campaigns.platforms.publishing import campaign_start
from campaigns.simulate import SimulationError, parse_profiles, profile_mix, simulate_crowd
from campaigns.tasktypes.question_writing import yes_no_value
from tests.helpers import FakeTerminal, progress_lines

pytestmark = pytest.mark.django_db(transaction=True)

STORED = (AssignmentStatus.SUBMITTED, AssignmentStatus.APPROVED, AssignmentStatus.REJECTED)


def test_three_stage_pipeline_runs_end_to_end(mintaka_campaign):
    campaign = campaign_start(campaign=mintaka_campaign(), to_state="live")
    write, link, check = campaign.stages.order_by("position")

    result = simulate_crowd(campaign=campaign, workers=8, seed=3)

    assert result.ok, "\n".join(result.lines())
    assert result.server_errors() == 0
    assert result.joined == 8
    tallies = [result.stages[s.pk] for s in (write, link, check)]
    assert all(t.submitted > 0 for t in tallies), "\n".join(result.lines())

    # Every stage's work was done: nothing left published or held.
    for stage in (write, link, check):
        assert not Item.objects.filter(stage=stage, status="pending").exists()
        assert not Assignment.objects.filter(hit__stage=stage, status="accepted").exists()

    # Every submission stored exactly once, resent forms included.
    stored = Assignment.objects.filter(hit__stage__campaign=campaign, status__in=STORED)
    for stage, tally in zip((write, link, check), tallies, strict=True):
        assert stored.filter(hit__stage=stage).count() == tally.submitted
    assert result.replays > 0
    assert sum(Worker.objects.values_list("submitted_count", flat=True)) == stored.count()
    assert all(a.submitted_at and a.telemetry for a in stored)

    # Items flowed, and yes/no and numeric answers stopped before linking.
    written = [
        pair for a in stored.filter(hit__stage=write) for pair in (a.answers or {})["questions"]
    ]
    assert any(yes_no_value(p["answer"]) is not None for p in written)
    assert any(p["answer"].isdigit() for p in written)
    linking = list(Item.objects.filter(stage=link))
    assert linking
    assert all(i.data["answer_type"] not in ("boolean", "numeric") for i in linking)
    # Count answers are linked as the entities counted (Mintaka §4.1-4.2).
    assert {i.data["complexity_type"] for i in linking} <= {"comparative", "superlative", "count"}
    assert all(
        i.data["answer_type"] == "entity" for i in linking if i.data["complexity_type"] == "count"
    )
    checks = list(Item.objects.filter(stage=check))
    assert checks
    linking_ids = {i.external_id for i in linking}
    for item in checks:
        source, tag = item.external_id.rsplit("/", 1)
        assert source in linking_ids
        assert re.fullmatch(r"l\d+-[0-9a-f]{10}", tag)
        answer = item.data["answer"]
        assert answer[item.data["start"] : item.data["end"]] == item.data["text"]

    # Profiles: the mix, and refusals were met and handled.
    assert {name: p.workers for name, p in result.profiles.items()} == {
        "good": 5,
        "sloppy": 2,
        "spammer": 1,
    }
    assert sum(t.reprompted for t in tallies) > 0


def test_approve_all_through_the_command(mintaka_campaign):
    campaign = mintaka_campaign(
        slug="sim-cmd", topics=("books",), types=("yesno", "comparative"), review_rules=None
    )
    campaign_start(campaign=campaign, to_state="pilot")
    out, terminal = StringIO(), FakeTerminal()

    call_command(
        "simulate_crowd",
        campaign.slug,
        "--workers=3",
        "--seed=5",
        "--profiles=good=1",
        "--approve-all",
        "--max-seconds=60",
        stdout=out,
        stderr=terminal,
    )

    # On a terminal, a progress bar of the submissions, ended with a newline.
    drawn = progress_lines(terminal)
    submitted = Assignment.objects.filter(hit__stage__campaign=campaign).count()
    assert drawn[0].startswith("simulate sim-cmd 0 submissions")
    assert drawn[-1].startswith(f"simulate sim-cmd {submitted} submissions")
    assert terminal.getvalue().endswith("\n")
    text = out.getvalue()
    assert "no errors" in text
    assert "Check links" in text
    decided = Assignment.objects.filter(hit__stage__campaign=campaign)
    assert decided.exists()
    assert set(decided.values_list("status", flat=True)) == {AssignmentStatus.APPROVED}
    assert set(decided.values_list("decision_source", flat=True)) == {"simulator"}
    assert Item.objects.filter(stage__campaign=campaign, stage__position=2).exists()


def test_the_command_refuses_a_draft_campaign_and_fails_on_errors(mintaka_campaign):
    campaign = mintaka_campaign(slug="sim-draft", topics=("art",), types=("generic",), stages=1)
    with pytest.raises(CommandError, match="pilot or live"):
        call_command("simulate_crowd", campaign.slug, "--workers=1", stdout=StringIO())
    with pytest.raises(CommandError, match="No campaign"):
        call_command("simulate_crowd", "nope", stdout=StringIO())
    # Not a terminal (a log, a pipe): no progress bar.
    campaign_start(campaign=campaign, to_state="pilot")
    logged = StringIO()
    call_command(
        "simulate_crowd", campaign.slug, "--workers=1", "--profiles=good=1", stdout=StringIO(),
        stderr=logged,
    )  # fmt: skip
    assert logged.getvalue() == ""

    campaign_start(campaign=campaign, to_state="live")
    out = StringIO()
    with pytest.raises(CommandError, match="error"):
        call_command(
            "simulate_crowd",
            campaign.slug,
            "--workers=1",
            "--base-url=http://127.0.0.1:9",  # nothing listens there
            "--json",
            stdout=out,
        )
    summary = json.loads(out.getvalue())
    assert summary["ok"] is False
    assert "no answer" in summary["errors"][0]


def test_a_server_error_is_reported(mintaka_campaign, monkeypatch):
    campaign = mintaka_campaign(slug="sim-500", topics=("art",), types=("generic",), stages=1)
    campaign_start(campaign=campaign, to_state="live")

    def broken(self, **kwargs):
        raise RuntimeError("template context exploded")

    monkeypatch.setattr("campaigns.tasktypes.question_writing.QuestionWriting.view", broken)
    result = simulate_crowd(campaign=campaign, workers=1, seed=0)

    assert not result.ok
    assert result.server_errors() > 0
    assert any("server error 500" in e for e in result.errors)


def test_profiles_parse_and_mix_deterministically():
    assert parse_profiles("good=3,spammer=1") == {"good": 0.75, "spammer": 0.25}
    with pytest.raises(SimulationError, match="Unknown profile 'lazy'"):
        parse_profiles("lazy=1")
    mix = profile_mix(
        workers=10, shares=parse_profiles("good=0.6,sloppy=0.25,spammer=0.15"), seed=1
    )
    assert sorted(mix) == ["good"] * 6 + ["sloppy"] * 3 + ["spammer"]
    assert mix == profile_mix(
        workers=10, shares=parse_profiles("good=0.6,sloppy=0.25,spammer=0.15"), seed=1
    )


def _run_signature(result, campaign):
    stages = [(t.accepted, t.submitted, t.returned, t.reprompted) for t in result.stages.values()]
    answers = [
        a.answers
        for a in Assignment.objects.filter(hit__stage__campaign=campaign)
        .exclude(answers__isnull=True)
        .order_by("hit__stage__position", "id")
    ]
    return stages, answers


def test_one_seed_gives_one_run(mintaka_campaign):
    runs = []
    for slug in ("sim-seed-a", "sim-seed-b"):
        campaign = mintaka_campaign(slug=slug, topics=("art",), types=("comparative", "yesno"))
        campaign = campaign_start(campaign=campaign, to_state="live")
        result = simulate_crowd(campaign=campaign, workers=3, seed=11)
        assert result.ok, "\n".join(result.lines())
        runs.append(_run_signature(result, campaign))
    assert runs[0] == runs[1]


def test_concurrent_workers_store_each_submission_once(mintaka_campaign):
    campaign = mintaka_campaign(slug="sim-threads", topics=("art", "war"), stages=2)
    campaign = campaign_start(campaign=campaign, to_state="live")

    result = simulate_crowd(campaign=campaign, workers=4, seed=2, concurrency=4)

    assert result.ok, "\n".join(result.lines())
    stored = Assignment.objects.filter(hit__stage__campaign=campaign, status__in=STORED)
    assert stored.count() == sum(t.submitted for t in result.stages.values())
    assert sum(Worker.objects.values_list("submitted_count", flat=True)) == stored.count()
    for hit_id, held in (
        stored.values_list("hit_id").annotate(n=Count("id")).values_list("hit_id", "n")
    ):
        assert held <= 2, hit_id


def test_workers_go_on_from_the_thank_you_page(mintaka_campaign, monkeypatch):
    """A worker who stays in a stage clicks the thank-you page's "Next task" (a POST to
    the stage's Accept, sent from the thank-you page) instead of opening the stage page
    again; the stage page is opened on entering a stage."""
    from campaigns.simulate import run as run_module

    seen: list[tuple[str, str, str]] = []
    real = run_module.local_app

    def recording_app():
        app = real()

        def wrapped(environ, start_response):
            referer = environ.get("HTTP_REFERER", "")
            seen.append((environ["REQUEST_METHOD"], environ["PATH_INFO"], referer))
            return app(environ, start_response)

        return wrapped

    monkeypatch.setattr(run_module, "local_app", recording_app)
    campaign = mintaka_campaign(slug="sim-next", topics=("art", "war"))
    campaign = campaign_start(campaign=campaign, to_state="live")
    result = simulate_crowd(campaign=campaign, workers=2, seed=5)
    assert result.ok, "\n".join(result.lines())

    accepts = [ref for method, path, ref in seen if method == "POST" and path.endswith("/accept/")]
    from_thanks = [ref for ref in accepts if re.search(r"/work/a/\d+/done/$", ref)]
    stage_pages = [p for m, p, _ in seen if m == "GET" and re.fullmatch(r"/work/s/\d+/", p)]
    assert from_thanks, accepts
    assert len(stage_pages) < len(accepts) / 2, (len(stage_pages), len(accepts))
    stored = Assignment.objects.filter(hit__stage__campaign=campaign, status__in=STORED)
    assert stored.count() == sum(t.submitted for t in result.stages.values()) > len(stage_pages)


def test_stages_with_work_read_again_only_after_an_opening(mintaka_campaign, monkeypatch):
    """The stages with work are read once per event that can open a place (a round's
    queue, an approval, a return), not after each submission: in between places are only
    taken, so the set read last still holds every stage with work. The run is the same
    as when the set is read before every turn, with far fewer reads."""
    from campaigns.simulate import crowd

    real = crowd._stages_with_work
    reads: list[int] = []

    def counted(**kwargs):
        reads.append(1)
        return real(**kwargs)

    monkeypatch.setattr(crowd, "_stages_with_work", counted)
    runs, read_counts = [], []
    for slug, fresh in (("sim-cached", False), ("sim-fresh", True)):
        if fresh:  # the set read before every turn, as before
            monkeypatch.setattr(
                crowd.CrowdSimulation,
                "_stages_with_work",
                lambda self: counted(
                    stage_ids=[s.pk for s in self.stages],
                    worker_ids=self._worker_ids,
                    now=crowd.timezone.now(),
                ),
            )
        reads.clear()
        campaign = mintaka_campaign(slug=slug, topics=("art", "war"))
        campaign = campaign_start(campaign=campaign, to_state="live")
        result = simulate_crowd(campaign=campaign, workers=3, seed=7, approve_all=True)
        assert result.ok, "\n".join(result.lines())
        runs.append(_run_signature(result, campaign))
        read_counts.append(len(reads))
    assert runs[0] == runs[1]
    submitted = sum(stage[1] for stage in runs[0][0])
    assert read_counts[1] >= submitted > 0
    assert read_counts[0] < read_counts[1] / 2, read_counts
