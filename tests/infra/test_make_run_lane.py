"""The CI lane of the README's ``make run``: the whole job on the embedded default
(SQLite, Celery eager, the local workforce), against the real ``make run``.

The four recipes are loaded, piloted small, worked by the crowd simulator and approved
(``tests/infra/lane_pilots.py``, in a process of its own with ``make run``'s
environment and database). Then, over HTTP against the running server, every export
format of every campaign is started as a job through the API and through the
campaign page's Export button and downloaded whole (row count and checksum as named),
and downloaded directly from the page where the page offers it. The Hugging Face
folder loads with ``datasets.load_dataset`` and its ``croissant.json`` with
mlcroissant, records included. Last, a browser smoke test: Debian's chromium logs in
as the demo requester, exports the Mintaka pilot's folder with the page's button,
follows the progress bar and downloads the file.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.infra.conftest import REPO_ROOT, clean_env, free_port, stop_process_group
from tests.infra.test_run_command import start_make_run, wait_until_serving

RECIPES = ("mintaka", "whyqa", "graphquestions", "nangia")
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
# Formats whose file may be empty for a recipe that does not make their rows.
MAY_BE_EMPTY = {"graphquestions", "answer-agreement"}


def _formats() -> list[str]:
    from campaigns.exports import FORMATS

    return list(FORMATS)


def _checked(response: httpx.Response, job: dict[str, Any]) -> bytes:
    assert response.status_code == 200, response.text[:500]
    body = response.content
    assert hashlib.sha256(body).hexdigest() == response.headers["X-Checksum-SHA256"]
    assert int(response.headers["X-Row-Count"]) == job["row_count"]
    return body


def _api_export(api: httpx.Client, slug: str, name: str) -> bytes:
    started = api.post(f"/api/v1/campaigns/{slug}/exports/{name}/jobs/?ratios=0.6,0.2,0.2")
    assert started.status_code == 202, started.text
    job = api.get(started.headers["Location"]).json()
    assert job["status"] == "done", (slug, name, job)
    return _checked(api.get(job["download_url"]), job)


def _csrf(page: httpx.Response) -> str:
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert match, page.text[:500]
    return match.group(1)


def _login(base: str) -> httpx.Client:
    web = httpx.Client(base_url=base, timeout=120)
    login = web.get("/accounts/login/")
    done = web.post(
        "/accounts/login/",
        data={
            "username": "demo",
            "password": "demo-requester",
            "csrfmiddlewaretoken": _csrf(login),
        },
        headers={"Referer": base + "/accounts/login/"},
    )
    assert done.status_code == 302, done.text[:500]
    return web


def _page_export(web: httpx.Client, base: str, slug: str, name: str) -> tuple[bytes, bytes]:
    """The Export button's job and its file, then the direct download if offered."""
    detail = web.get(f"/campaigns/{slug}/")
    assert detail.status_code == 200
    action = f"/campaigns/{slug}/export/{name}/job/"
    assert f'action="{action}"' in detail.text
    started = web.post(
        action, data={"csrfmiddlewaretoken": _csrf(detail)}, headers={"Referer": base}
    )
    assert started.status_code == 302, started.text[:500]
    job_page = started.headers["Location"]
    assert web.get(job_page).status_code == 200
    status = web.get(job_page.rstrip("/") + "/status/").json()
    assert status["status"] == "done", (slug, name, status)
    body = _checked(web.get(status["download_url"]), status)
    direct = b""
    direct_url = f"/campaigns/{slug}/export/{name}/"
    if f'href="{direct_url}"' in detail.text:
        response = web.get(direct_url)
        assert response.status_code == 200, (slug, name, response.text[:500])
        direct = response.content
    return body, direct


def _check_file(name: str, body: bytes, where: Path) -> None:
    if name in MAY_BE_EMPTY and not body:
        return
    assert body, name
    if name == "hf":
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            archive.testzip()
    elif name in ("mintaka", "croissant"):
        json.loads(body)
    elif name in ("jsonl", "graphquestions"):
        for line in body.decode().splitlines():
            json.loads(line)


