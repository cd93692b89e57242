"""Dataset exports: Mintaka's schema from a written, linked and accepted QA pair; the
split by seed with exact sizes; provenance rows with their lineage; collection metadata
with rejected work marked; pseudonyms, real ids with an audit; CSV formula cells
neutralised; the command, the API, the page; export → re-import gives the same data."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from campaigns.design.items import items_upload
from campaigns.design.services import stage_add, stage_link
from campaigns.exports import export_write
from campaigns.exports.mintaka import parse_ratios, split_of
from campaigns.models import Assignment, ExportAudit, Item, ItemSource, Stage
from campaigns.tasktypes.base import derived_external_id
from campaigns.work.decisions import assignment_approve, assignment_reject
from campaigns.work.handoff import handoff_run
from linking.models import EntityLinkResolution, ResolutionStatus
from tests.helpers import FakeTerminal, local_pipeline, progress_lines, submitted_assignment

pytestmark = pytest.mark.django_db

QUESTION = "Which river is longer, the Nile or the Amazon?"
NILE, AMAZON = QUESTION.index("Nile"), QUESTION.index("Amazon")


def _write(stage: Stage, question: str = QUESTION) -> Assignment:
    return submitted_assignment(stage, question=question)


@pytest.fixture
def linked(requester):
    """A QA pair written and approved, handed to answer linking, its answer linked
    (Q3392 the Nile) and its question linked in a question-linking stage."""
    campaign, writing, answer_linking = local_pipeline(requester, slug="export-me")
    question_linking = stage_add(
        campaign=campaign, name="Link questions", task_type="question_entity_linking"
    )
    stage_link(
        stage=answer_linking,
        next_stage=question_linking,
        handoff={"target": "question_entity_linking"},
    )
    written = _write(writing)
    assignment_approve(assignment=written, decided_by=requester, source="requester")
    assert handoff_run(assignment=written) == 1
    answer_item = Item.objects.get(stage=answer_linking)
    EntityLinkResolution.objects.create(
        item=answer_item,
        stage=answer_linking,
        hit=written.hit,
        status=ResolutionStatus.RESOLVED,
        links=[{"start": 4, "end": 8, "text": "Nile", "qid": "Q3392", "none": False}],
    )
    example_id = answer_item.external_id
    question_item = Item.objects.create(
        stage=question_linking,
        external_id=derived_external_id(
            example_id, "q", {"question": QUESTION, "answer": "The Nile"}
        ),
        data={"question": QUESTION, "answer": "The Nile"},
        source=ItemSource.UPLOADED,
    )
    EntityLinkResolution.objects.create(
        item=question_item,
        stage=question_linking,
        hit=written.hit,
        status=ResolutionStatus.DECIDED,
        links=[
            {"start": NILE, "end": NILE + 4, "text": "Nile", "qid": "Q3392", "none": False},
            {"start": AMAZON, "end": AMAZON + 6, "text": "Amazon", "qid": "Q3783", "none": False},
            {"start": 0, "end": 5, "text": "Which", "qid": None, "none": True},
        ],
    )
    return campaign, writing, written, example_id


def _export(campaign, name, **options) -> str:
    out = io.StringIO()
    export_write(campaign=campaign, name=name, out=out, **options)
    return out.getvalue()


def test_mintaka_schema(linked):
    campaign, _writing, _written, example_id = linked

    (example,) = json.loads(_export(campaign, "mintaka"))

    assert list(example) == [  # the release's key order
        "id", "question", "translations", "questionEntity", "answer", "category",
        "complexityType",
    ]  # fmt: skip
    assert example == {
        "id": example_id,
        "question": QUESTION,
        "translations": {},
        "questionEntity": [
            # Not in Wikidata: kept with null name and label, as the release does.
            {
                "name": None,
                "entityType": "entity",
                "label": None,
                "mention": "Which",
                "span": [0, 5],
            },
            {
                "name": "Q3392",
                "entityType": "entity",
                "label": example["questionEntity"][1]["label"],
                "mention": "Nile",
                "span": [NILE, NILE + 4],
            },
            {
                "name": "Q3783",
                "entityType": "entity",
                "label": example["questionEntity"][2]["label"],
                "mention": "Amazon",
                "span": [AMAZON, AMAZON + 6],
            },
        ],
        "answer": {
            "answerType": "entity",
            "answer": [{"name": "Q3392", "label": example["answer"]["answer"][0]["label"]}],
            "mention": "The Nile",
        },
        "category": "rivers",
        "complexityType": "comparative",
    }
    assert all(e["label"] for e in example["questionEntity"] if e["name"])


def test_mintaka_leaves_out_unapproved_and_types_answers(linked, requester):
    campaign, writing, *_ = linked
    waiting = _write(writing, "Is the Nile longer than the Amazon?")
    assert waiting.status == "submitted"
    assert len(json.loads(_export(campaign, "mintaka"))) == 1
    assignment_approve(assignment=waiting, decided_by=requester, source="requester")
    examples = json.loads(_export(campaign, "mintaka"))
    assert len(examples) == 2
    # "The Nile" to a yes/no question is still typed from the answer text.
    assert {e["answer"]["answerType"] for e in examples} == {"entity"}


def test_split_is_exact_and_reproducible(requester):
    campaign, writing, _ = local_pipeline(requester, slug="split", topics=tuple("abcdefghij"))
    for n in range(10):
        a = _write(writing, f"Which river number {n} is longer?")
        assignment_approve(assignment=a, decided_by=requester, source="requester")

    first = split_of(campaign=campaign, ratios=parse_ratios("0.7,0.1,0.2"), seed=7)
    again = split_of(campaign=campaign, ratios=parse_ratios("0.7,0.1,0.2"), seed=7)
    other = split_of(campaign=campaign, ratios=parse_ratios("0.7,0.1,0.2"), seed=8)

    assert first == again
    assert first != other
    sizes = {s: list(first.values()).count(s) for s in ("train", "dev", "test")}
    assert sizes == {"train": 7, "dev": 1, "test": 2}
    train = json.loads(_export(campaign, "mintaka", split="train", seed=7))
    assert {e["id"] for e in train} == {k for k, v in first.items() if v == "train"}
    with pytest.raises(ValueError, match="sum to 1"):
        parse_ratios("0.7,0.2,0.2")


def test_jsonl_rows_carry_lineage_and_pseudonyms(linked, requester):
    campaign, _writing, written, _ = linked
    linking_item = Item.objects.get(stage__task_type="answer_entity_linking")
    # An answer-linking assignment on the handed-on item, approved: its lineage is the writer.

    rows = [json.loads(line) for line in _export(campaign, "jsonl").splitlines()]

    (row,) = rows
    assert row["assignment"] == written.pk
    assert row["worker"] == written.worker.pseudonym
    assert row["lineage"] == []
    assert row["answers"] == written.answers
    assert written.worker.external_id not in _export(campaign, "jsonl")
    revealed = _export(campaign, "jsonl", reveal=True)
    assert written.worker.external_id in revealed
    assert linking_item.source_assignment_id == written.pk


def test_lineage_runs_up_the_pipeline(requester):
    campaign, writing, linking = local_pipeline(requester, slug="lineage-rows")
    written = _write(writing)
    assignment_approve(assignment=written, decided_by=requester, source="requester")
    handoff_run(assignment=written)
    from campaigns.work.publishing import stage_publish

    stage_publish(stage=linking)
    link_work = Assignment.objects.create(
        hit=linking.hits.get(),
        worker=written.worker,
        provider="local",
        status="approved",
        answers={"items": []},
        accepted_at=written.accepted_at,
        submitted_at=written.submitted_at,
    )

    rows = {r["assignment"]: r for r in map(json.loads, _export(campaign, "jsonl").splitlines())}

    assert rows[link_work.pk]["lineage"] == [
        {"stage": writing.pk, "assignment": written.pk, "worker": written.worker.pseudonym}
    ]


def test_collection_metadata_marks_rejected_work(requester):
    campaign, writing, _ = local_pipeline(requester, slug="metadata")
    good = _write(writing)
    bad = _write(writing, "Which lake is deeper?")
    assignment_approve(assignment=good, decided_by=requester, source="requester")
    assignment_reject(assignment=bad, decided_by=requester, source="requester", reason="Vague.")

    rows = list(csv.DictReader(io.StringIO(_export(campaign, "collection-metadata"))))

    by_id = {r["assignment_id"]: r for r in rows}
    assert by_id[str(good.pk)]["approval_status"] == "approved"
    assert by_id[str(bad.pk)]["rejected"] == "yes"
    assert by_id[str(good.pk)]["worker"] == good.worker.pseudonym
    assert by_id[str(good.pk)]["reward"] == f"{good.hit.reward:.2f}"
    good.refresh_from_db()
    assert good.work_seconds is not None
    assert by_id[str(good.pk)]["work_time_seconds"] == str(good.work_seconds)
    assert by_id[str(good.pk)]["submit_time"] == good.submitted_at.isoformat()  # type: ignore[union-attr]


def test_csv_neutralises_formula_cells(requester):
    campaign, writing, _ = local_pipeline(requester, slug="formulas")
    writing.name = '=HYPERLINK("http://evil")'
    writing.save(update_fields=["name"])
    a = _write(writing)
    assignment_approve(assignment=a, decided_by=requester, source="requester")

    (row,) = list(csv.DictReader(io.StringIO(_export(campaign, "csv"))))

    assert row["stage"] == '\'=HYPERLINK("http://evil")'


def test_jsonl_export_reimports_as_the_same_items(linked, requester):
    campaign, writing, written, _ = linked
    rows = [json.loads(line) for line in _export(campaign, "jsonl").splitlines()]
    target = stage_add(campaign=campaign, name="Again", task_type="question_writing")
    upload = "\n".join(
        json.dumps({"external_id": r["item_external_id"], **r["item_data"]}) for r in rows
    )

    items_upload(stage=target, content=upload.encode(), filename="again.jsonl")

    originals = {
        i.external_id: i.data for i in Item.objects.filter(stage=writing, hits=written.hit_id)
    }
    copies = {i.external_id: i.data for i in Item.objects.filter(stage=target)}
    assert copies == originals


def test_command_writes_files_and_audits_reveal(linked, tmp_path):
    campaign, *_ = linked
    out = io.StringIO()
    call_command(
        "export",
        campaign.slug,
        "--format",
        "mintaka",
        "--output",
        str(tmp_path / "m"),
        "--split",
        "0.7,0.1,0.2",
        stdout=out,
    )
    summary = json.loads(out.getvalue())
    assert sum(summary["rows"].values()) == 1
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == [
        "mintaka_dev.json",
        "mintaka_test.json",
        "mintaka_train.json",
    ]
    call_command(
        "export",
        campaign.slug,
        "--format",
        "csv",
        "--output",
        str(tmp_path / "e.csv"),
        "--reveal-worker-ids",
        stdout=io.StringIO(),
    )
    assert (
        ExportAudit.objects.filter(
            campaign=campaign, via="command", export_format="csv", revealed_worker_ids=True
        ).count()
        == 1
    )
    with pytest.raises(CommandError, match="No campaign"):
        call_command("export", "nope", "--format", "csv", "--output", str(tmp_path / "x"))
    with pytest.raises(CommandError, match="mintaka, hf and croissant formats only"):
        call_command(
            "export",
            campaign.slug,
            "--format",
            "csv",
            "--output",
            str(tmp_path / "x"),
            "--split",
            "0.5,0.5,0",
        )


def test_api_lists_and_streams_exports(linked, token_client, requester):
    campaign, _writing, written, example_id = linked
    base = f"/api/v1/campaigns/{campaign.slug}/exports/"

    listed = token_client.get(base).json()
    assert [f["name"] for f in listed] == [
        "mintaka",
        "graphquestions",
        "jsonl",
        "csv",
        "collection-metadata",
        "answer-agreement",
        "mturk-csv",
        "hf",
        "croissant",
    ]
    mturk = token_client.get(base + "mturk-csv/")
    rows = list(csv.DictReader(io.StringIO(b"".join(mturk.streaming_content).decode())))
    assert rows
    assert {r["WorkerId"] for r in rows if r["WorkerId"]} == {written.worker.pseudonym}

    response = token_client.get(base + "mintaka/?split=all")
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="{campaign.slug}-mintaka.json"'
    body = b"".join(response.streaming_content)
    assert json.loads(body)[0]["id"] == example_id

    assert token_client.get(base + "nope/").status_code == 404
    bad = token_client.get(base + "mintaka/?ratios=1,1,1&split=sideways")
    assert bad.status_code == 400
    assert set(bad.json()) >= {"ratios", "split"}

    unconfirmed = token_client.get(base + "jsonl/?reveal_worker_ids=true")
    assert unconfirmed.status_code == 400
    assert "confirm" in unconfirmed.json()
    revealing = ExportAudit.objects.filter(revealed_worker_ids=True)
    assert not revealing.exists()
    revealed = token_client.get(base + f"jsonl/?reveal_worker_ids=true&confirm={campaign.slug}")
    assert written.worker.external_id.encode() in b"".join(revealed.streaming_content)
    assert revealing.get().user == requester
    assert revealing.get().row_counts == {"all": 1}


def test_collaborator_cannot_reveal(linked, other_requester):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    campaign, *_ = linked
    campaign.collaborators.add(other_requester)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=other_requester).key}")
    base = f"/api/v1/campaigns/{campaign.slug}/exports/csv/"
    assert client.get(f"{base}?reveal_worker_ids=true&confirm={campaign.slug}").status_code == 403
    assert not ExportAudit.objects.exists()  # refused before anything was exported
    assert client.get(f"/api/v1/campaigns/{campaign.slug}/exports/csv/").status_code == 200
    assert not ExportAudit.objects.filter(revealed_worker_ids=True).exists()


def test_page_downloads(linked, alice_client, bob_client):
    campaign, *_ = linked
    page = alice_client.get(
        reverse("frontend:campaign-detail", args=[campaign.slug])
    ).content.decode()
    url = reverse("frontend:campaign-export", kwargs={"slug": campaign.slug, "name": "mintaka"})
    assert f'href="{url}?split=train"' in page
    response = alice_client.get(url)
    assert response.status_code == 200
    assert len(json.loads(b"".join(response.streaming_content))) == 1
    assert bob_client.get(url).status_code == 404
    assert alice_client.get(url + "?split=sideways").status_code == 404


def test_command_shows_progress_on_a_terminal_and_nothing_in_a_log(linked, tmp_path):
    campaign = linked[0]
    terminal, logged = FakeTerminal(), io.StringIO()
    for name in ("mintaka", "hf"):
        call_command(
            "export", campaign.slug, "--format", name, "--output", str(tmp_path / name),
            stdout=io.StringIO(), stderr=terminal,
        )  # fmt: skip
        call_command(
            "export", campaign.slug, "--format", name, "--output", str(tmp_path / f"{name}-2"),
            stdout=io.StringIO(), stderr=logged,
        )  # fmt: skip
    drawn = progress_lines(terminal)
    assert drawn[0].startswith("export mintaka 0 rows")
    assert any(line.startswith("export mintaka 1 rows") for line in drawn)
    assert drawn[-1].startswith("export hf 1 rows")
    assert terminal.getvalue().count("\n") == 2  # one line per export
    assert logged.getvalue() == ""
