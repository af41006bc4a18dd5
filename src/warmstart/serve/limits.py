"""What one request may ask of the server: characters of text, inputs of a batch, body bytes, new tokens,
seconds; and how long a connection may take to send its headers or stay idle, and how many one client may
hold."""

from __future__ import annotations

import json
from dataclasses import dataclass

import anyio


@dataclass(frozen=True)
class Limits:
    max_chars: int = 2000  # characters of text in one request, all fields together
    max_new_tokens: int = 200  # generation: most new tokens one request may ask for
    timeout: float = 30.0  # seconds one request may run the model
    body_timeout: float = 10.0  # seconds a request body may take to arrive
    header_timeout: float = 5.0  # seconds a connection may take to send complete request headers
    keep_alive: float = 5.0  # seconds a connection may stay open idle after a response
    max_connections: int = 64  # connections open at once, all clients together
    max_per_client: int = 8  # connections open at once from one client address (idle ones give way)
    max_batch: int = 64  # inputs in one request to /api/predict/batch (their text counts in max_chars)

    @property
    def max_body(self) -> int:
        """Bytes of a request body: room for max_chars characters each written as a JSON escape of a
        surrogate pair ("\\ud83d\\ude00", 12 bytes; raw UTF-8 takes 4 at most), and the rest of the JSON
        (field names and options: 1 KiB for each input of a full batch, 4 KiB more)."""
        return 12 * self.max_chars + 1024 * self.max_batch + 4096


def characters(fields: dict, names) -> int:
    """Characters of text in the fields ``names`` of a request (a string, or a list of strings): decoded
    characters (code points), however the JSON wrote them."""
    values = [fields[n] for n in names if n in fields]
    return sum(len(v) if isinstance(v, str) else sum(map(len, v)) for v in values)


def unpaired_surrogate(fields: dict) -> str | None:
    """The first field holding a lone surrogate (JSON "\\ud800" decodes to one), which is not Unicode text:
    it cannot be encoded, tokenized or sent back."""
    for name, value in fields.items():
        for text in [value] if isinstance(value, str) else value if isinstance(value, list) else []:
            if isinstance(text, str):
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    return name
    return None


class BodyLimit:
    """ASGI middleware: a POST body over ``max_body`` bytes gets 413 before the app reads it, one still
    arriving ``timeout`` seconds after its headers 408 (one deadline for the whole body, however the bytes
    trickle in). Other methods pass straight through (no route reads their body: GET /api/health answers at
    once whatever a client sends after its headers)."""

    def __init__(self, app, max_body: int, timeout: float):
        self.app, self.max_body, self.timeout = app, max_body, timeout

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "POST":
            return await self.app(scope, receive, send)
        chunks, size, more = [], 0, True
        deadline = anyio.current_time() + self.timeout
        while more:
            with anyio.move_on_after(deadline - anyio.current_time()) as waiting:
                message = await receive()
            if waiting.cancelled_caught:
                return await _reject(send, 408, f"the request body took over {self.timeout:g} s to arrive")
            if message["type"] != "http.request":
                return  # the client is gone (or the connection was closed to make room): no one to answer
            chunks.append(message)
            size += len(message.get("body", b""))
            more = message.get("more_body", False)
            if size > self.max_body:
                return await _reject(send, 413, f"the request body is over {self.max_body:,} bytes")
        return await self.app(scope, _replay(chunks, receive), send)


def _replay(messages, receive=None):
    async def replayed():
        return messages.pop(0) if messages else await receive()

    return replayed


async def _reject(send, status: int, message: str) -> None:
    """The error, and the connection closed after it: the rest of the body is never read."""
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"connection", b"close")]  # fmt: skip
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
