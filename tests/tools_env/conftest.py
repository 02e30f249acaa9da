"""Fixtures for the backend tests: a real HTTP server on 127.0.0.1 that speaks each upstream API.

Routes (all under one server, started once per session in a thread):

* ``POST /serper/search`` and ``POST /serper/lens``: Serper (``X-API-KEY: test-key``; anything else is 403);
  queries starting ``flaky-429-N`` / ``flaky-503-N`` fail N times, then answer;
* ``GET /jina/<url>``: Jina Reader (JSON with ``Accept: application/json``, Markdown otherwise);
* ``POST /layout-parsing``: PP-StructureV3 serving (``Authorization: token tok``);
* ``POST /v1/chat/completions``: an OpenAI-compatible chat server that echoes the goal line;
* ``GET /pages/...``: HTML pages, redirects, big and binary bodies, 404, slow and flaky pages;
* ``GET /images/<name>``: the bundled gallery images.

Every request is recorded (``server.requests``) so tests can check what was sent and count calls.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from opensearch_vl.tools_env.backends.gallery import bundled_gallery_path


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up early (timeouts, size caps: on purpose in these tests) is not an error."""

    def handle_error(self, request, client_address):
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


ARTICLE = """<html><head><title>Heron Festival 2016</title></head><body>
<nav><a href="/">Home</a> | <a href="/news">News</a> | <a href="/about">About us</a></nav>
<div class="sidebar"><ul><li>Subscribe to our newsletter</li><li>Most read</li></ul></div>
<article><h1>Heron mural unveiled</h1>
<p>A nine-metre mural of a blue heron was unveiled in Orrin on the first day of the river festival.</p>
<p>The painter, Lio Marsh, worked on the wall for three weeks in June and used twenty-two litres of paint.</p>
<p>The festival committee expects forty thousand visitors over the four days of the event this year.</p>
</article><footer>Copyright 2016 Orrin Gazette. All rights reserved.</footer></body></html>"""


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class FixtureServer:
    """The running server: its base URL and the requests it has seen."""

    base_url: str
    port: int
    requests: list[RecordedRequest] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, prefix: str) -> int:
        """Requests whose path starts with ``prefix``."""
        with self.lock:
            return sum(1 for r in self.requests if r.path.startswith(prefix))

    def last(self, prefix: str) -> RecordedRequest:
        """The latest request whose path starts with ``prefix``."""
        with self.lock:
            return [r for r in self.requests if r.path.startswith(prefix)][-1]


