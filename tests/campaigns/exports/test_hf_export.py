"""The ``hf`` export (a folder ``datasets`` loads, with card, Croissant and datasheet) and
the ``croissant`` export: loaded with ``datasets`` (splits, features, rows equal to the
accepted examples), Croissant validated and its records read by ``mlcroissant``, the
card's figures equal to the dashboard's, Mintaka's recipe with the released Mintaka
features and its 70/10/20 split, every export recorded in the audit, the command, the
API (croissant and the zipped folder), the page."""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from collections.abc import Iterator
from decimal import Decimal
from html import unescape
from pathlib import Path
from typing import cast

import pytest
from django.core.management import CommandError, call_command
from django.http import StreamingHttpResponse
from django.test import Client
from django.urls import reverse

from campaigns.exports.card_facts import campaign_facts
from campaigns.exports.hf import hf_folder_write
from campaigns.exports.hf_rows import examples_features
from campaigns.exports.services import campaign_hf_export
from campaigns.insights.money import campaign_costs
from campaigns.models import Assignment, AssignmentStatus, ExportAudit
from campaigns.work.decisions import assignment_approve
from tests.campaigns.exports.test_exports import _write
from tests.helpers import local_pipeline
from tests.validation.db_helpers import hits, make_stage, mc_item, submit, worker

pytestmark = pytest.mark.django_db

MINTAKA_JSON = Path("/work/shared/data/mintaka/mintaka_dev_sample.json")


def _streamed(response: object) -> bytes:
    """The body of a streamed (file) response."""
    content = cast(StreamingHttpResponse, response).streaming_content
    assert isinstance(content, Iterator)
    return b"".join(content)


def _load(folder: Path):
    """The folder as ``datasets`` loads it, with a cache of its own (``datasets`` keys
    local folders by file names and sizes, so another test's folder could answer)."""
    import datasets

    cache = folder.parent / f"{folder.name}-datasets-cache"
    return datasets.load_dataset(str(folder), cache_dir=str(cache))


@pytest.fixture
def agreed():
    """The dashboard's own worked example: 3 items x 3 workers on a validation stage at
    0.50 USD, alpha 0.6, gold 3/6, median 90 s, so 20.00 USD/h; one rejection."""

    def data(n):
        return {**mc_item(n), **({"writer_correct": 2} if n == 1 else {})}

    # The in-house team is paid 0.50 an assignment outside qaportal (the stage says so):
    # its wage is a fact of the data.
    stage = make_stage(
        items=3,
        gold={0: 1, 2: 2},
        data=data,
        reward=Decimal("0.50"),
        show_reward_to_local_workers=True,
    )
    w1, w2, w3 = worker("a"), worker("b"), worker("c")
    labels = {w1: (0, 0, 2), w2: (0, 0, 2), w3: (0, 2, 2)}
    seconds = {w1: 60, w2: 90, w3: 240}
    for n, hit in enumerate(hits(stage)):
        for who in (w1, w2, w3):
            submit(
                hit,
                who,
                {"choice": labels[who][n]},
                seconds=seconds[who],
                status=AssignmentStatus.APPROVED,
            )
    Assignment.objects.filter(worker=w3).order_by("pk").filter(
        pk=Assignment.objects.filter(worker=w3).earliest("pk").pk
    ).update(status=AssignmentStatus.REJECTED, decision_source="rule:gold_accuracy")
    return stage


def test_hf_folder_loads_with_splits_features_and_accepted_rows(agreed, tmp_path):
    campaign = agreed.campaign
    result = hf_folder_write(campaign=campaign, target=tmp_path / "out")

    dataset = _load(tmp_path / "out")
    accepted = Assignment.objects.filter(
        hit__stage__campaign=campaign, status=AssignmentStatus.APPROVED
    ).count()
    assert accepted == 8
    assert sum(len(split) for split in dataset.values()) == accepted
    # 8 at 70/10/20: 5 train, 0 dev (no file: datasets refuses an empty split), 3 test
    assert {name: len(split) for name, split in dataset.items()} == {"train": 5, "test": 3}
    assert result.contents.split_rows == {"train": 5, "test": 3}
    assert dataset["train"].features == examples_features()
    rows = [row for split in dataset.values() for row in split]
    assert {r["assignment"] for r in rows} == set(
        Assignment.objects.filter(
            hit__stage__campaign=campaign, status=AssignmentStatus.APPROVED
        ).values_list("pk", flat=True)
    )
    # JSON columns come back as objects; workers as pseudonyms only
    assert all(isinstance(r["answers"], dict) for r in rows)
    assert {r["worker"] for r in rows} <= {worker(n).pseudonym for n in "abc"}
    assert not {"a", "b", "c"} & {r["worker"] for r in rows}
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "README.md",
        "croissant.json",
        "data",
        "datasheet.md",
    ]


