"""A minimal Hugging Face Hub on 127.0.0.1, serving local directories as model or dataset repos (tests only).

It answers the three requests ``huggingface_hub.snapshot_download`` (2.x), ``hf_hub_download`` and
``datasets.load_dataset`` make — ``GET /api/models/<repo>/revision/<rev>`` (the commit),
``GET /api/models/<repo>/tree/<commit>[/<folder>]`` (the files and folders; every one below with
``recursive=true``) and ``HEAD``/``GET /<repo>/resolve/<rev>/<file>`` (metadata headers, then the bytes) —
and the Hub's 404 error codes, so the real client code (cache layout, refs, offline fallback) runs against
it; a dataset repo answers the same routes under ``/api/datasets/`` and ``/datasets/``. Point a client at
it with ``HF_ENDPOINT=<server.url>``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit


class Repo:
    """One repo: a directory served at one commit, reachable by the commit hash and by ``branches``."""

    def __init__(self, directory: Path, branches: tuple[str, ...] = ("main",)) -> None:
        self.directory = Path(directory)
        self.files = sorted(str(p.relative_to(directory)) for p in self.directory.rglob("*") if p.is_file())
        digest = hashlib.sha1()
        for name in self.files:
            digest.update(name.encode() + b"\0" + (self.directory / name).read_bytes())
        self.commit = digest.hexdigest()
        self.branches = branches

    def resolves(self, revision: str) -> bool:
        return revision == self.commit or revision in self.branches


class HubServer:
    """``with HubServer({"org/name": Repo(dir)}) as hub:`` serves the repos at ``hub.url``; ``hub.requests``
    lists the (method, path) pairs received."""

    def __init__(self, repos: dict[str, Repo]) -> None:
        self.repos = repos
        self.requests: list[tuple[str, str]] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> HubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep pytest output clean
                pass

            def do_GET(self) -> None:
                server.route(self, body=True)

            def do_HEAD(self) -> None:
                server.route(self, body=False)

        return Handler

    def route(self, request: BaseHTTPRequestHandler, body: bool) -> None:
        parts = [unquote(part) for part in urlsplit(request.path).path.strip("/").split("/")]
        self.requests.append((request.command, "/" + "/".join(parts)))
        if parts[:2] == ["api", "datasets"]:  # dataset repos: the same routes under their own prefix
            parts[1] = "models"
        elif parts[0] == "datasets":
            parts = parts[1:]
        if parts[:2] == ["api", "models"] and len(parts) >= 6 and parts[4] in ("revision", "tree"):
            repo = self._repo(request, "/".join(parts[2:4]), parts[5])  # the client quotes "/" in revisions
            if repo is not None:
                self._api(request, "/".join(parts[2:4]), repo, parts[4], "/".join(parts[6:]))
        elif len(parts) >= 5 and parts[2] == "resolve":
            repo = self._repo(request, "/".join(parts[:2]), parts[3])
            if repo is not None:
                self._file(request, repo, "/".join(parts[4:]), body)
        else:
            self._error(request, "RepoNotFound", "unknown route")

    def _repo(self, request: BaseHTTPRequestHandler, repo_id: str, revision: str) -> Repo | None:
        repo = self.repos.get(repo_id)
        if repo is None:
            self._error(request, "RepoNotFound", f"Repository {repo_id} not found")
        elif not repo.resolves(revision):
            self._error(request, "RevisionNotFound", f"Invalid rev id: {revision}")
        else:
            return repo
        return None

    def _api(
        self, request: BaseHTTPRequestHandler, repo_id: str, repo: Repo, action: str, folder: str
    ) -> None:
        if action == "revision":
            payload: object = {
                "id": repo_id,
                "sha": repo.commit,
                "siblings": [{"rfilename": f} for f in repo.files],
            }
        else:  # the entries under `folder`: its files and folders, or everything below it if recursive
            recursive = "recursive=true" in (urlsplit(request.path).query or "").lower()
            payload = _tree(repo, folder, recursive)
            if folder and not payload:
                self._error(request, "EntryNotFound", f"{folder} does not exist")
                return
        data = json.dumps(payload).encode()
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)

    def _file(self, request: BaseHTTPRequestHandler, repo: Repo, name: str, body: bool) -> None:
        if name not in repo.files:
            self._error(request, "EntryNotFound", f"{name} does not exist")
            return
        data = (repo.directory / name).read_bytes()
        request.send_response(200)
        request.send_header("X-Repo-Commit", repo.commit)
        request.send_header("ETag", f'"{_sha1(repo, name)}"')
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        if body:
            request.wfile.write(data)

    @staticmethod
    def _error(request: BaseHTTPRequestHandler, code: str, message: str) -> None:
        data = json.dumps({"error": message}).encode()
        request.send_response(404)
        request.send_header("X-Error-Code", code)
        request.send_header("X-Error-Message", message)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        if request.command != "HEAD":
            request.wfile.write(data)


def _tree(repo: Repo, folder: str, recursive: bool) -> list[dict[str, object]]:
    """Tree entries below ``folder`` as the Hub lists them: its files and folders, or with ``recursive``
    every file and folder below it."""
    prefix = f"{folder}/" if folder else ""
    below = [f[len(prefix) :] for f in repo.files if f.startswith(prefix)]
    if recursive:
        files = below
        folders = sorted({"/".join(f.split("/")[:i]) for f in below for i in range(1, f.count("/") + 1)})
    else:
        files = [f for f in below if "/" not in f]
        folders = sorted({f.split("/")[0] for f in below if "/" in f})
    entries: list[dict[str, object]] = [
        {"type": "directory", "path": prefix + d, "oid": "0" * 40} for d in folders
    ]
    for f in files:
        size = (repo.directory / (prefix + f)).stat().st_size
        entries.append({"type": "file", "path": prefix + f, "size": size, "oid": _sha1(repo, prefix + f)})
    return entries


def _sha1(repo: Repo, name: str) -> str:
    return hashlib.sha1((repo.directory / name).read_bytes()).hexdigest()
