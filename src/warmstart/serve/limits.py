"""What one request may ask of the server: characters of text, body bytes, new tokens, seconds."""

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

    @property
    def max_body(self) -> int:
        """Bytes of a request body: room for max_chars characters of 4-byte UTF-8, or JSON escapes."""
        return 6 * self.max_chars + 4096


def characters(fields: dict) -> int:
    """Characters of text in a request: every string, and every string in a list."""
    return sum(len(v) if isinstance(v, str) else sum(map(len, v)) for v in fields.values()
               if isinstance(v, str | list))  # fmt: skip


class BodyLimit:
    """ASGI middleware: a request body over ``max_body`` bytes gets 413 before the app reads it, one still
    arriving after ``timeout`` seconds 408."""

    def __init__(self, app, max_body: int, timeout: float):
        self.app, self.max_body, self.timeout = app, max_body, timeout

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        chunks, size, more = [], 0, True
        deadline = anyio.current_time() + self.timeout
        while more:
            with anyio.move_on_after(deadline - anyio.current_time()) as waiting:
                message = await receive()
            if waiting.cancelled_caught:
                return await _reject(send, 408, f"the request body took over {self.timeout:g} s to arrive")
            if message["type"] != "http.request":
                return await self.app(scope, _replay(chunks + [message], receive), send)
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
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