def test_card_yaml_header_is_what_the_hub_reads(agreed, tmp_path):
    from huggingface_hub import DatasetCard

    hf_folder_write(campaign=agreed.campaign, target=tmp_path, license="cc-by-4.0", version="1.2.0")
    card = DatasetCard.load(tmp_path / "README.md")
    data = card.data.to_dict()
    assert data["license"] == "cc-by-4.0"
    assert data["language"] == ["en"]
    assert data["task_categories"] == ["question-answering"]
    assert data["size_categories"] == ["n<1K"]
    assert data["configs"][0]["data_files"] == [
        {"split": "train", "path": "data/train-00000-of-00001.parquet"},
        {"split": "test", "path": "data/test-00000-of-00001.parquet"},
    ]
    splits = {s["name"]: s["num_examples"] for s in data["dataset_info"]["splits"]}
    assert splits == {"train": 5, "test": 3}
    assert {f["name"] for f in data["dataset_info"]["features"]} == set(examples_features())
    assert "- Version: 1.2.0" in card.text


def _dashboard(client: Client, slug: str) -> str:
    html = client.get(reverse("frontend:campaign-quality", args=[slug])).content.decode()
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


def test_an_unpaid_workforce_card_and_dashboard_show_time_not_money(agreed, tmp_path):
    """Issue 36, point 8: without a planning rate, an in-house team's card states no
    reward, wage or wage floor, and the dashboard no wage."""
    campaign = agreed.campaign
    agreed.__class__.objects.filter(pk=agreed.pk).update(show_reward_to_local_workers=False)
    client = Client()
    client.force_login(campaign.owner)

    dashboard = _dashboard(client, campaign.slug)
    hf_folder_write(campaign=campaign, target=tmp_path)
    card = (tmp_path / "README.md").read_text()

    assert "Effective hourly wage" not in dashboard
    assert "Median work time 90 s" in dashboard
    assert "## Work time" in card
    assert "## Pay" not in card
    assert "Wage floor" not in card
    row = next(line for line in card.splitlines() if line.startswith(f"| {agreed.name} |"))
    assert "USD" not in row
    assert "| unpaid |" in row


