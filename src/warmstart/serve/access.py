"""Each HTTP request measured once, from its start to the end of its response: one access-log line (the
Common Log Format with the milliseconds taken at the end) and the figures of /metrics (serve.metrics)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TextIO


@dataclass(frozen=True)
class Answered:
    """One request and its response: ``status`` 0 when none began (the client left first)."""

    client: str
    method: str
    path: str
    target: str  # the path and query as the client sent them, escaped for a log line
    version: str
    status: int
    size: int  # bytes of the response body
    seconds: float


def _escaped(raw: bytes) -> str:
    """``raw`` with quotes, backslashes, spaces and bytes that are not printable ASCII as \\xNN: one line,
    one field, whatever a client sends."""
    text = raw.decode("latin-1")
    return "".join(c if 32 < ord(c) < 127 and c not in '"\\' else f"\\x{ord(c):02x}" for c in text)


def _target(scope) -> str:
    raw = scope.get("raw_path") or scope["path"].encode("utf-8")
    query = scope.get("query_string", b"")
    return _escaped(raw + (b"?" + query if query else b""))


def _answered(scope, status: int, size: int, seconds: float) -> Answered:
    client = scope.get("client")
    method, version = _escaped(scope["method"].encode()), scope.get("http_version", "1.1")
    where = client[0] if client else "-"
    return Answered(where, method, scope["path"], _target(scope), version, status, size, seconds)


class Measured:
    """ASGI middleware: each HTTP request's ``Answered`` goes to every one of ``observers`` once its response
    has ended (or failed: a 500 unless a status was sent; or was cut off by the client)."""

    def __init__(self, app, observers: list[Callable[[Answered], None]]):
        self.app, self.observers = app, observers

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start, sent = time.perf_counter(), {"status": 0, "size": 0}

        async def sending(message):
            if message["type"] == "http.response.start":
                sent["status"] = message["status"]
            elif message["type"] == "http.response.body":
                sent["size"] += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception:
            sent["status"] = sent["status"] or 500
            raise
        finally:
            answered = _answered(scope, sent["status"], sent["size"], time.perf_counter() - start)
            for observe in self.observers:
                observe(answered)


def log_line(a: Answered) -> str:
    """``127.0.0.1 - - [27/Nov/2026:20:41:07 +0000] "POST /api/predict HTTP/1.1" 200 312 41.7ms``."""
    when = datetime.now().astimezone().strftime("%d/%b/%Y:%H:%M:%S %z")
    status = a.status or "-"
    return (f'{a.client} - - [{when}] "{a.method} {a.target} HTTP/{a.version}" {status} {a.size} '
            f"{a.seconds * 1000:.1f}ms")  # fmt: skip


def access_log(stream: TextIO) -> Callable[[Answered], None]:
    """An observer writing each request's line to ``stream`` (stderr for `warmstart serve`)."""

    def write(a: Answered) -> None:
        stream.write(log_line(a) + "\n")
        stream.flush()

    return write
