"""A local stand-in for the Hugging Face Hub's HTTP API, enough for
``HfApi.create_repo`` and ``HfApi.upload_folder``: the same paths, JSON and NDJSON
bodies and status codes as the Hub, refusing what it refuses (no or wrong token: 401;
an existing repository: 409; a README whose YAML header does not parse: 400).

Every file is offered the ``regular`` upload mode in ``preupload`` (the Hub's answer
for small files), so files travel base64-encoded inside the commit; the fake refuses
LFS pointers, which it never asked for.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import yaml


@dataclass
class Repo:
    private: bool
    files: dict[str, bytes] = field(default_factory=dict)
    commits: list[str] = field(default_factory=list)


class FakeHub:
    def __init__(self, token: str) -> None:
        self.token = token
        self.repos: dict[str, Repo] = {}
        self.requests: list[tuple[str, str]] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                hub.handle(self)

            def do_GET(self) -> None:
                hub.handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeHub:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- the API ---------------------------------------------------------------------

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        path = request.path.split("?", 1)[0]
        self.requests.append((request.command, path))
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else b""
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return self.reply(
                request, 401, {"error": "Invalid credentials in Authorization header"}
            )
        if request.command == "POST" and path == "/api/repos/create":
            return self.create(request, json.loads(body))
        if request.command == "POST" and path == "/api/validate-yaml":
            return self.validate_yaml(request, json.loads(body))
        parts = path.split("/")
        # /api/datasets/{owner}/{name}/{preupload|commit}/{revision}
        if request.command == "POST" and len(parts) == 7 and parts[:3] == ["", "api", "datasets"]:
            repo_id = f"{parts[3]}/{parts[4]}"
            if repo_id not in self.repos:
                return self.reply(request, 404, {"error": "Repository not found"})
            if parts[5] == "preupload":
                return self.preupload(request, json.loads(body))
            if parts[5] == "commit" and parts[6] == "main":
                return self.commit(request, repo_id, body)
        return self.reply(request, 404, {"error": f"Not found: {path}"})

    def reply(self, request: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)

    def create(self, request: BaseHTTPRequestHandler, payload: dict[str, Any]) -> None:
        if payload.get("type") != "dataset":
            return self.reply(request, 400, {"error": "Only dataset repositories here"})
        repo_id = f"{payload['organization']}/{payload['name']}"
        url = f"{self.url}/datasets/{repo_id}"
        if repo_id in self.repos:
            return self.reply(
                request, 409, {"error": "You already created this dataset repo", "url": url}
            )
        self.repos[repo_id] = Repo(private=payload.get("visibility") == "private")
        return self.reply(request, 200, {"url": url, "name": repo_id, "id": repo_id})

    def validate_yaml(self, request: BaseHTTPRequestHandler, payload: dict[str, Any]) -> None:
        content = payload.get("content", "")
        if content.startswith("---"):
            header = content.split("---", 2)[1]
            try:
                yaml.safe_load(header)
            except yaml.YAMLError as exc:
                return self.reply(request, 400, {"errors": [{"message": str(exc)}]})
        return self.reply(request, 200, {"errors": [], "warnings": []})

    def preupload(self, request: BaseHTTPRequestHandler, payload: dict[str, Any]) -> None:
        files = [
            {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False, "oid": None}
            for f in payload["files"]
        ]
        return self.reply(request, 200, {"files": files, "commitOid": "0" * 40})

    def commit(self, request: BaseHTTPRequestHandler, repo_id: str, body: bytes) -> None:
        repo = self.repos[repo_id]
        summary = ""
        added: dict[str, bytes] = {}
        for line in body.splitlines():
            item = json.loads(line)
            if item["key"] == "header":
                summary = item["value"]["summary"]
            elif item["key"] == "file" and item["value"].get("encoding") == "base64":
                added[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
            else:
                return self.reply(request, 422, {"error": f"Unexpected operation {item['key']}"})
        if not summary:
            return self.reply(request, 400, {"error": "A commit needs a summary"})
        repo.files.update(added)
        oid = hashlib.sha1(body).hexdigest()
        repo.commits.append(summary)
        return self.reply(
            request,
            200,
            {
                "success": True,
                "commitOid": oid,
                "commitUrl": f"{self.url}/datasets/{repo_id}/commit/{oid}",
            },
        )
