"""Optional: push an ``hf`` export folder to the Hugging Face Hub with
``huggingface_hub``. Only when a token is given or ``HF_TOKEN`` is set; nothing else in
qaportal needs the Hub. Repositories are created private unless asked otherwise."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")


class HubNotConfigured(Exception):
    """No token: set ``HF_TOKEN`` (a write token of the account or organisation)."""


@dataclass(frozen=True)
class HubPush:
    repo_url: str
    commit_url: str
    commit_oid: str
    private: bool


def hub_token() -> str | None:
    """The Hub token from the environment (``HF_TOKEN``), None when unset or blank."""
    return os.environ.get("HF_TOKEN", "").strip() or None


def hub_dataset_url(repo_id: str, *, endpoint: str | None = None) -> str:
    """The page of the dataset repository ``repo_id`` on the Hub."""
    base = endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    return f"{base.rstrip('/')}/datasets/{repo_id}"


def hub_push(
    *,
    folder: Path,
    repo_id: str,
    token: str | None = None,
    private: bool = True,
    endpoint: str | None = None,
    commit_message: str = "Dataset export from qaportal",
) -> HubPush:
    """Create the dataset repository ``repo_id`` (private by default; an existing one is
    reused as it is) and commit ``folder``'s files to its main branch. ``token``
    defaults to ``HF_TOKEN`` (``HubNotConfigured`` without one); ``endpoint`` to
    ``HF_ENDPOINT`` as it is now, else the public Hub. Errors of the Hub come back as
    ``huggingface_hub``'s HTTP errors, with its message."""
    if not REPO_ID.match(repo_id):
        raise ValueError("A Hub repository id is 'owner/name' (letters, digits, '-', '_', '.').")
    token = token or hub_token()
    if token is None:
        raise HubNotConfigured("Set HF_TOKEN to push to the Hugging Face Hub.")
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint or os.environ.get("HF_ENDPOINT") or None, token=token)
    repo = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    commit = api.upload_folder(
        repo_id=repo_id,
        repo_type="dataset",
        folder_path=folder,
        commit_message=commit_message,
    )
    return HubPush(
        repo_url=str(repo), commit_url=commit.commit_url, commit_oid=commit.oid, private=private
    )