def _load_hf_folder(body: bytes, where: Path, slug: str) -> int:
    """``datasets.load_dataset`` on the unzipped folder and mlcroissant's records from
    its ``croissant.json``; the rows loaded."""
    import datasets
    import mlcroissant as mlc

    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        archive.extractall(where)
    folder = where / slug
    loaded = datasets.load_dataset(str(folder), cache_dir=str(where / "cache"))
    rows = sum(len(split) for split in loaded.values())
    card = (folder / "README.md").read_text()
    assert f"({rows:,} accepted examples: the rows of this dataset)" in card
    dataset = mlc.Dataset(jsonld=str(folder / "croissant.json"))
    record_sets = [r.uuid for r in dataset.metadata.record_sets]
    assert record_sets
    records = sum(sum(1 for _ in dataset.records(record_set=uuid)) for uuid in record_sets)
    assert records == rows
    return rows


@pytest.mark.slow(seconds=60)
def test_the_four_recipes_end_to_end_on_make_run(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    var_dir = tmp_path / "var"
    log_path = tmp_path / "make-run.log"
    process = start_make_run(port, var_dir, log_path)
    try:
        wait_until_serving(base, process, log_path)
        token = re.search(r"API token: (\S+)", log_path.read_text())
        assert token, log_path.read_text()

        pilots = subprocess.run(
            [sys.executable, str(REPO_ROOT / "tests/infra/lane_pilots.py"), "demo", *RECIPES],
            cwd=REPO_ROOT,
            env=clean_env(DEBUG="1", PORT=str(port), QAPORTAL_VAR_DIR=str(var_dir)),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert pilots.returncode == 0, pilots.stderr[-3000:]
        runs = json.loads(pilots.stdout.strip().splitlines()[-1])
        for name in RECIPES:
            run = runs[name]
            assert run["ok"], run
            assert run["server_errors"] == 0, run
            assert run["approved"] > 0, run

        api = httpx.Client(
            base_url=base, timeout=120, headers={"Authorization": f"Token {token.group(1)}"}
        )
        for recipe in RECIPES:
            # The counters the campaign page, the progress API and the review queue
            # read move on SQLite too (migration 0023 restored their triggers).
            progress = api.get(f"/api/v1/campaigns/{runs[recipe]['slug']}/progress/")
            assert progress.status_code == 200, progress.text[:500]
            approved = sum(
                stage["assignments"].get("approved", 0) for stage in progress.json()["stages"]
            )
            assert progress.json()["done"] >= approved == runs[recipe]["approved"] > 0, (
                recipe,
                progress.json(),
            )
        web = _login(base)
        rows: dict[str, int] = {}
        for recipe in RECIPES:
            slug = runs[recipe]["slug"]
            for name in _formats():
                by_api = _api_export(api, slug, name)
                by_page, direct = _page_export(web, base, slug, name)
                for body in (by_api, by_page, direct):
                    _check_file(name, body, tmp_path)
                if name == "hf":
                    rows[recipe] = _load_hf_folder(by_page, tmp_path / f"hf-{recipe}", slug)
                if name == "mintaka" and recipe == "mintaka":
                    examples = json.loads(by_api)
                    assert examples
                    assert len({e["id"] for e in examples}) == len(examples)
                    assert json.loads(direct) == examples
        assert all(rows.values()), rows

        _browser_smoke(base, runs["mintaka"]["slug"], tmp_path)
    finally:
        stop_process_group(process)


def _browser_smoke(base: str, slug: str, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM_ARGS

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} not found: apt-get install chromium"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(base_url=base, accept_downloads=True)
            page = context.new_page()
            page.set_default_timeout(60_000)
            page.goto("/accounts/login/")
            page.get_by_label("Username").fill("demo")
            page.get_by_label("Password").fill("demo-requester")
            page.get_by_role("button", name="Log in").click()
            page.wait_for_url("**/")
            page.goto(f"/campaigns/{slug}/#export")
            form = page.locator("form.export-job").filter(has_text="Hugging Face dataset")
            form.get_by_role("button", name="Export").click()
            page.wait_for_url("**/jobs/*/")
            page.wait_for_function("document.getElementById('job-progress').value === 1")
            assert page.locator("#job-status").inner_text() == "done"
            checksum = page.locator("#job-checksum").inner_text()
            with page.expect_download() as info:
                page.locator("#job-download").click()
            body = Path(info.value.path()).read_bytes()
            assert hashlib.sha256(body).hexdigest() == checksum
            assert info.value.suggested_filename.endswith(".zip")
            with zipfile.ZipFile(io.BytesIO(body)) as archive:
                assert f"{slug}/README.md" in archive.namelist()
        finally:
            browser.close()
