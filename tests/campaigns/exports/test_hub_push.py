"""Pushing an ``hf`` export to the Hugging Face Hub with ``huggingface_hub``, against a
local fake of the Hub's HTTP API (``tests.campaigns.exports.fake_hub``): a private dataset
repository by default, every file of the folder committed as it is, the token
required, the Hub's refusals passed on."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from campaigns.exports.hf import hf_folder_write
from campaigns.exports.hub import HubNotConfigured, hub_push
from tests.campaigns.exports.fake_hub import FakeHub
from tests.campaigns.exports.test_hf_export import agreed  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db

TOKEN = "hf_test_write_token"


@pytest.fixture
def online(monkeypatch):
    """The Hub library online (a test run may set HF_HUB_OFFLINE) and no stray token."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)


def _files(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_push_creates_a_private_repo_with_every_file(agreed, tmp_path, online):  # noqa: F811
    hf_folder_write(campaign=agreed.campaign, target=tmp_path)
    with FakeHub(TOKEN) as hub:
        pushed = hub_push(folder=tmp_path, repo_id="alice/qa-data", token=TOKEN, endpoint=hub.url)
        repo = hub.repos["alice/qa-data"]
        assert repo.private
        assert repo.files == _files(tmp_path)
        assert pushed.private
        assert pushed.commit_url.startswith(f"{hub.url}/datasets/alice/qa-data/commit/")
        # again: the repository exists (409), it is reused and gets a second commit
        hub_push(folder=tmp_path, repo_id="alice/qa-data", token=TOKEN, endpoint=hub.url)
        assert len(repo.commits) == 2
        hub_push(
            folder=tmp_path, repo_id="alice/open", token=TOKEN, endpoint=hub.url, private=False
        )
        assert not hub.repos["alice/open"].private


def test_push_needs_a_valid_token(agreed, tmp_path, online):  # noqa: F811
    from huggingface_hub.errors import HfHubHTTPError

    hf_folder_write(campaign=agreed.campaign, target=tmp_path)
    with pytest.raises(HubNotConfigured):
        hub_push(folder=tmp_path, repo_id="alice/qa-data")
    with pytest.raises(ValueError, match="owner/name"):
        hub_push(folder=tmp_path, repo_id="../etc", token=TOKEN)
    with FakeHub(TOKEN) as hub:
        with pytest.raises(HfHubHTTPError) as refused:
            hub_push(folder=tmp_path, repo_id="alice/qa-data", token="wrong", endpoint=hub.url)
        assert refused.value.response.status_code == 401
        assert not hub.repos


def test_command_pushes_with_hf_token(agreed, tmp_path, online, monkeypatch):  # noqa: F811
    with FakeHub(TOKEN) as hub:
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        out = io.StringIO()
        call_command(
            "export",
            agreed.campaign.slug,
            "--format",
            "hf",
            "--output",
            str(tmp_path / "hf"),
            "--push-to-hub",
            "alice/qa-data",
            stdout=out,
        )
        report = json.loads(out.getvalue())
        repo = hub.repos["alice/qa-data"]
        assert repo.private
        assert repo.files == _files(tmp_path / "hf")
        assert repo.commits == [f"{agreed.campaign.name}: version {report['version']}"]
        assert report["hub"]["commit"].startswith(hub.url)
        url = f"{hub.url}/datasets/alice/qa-data"
        assert json.loads(repo.files["croissant.json"])["url"] == url
        assert f"- Published at: {url}" in repo.files["README.md"].decode()
