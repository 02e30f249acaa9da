"""A real OpenAI-compatible HTTP server on 127.0.0.1 whose answers a test scripts (runs in a thread).

Each request is answered by ``responder(body) -> Reply``; the default responder pops scripted replies from
``server.replies`` (a list) and repeats the last one. Every request body is recorded in ``server.requests``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up early (timeouts, size caps: on purpose in these tests) is not an error."""

    def handle_error(self, request, client_address):
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


@dataclass
class Reply:
    """One scripted answer: a completion text (status 200) or an HTTP error; optional delay."""

    text: str | None = None
    status: int = 200
    body: str | None = None
    delay_s: float = 0.0


def completion_body(text: str, model: str = "scripted-judge") -> str:
    return json.dumps(
        {
            "id": "cmpl-1",
            "object": "chat.completion",
            "model": model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    )


class ChatServer:
    def __init__(self, responder: Callable[[dict[str, Any]], Reply] | None = None) -> None:
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.responder = responder or self._pop
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(body)
                reply = server.responder(body)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                payload = (
                    reply.body
                    if reply.body is not None
                    else completion_body(reply.text or "")
                    if reply.status == 200
                    else json.dumps({"error": {"message": "scripted failure"}})
                ).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def _pop(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if not self.replies:
                return Reply(status=500)
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