def _make_handler(server: FixtureServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def _send(
            self,
            status: int,
            body: bytes | str,
            content_type: str = "application/json",
            headers: dict[str, str] | None = None,
            chunked: bool = False,
        ) -> None:
            data = body.encode() if isinstance(body, str) else body
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for start in range(0, len(data), 65536):
                    part = data[start : start + 65536]
                    self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                self.wfile.write(b"0\r\n\r\n")
                return
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _json(self, status: int, obj, headers=None) -> None:
            self._send(status, json.dumps(obj), "application/json", headers)

        def _record(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            with server.lock:
                server.requests.append(RecordedRequest(self.command, self.path, dict(self.headers), body))
            return body

        def _flaky(self, key: str) -> int | None:
            match = re.match(r"flaky-(\d{3})-(\d+)", key)
            if not match:
                return None
            status, times = int(match.group(1)), int(match.group(2))
            with server.lock:
                seen = server.failures.get(key, 0)
                server.failures[key] = seen + 1
            return status if seen < times else None

        def do_POST(self) -> None:  # noqa: N802
            body = self._record()
            path = urlsplit(self.path).path
            if path.startswith("/serper/"):
                if self.headers.get("X-API-KEY") != "test-key":
                    return self._json(403, {"message": "Unauthorized."})
                request = json.loads(body)
                key = request.get("q") or request.get("url") or ""
                status = self._flaky(key.rsplit("/", 1)[-1])
                if status:
                    return self._json(status, {"message": "try later"}, {"Retry-After": "0"})
                if path == "/serper/search":
                    organic = [
                        {
                            "title": f"{request['q']} result {i}",
                            "link": f"https://example.org/r{i}",
                            "snippet": f"Snippet {i} about {request['q']}.",
                            "position": i,
                        }
                        for i in range(1, int(request.get("num", 10)) + 1)
                    ]
                    return self._json(
                        200,
                        {
                            "searchParameters": request,
                            "organic": organic,
                            "answerBox": {
                                "title": "Answer",
                                "snippet": "42 metres",
                                "link": "https://example.org/answer",
                            },
                        },
                    )
                if path == "/serper/lens":
                    name = request["url"].rsplit("/", 1)[-1]
                    if "visual" in name:
                        return self._json(
                            200,
                            {
                                "visual_matches": [
                                    {
                                        "title": f"Visual {name}",
                                        "link": "https://example.org/v",
                                        "source": "vsource",
                                    }
                                ]
                            },
                        )
                    return self._json(
                        200,
                        {
                            "organic": [
                                {
                                    "title": f"Lens match for {name}",
                                    "link": "https://example.org/lens1",
                                    "source": "Example",
                                    "imageUrl": "https://example.org/i.png",
                                    "thumbnailUrl": "https://example.org/t.png",
                                },
                                {
                                    "title": "Second match",
                                    "link": "https://example.org/lens2",
                                    "source": "Other",
                                },
                            ]
                        },
                    )
            if path == "/layout-parsing":
                if self.headers.get("Authorization") != "token tok":
                    return self._json(403, {"errorCode": 403, "errorMsg": "bad token"})
                request = json.loads(body)
                image = base64.b64decode(request["file"])
                if not image.startswith(b"\x89PNG"):
                    return self._json(200, {"errorCode": 400, "errorMsg": "not an image", "result": None})
                blocks = [
                    {
                        "block_label": "text",
                        "block_content": "Second paragraph.",
                        "block_bbox": [10, 60, 200, 80],
                        "block_id": 2,
                        "block_order": 2,
                    },
                    {
                        "block_label": "image",
                        "block_content": "",
                        "block_bbox": [0, 90, 50, 150],
                        "block_id": 3,
                        "block_order": None,
                    },
                    {
                        "block_label": "doc_title",
                        "block_content": "Quarterly report",
                        "block_bbox": [10, 5, 200, 30],
                        "block_id": 0,
                        "block_order": 1,
                    },
                    {
                        "block_label": "number",
                        "block_content": f"bytes={len(image)}",
                        "block_bbox": [180, 180, 200, 195],
                        "block_id": 4,
                        "block_order": 3,
                    },
                ]
                return self._json(
                    200,
                    {
                        "logId": "x",
                        "errorCode": 0,
                        "errorMsg": "Success",
                        "result": {
                            "layoutParsingResults": [
                                {
                                    "prunedResult": {"width": 200, "height": 200, "parsing_res_list": blocks},
                                    "markdown": {"text": "# Quarterly report"},
                                }
                            ],
                            "dataInfo": {"type": "image"},
                        },
                    },
                )
            if path == "/v1/chat/completions":
                request = json.loads(body)
                prompt = request["messages"][-1]["content"]
                goal = re.search(r"Goal: (.*)", prompt)
                if self.headers.get("Authorization") == "Bearer broken":
                    return self._json(200, {"unexpected": True})
                return self._json(
                    200,
                    {
                        "id": "c1",
                        "object": "chat.completion",
                        "model": request["model"],
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {
                                    "role": "assistant",
                                    "content": f"SUMMARY for [{goal.group(1) if goal else '?'}]",
                                },
                            }
                        ],
                    },
                )
            return self._json(404, {"error": f"no route {path}"})

        def do_GET(self) -> None:  # noqa: N802
            self._record()
            parts = urlsplit(self.path)
            path, query = parts.path, parse_qs(parts.query)
            if path.startswith("/jina/"):
                target = unquote(self.path[len("/jina/") :])
                if "missing" in target:
                    return self._json(422, {"code": 422, "message": "cannot fetch"})
                content = f"Content of {target}. The tower is 31 metres tall."
                if self.headers.get("Accept") == "application/json":
                    return self._json(
                        200,
                        {
                            "code": 200,
                            "status": 20000,
                            "data": {
                                "title": "Jina page",
                                "url": target,
                                "content": content,
                                "usage": {"tokens": 12},
                            },
                        },
                    )
                return self._send(
                    200,
                    f"Title: Jina page\nURL Source: {target}\n\nMarkdown Content:\n{content}",
                    "text/plain",
                )
            if path == "/pages/article.html":
                return self._send(200, ARTICLE, "text/html; charset=utf-8")
            if path == "/pages/plain.txt":
                return self._send(200, "Just plain text about herons.", "text/plain")
            if path == "/pages/redirect":
                hops = int(query.get("n", ["1"])[0])
                target = "/pages/article.html" if hops <= 1 else f"/pages/redirect?n={hops - 1}"
                return self._send(302, "", "text/plain", {"Location": target})
            if path == "/pages/redirect-to":
                return self._send(302, "", "text/plain", {"Location": query["target"][0]})
            if path == "/pages/big":
                size = int(query.get("size", ["200000"])[0])
                chunked = query.get("chunked", ["0"])[0] == "1"
                return self._send(
                    200, "<html><body><p>" + "x" * size + "</p></body></html>", "text/html", chunked=chunked
                )
            if path == "/pages/report.pdf":
                return self._send(200, b"%PDF-1.4 binary", "application/pdf")
            if path == "/pages/slow":
                time.sleep(float(query.get("s", ["2"])[0]))
                return self._send(200, "late", "text/plain")
            if path == "/pages/flaky":
                status = self._flaky(query["key"][0])
                if status:
                    return self._send(status, "busy", "text/plain", {"Retry-After": "0"})
                return self._send(
                    200,
                    "<html><head><title>Recovered</title></head><body><p>It works now, after "
                    "the server recovered from its errors.</p></body></html>",
                    "text/html",
                )
            if path.startswith("/images/"):
                file = bundled_gallery_path() / path[len("/images/") :]
                if file.is_file():
                    return self._send(200, file.read_bytes(), "image/png")
            return self._send(404, "not found", "text/plain")

    return Handler


@pytest.fixture(scope="session")
def http_server():
    """A :class:`FixtureServer` on 127.0.0.1 (random port) for the whole session."""
    holder = FixtureServer(base_url="", port=0)
    httpd = _QuietServer(("127.0.0.1", 0), _make_handler(holder))
    httpd.daemon_threads = True
    holder.port = httpd.server_address[1]
    holder.base_url = f"http://127.0.0.1:{holder.port}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield holder
    httpd.shutdown()
    httpd.server_close()


_ENV_VARS = (
    "SERPER_API_KEY",
    "JINA_API_KEY",
    "LAYOUT_PARSING_API_URL",
    "LAYOUT_PARSING_TOKEN",
    "SR_MODEL_PATH",
    "SUMMARIZER_BASE_URL",
    "SUMMARIZER_API_KEY",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
)


@pytest.fixture(autouse=True)
def _clean_backend_env(monkeypatch):
    """Every test starts without backend keys, endpoints or proxies in the environment."""
    for name in _ENV_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def fast_http():
    """HTTP settings for tests: short timeouts and near-zero backoff."""
    return {
        "connect_timeout_s": 2.0,
        "read_timeout_s": 2.0,
        "max_attempts": 3,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
    }