def test_card_figures_equal_the_dashboards(agreed, tmp_path):
    campaign = agreed.campaign
    client = Client()
    client.force_login(campaign.owner)
    dashboard = _dashboard(client, campaign.slug)
    result = hf_folder_write(campaign=campaign, target=tmp_path)
    card = (tmp_path / "README.md").read_text()

    def shown(label: str) -> str:
        match = re.search(re.escape(label) + r" (\S+(?: %| USD/h)?)", dashboard)
        assert match, label
        return match.group(1)

    wage, alpha, agreement = (
        shown("Effective hourly wage"),
        shown("Krippendorff's alpha"),
        shown("Percent agreement"),
    )
    assert wage == "20.00 USD/h"  # 0.50 USD over the median 90 s
    assert re.fullmatch(r"0\.\d{3}", alpha)
    row = next(line for line in card.splitlines() if line.startswith(f"| {agreed.name} |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    header = [
        c.strip() for c in card.splitlines()[card.splitlines().index(row) - 2].strip("|").split("|")
    ]
    by_name = dict(zip(header, cells, strict=True))
    assert by_name["hourly wage"] == wage
    assert by_name["alpha"] == alpha
    assert by_name["agreement"] == agreement
    assert f"approval rate {shown('Approval rate')}" in card
    assert f"gold accuracy {shown('Gold accuracy')} (3/6)" in card
    quality = campaign_facts(campaign=campaign).stages[0].quality
    assert quality is not None
    assert (by_name["stored"], by_name["approved"], by_name["rejected"]) == (
        str(quality.assignments),
        str(quality.approved),
        str(quality.rejected),
    )
    assert (by_name["workers"], by_name["median time"]) == ("3", "90 s")
    costs = campaign_costs(campaign=campaign)
    rows = sum(result.contents.split_rows.values())
    assert rows == costs.accepted_examples  # one stage: its approved work is the dataset
    assert f"({rows:,} accepted examples: the rows of this dataset)" in card
    assert "3 distinct workers stored work" in card
    assert "1 by rule:gold_accuracy" in card
    # the Croissant file carries the same figures
    croissant = json.loads((tmp_path / "croissant.json").read_text())
    analysis = croissant["rai:dataAnnotationAnalysis"]  # one text, or a list of them
    analysis = analysis if isinstance(analysis, str) else " ".join(analysis)
    assert f"Krippendorff's alpha {alpha}" in analysis
    assert f"effective hourly wage {wage}" in croissant["rai:dataCollection"]


def test_croissant_validates_and_loads_its_records(agreed, tmp_path):
    import mlcroissant as mlc

    result = hf_folder_write(campaign=agreed.campaign, target=tmp_path)
    jsonld = json.loads((tmp_path / "croissant.json").read_text())
    assert jsonld["conformsTo"] == "http://mlcommons.org/croissant/1.1"
    for key in (
        "rai:dataCollection",
        "rai:dataCollectionType",
        "rai:dataAnnotationProtocol",
        "rai:dataAnnotationPlatform",
        "rai:dataAnnotationAnalysis",
        "rai:annotatorDemographics",
        "rai:dataLimitations",
        "rai:personalSensitiveInformation",
    ):
        assert jsonld[key], key
    assert "Compensation." in jsonld["rai:dataCollection"]

    dataset = mlc.Dataset(jsonld=tmp_path / "croissant.json")  # raises on validation errors
    assert not dataset.metadata.ctx.issues.errors
    for split, count in result.contents.split_rows.items():
        records = list(dataset.records(split))
        assert len(records) == count
        assert {r[f"{split}/assignment"] for r in records} <= set(
            Assignment.objects.values_list("pk", flat=True)
        )
    # each file object names its file and that file's sha256
    files = {f["contentUrl"]: f["sha256"] for f in jsonld["distribution"]}
    assert files == {
        path: hashlib.sha256((tmp_path / path).read_bytes()).hexdigest()
        for path in result.contents.files
    }


def _mintaka_campaign(requester, n: int):
    campaign, writing, _ = local_pipeline(
        requester, slug="mintaka-hf", topics=tuple(f"t{i}" for i in range(n))
    )
    campaign.recipe = "mintaka"
    campaign.save(update_fields=["recipe"])
    for i in range(n):
        written = _write(writing, f"Which river number {i} is longer?")
        assignment_approve(assignment=written, decided_by=requester, source="requester")
    return campaign


def test_mintaka_recipe_loads_with_the_released_features(requester, tmp_path):
    import datasets

    campaign = _mintaka_campaign(requester, 10)
    result = hf_folder_write(campaign=campaign, target=tmp_path)
    ours = _load(tmp_path)
    released = datasets.load_dataset(
        "json",
        data_files=str(MINTAKA_JSON),
        split="train",
        cache_dir=str(tmp_path.parent / f"{tmp_path.name}-released"),
    )

    assert ours["train"].features == released.features
    # Mintaka's 14,000 / 2,000 / 4,000: 70/10/20
    assert {name: len(split) for name, split in ours.items()} == {
        "train": 7,
        "dev": 1,
        "test": 2,
    }
    assert result.contents.shape == "mintaka"
    row = ours["train"][0]
    assert row["answer"]["answerType"] in {"entity", "string"}
    assert row["category"].startswith("t")
    assert "Sen, P., Aji, A. F., Saffari, A. (2022)" in (tmp_path / "README.md").read_text()


def test_every_export_is_recorded_with_its_contents(agreed, tmp_path):
    campaign = agreed.campaign
    first = campaign_hf_export(campaign=campaign, target=tmp_path / "a", version="1.0.0")
    second = campaign_hf_export(campaign=campaign, target=tmp_path / "b")
    audits = list(ExportAudit.objects.filter(campaign=campaign).order_by("pk"))
    assert [a.export_format for a in audits] == ["hf", "hf"]
    one, two = audits
    assert one.dataset_version == "1.0.0"
    assert one.campaign_state == "live"
    assert one.row_counts == {"train": 5, "test": 3}
    assert one.checksum.startswith("sha256:")
    assert len(one.checksum) == 71
    assert one.completed_at is not None
    assert not one.revealed_worker_ids
    # the same data gives the same checksum, and the default version comes from it
    assert two.checksum == one.checksum == first.contents.checksum
    assert two.dataset_version == one.checksum[7:19] == second.contents.version
    Assignment.objects.filter(status=AssignmentStatus.REJECTED).update(
        status=AssignmentStatus.APPROVED
    )
    third = campaign_hf_export(campaign=campaign, target=tmp_path / "c")
    assert third.contents.checksum != one.checksum
    assert sum(third.contents.split_rows.values()) == 9


def test_command_writes_the_folder_and_refuses_bad_options(agreed, tmp_path):
    campaign = agreed.campaign
    out = io.StringIO()
    call_command(
        "export",
        campaign.slug,
        "--format",
        "hf",
        "--output",
        str(tmp_path / "hf"),
        "--split",
        "0.5,0.25,0.25",
        "--seed",
        "3",
        "--license",
        "cc-by-4.0",
        stdout=out,
    )
    report = json.loads(out.getvalue())
    assert report["rows"] == {"train": 4, "dev": 2, "test": 2}
    assert report["checksum"] == ExportAudit.objects.get(export_format="hf").checksum
    assert {n: len(s) for n, s in _load(tmp_path / "hf").items()} == report["rows"]
    call_command(
        "export",
        campaign.slug,
        "--format",
        "croissant",
        "--output",
        str(tmp_path / "c.json"),
        stdout=io.StringIO(),
    )
    assert json.loads((tmp_path / "c.json").read_text())["@type"] == "sc:Dataset"
    with pytest.raises(CommandError, match="HF_TOKEN"):
        call_command(
            "export",
            campaign.slug,
            "--format",
            "hf",
            "--output",
            str(tmp_path / "x"),
            "--push-to-hub",
            "alice/data",
        )
    with pytest.raises(CommandError, match="hf format only"):
        call_command(
            "export",
            campaign.slug,
            "--format",
            "csv",
            "--output",
            str(tmp_path / "x.csv"),
            "--push-to-hub",
            "alice/data",
        )


def test_api_croissant_and_zipped_folder(agreed, tmp_path):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    campaign = agreed.campaign
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=campaign.owner).key}")
    base = f"/api/v1/campaigns/{campaign.slug}/exports/"

    names = [f["name"] for f in client.get(base).json()]
    assert names[-2:] == ["hf", "croissant"]
    response = client.get(base + "croissant/?version=2.0.0&license=cc-by-4.0")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/ld+json")
    jsonld = json.loads(_streamed(response))
    assert jsonld["version"] == "2.0.0"
    assert jsonld["license"] == "https://creativecommons.org/licenses/by/4.0/"

    response = client.get(base + "hf/?seed=1")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == f'attachment; filename="{campaign.slug}-hf.zip"'
    with zipfile.ZipFile(io.BytesIO(_streamed(response))) as zf:
        zf.extractall(tmp_path)
    assert sum(len(s) for s in _load(tmp_path / campaign.slug).values()) == 8
    audits = ExportAudit.objects.filter(campaign=campaign, via="api").order_by("pk")
    assert [(a.export_format, a.dataset_version) for a in audits][:1] == [("croissant", "2.0.0")]
    assert len(audits) == 2
    assert all(a.completed_at and a.row_counts for a in audits)

    bad = client.get(base + "hf/?version=../../etc&license=Not%20A%20License&ratios=2,0,0")
    assert bad.status_code == 400
    assert set(bad.json()) == {"version", "license", "ratios"}


def test_page_links_and_downloads_the_zip(agreed):
    campaign = agreed.campaign
    client = Client()
    client.force_login(campaign.owner)
    page = client.get(reverse("frontend:campaign-detail", args=[campaign.slug])).content.decode()
    assert reverse("frontend:campaign-export", args=[campaign.slug, "hf"]) in page
    assert reverse("frontend:campaign-datasheet", args=[campaign.slug]) in page
    response = client.get(reverse("frontend:campaign-export", args=[campaign.slug, "hf"]))
    assert response.status_code == 200
    with zipfile.ZipFile(io.BytesIO(_streamed(response))) as zf:
        assert f"{campaign.slug}/README.md" in zf.namelist()
    assert ExportAudit.objects.get(via="page").row_counts == {"train": 5, "test": 3}


def test_survey_demographics_are_counted_with_small_cells_hidden(agreed, tmp_path):
    from django.utils import timezone

    from campaigns.models import DetachedAnswer, Stage

    survey = Stage.objects.create(
        campaign=agreed.campaign,
        name="About you",
        position=5,
        task_type="survey",
        config={
            "anonymous": True,
            "questions": [
                {
                    "id": "lang",
                    "text": "First language?",
                    "kind": "single",
                    "options": ["English", "Spanish", "Other"],
                },
                {"id": "age", "text": "Age?", "kind": "number"},
            ],
        },
    )
    today = timezone.now().date()
    for lang in ["English"] * 6 + ["Spanish"] * 2:
        DetachedAnswer.objects.create(
            stage=survey, answers={"responses": {"lang": lang, "age": 30}}, submitted_on=today
        )
    hf_folder_write(campaign=agreed.campaign, target=tmp_path)
    card = (tmp_path / "README.md").read_text()
    assert "## Annotator demographics" in card
    assert "- First language? English: 6, Spanish: < 5, Other: 0" in card
    croissant = json.loads((tmp_path / "croissant.json").read_text())
    demographics = croissant["rai:annotatorDemographics"]
    assert "English: 6, Spanish: < 5" in (
        demographics if isinstance(demographics, str) else " ".join(demographics)
    )
    assert "Age?" not in card  # only choice questions are summarised
