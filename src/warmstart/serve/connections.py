"""The server's connections: uvicorn's h11 protocol with time limits on request headers, caps on open
connections per client address and in all (serve.guard: who gives way), and a close that never resets.

uvicorn alone keeps a connection that never sends a request open for ever, and with ``limit_concurrency``
answers 503 to every request once that many connections are open: a few dozen idle sockets, or slow
bodies, shut everyone out. Here each connection tracks its phase (serve.guard): ``headers`` from its
opening (or the first byte of its next request) to complete headers, ``body`` until the whole request came,
``busy`` until its response is finished, ``idle`` while kept alive after it.

- Headers: complete within ``header_timeout`` s of opening, or of the first byte after a response; else the
  connection is closed (with a 408 if it sent part of a request). Bytes that trickle in do not extend it.
- Body: the whole body within ``body_timeout`` s of the headers (one deadline, not per read), else 408
  (limits.BodyLimit).
- Keep-alive: a connection that sends nothing for ``keep_alive`` s after a response is closed.
- Caps and fair share: serve.guard. A connection refused, or closed to make room, is answered
  ``503 Service Unavailable`` with ``Retry-After`` and ``{"error": ...}``.
- Every close the server starts is a lingering close (``Lingering``): what was written is sent, then a FIN,
  and what the client still sends is read and dropped until it closes too (or LINGER s pass). Closing a
  socket with unread bytes makes the kernel send a reset instead, and the client may lose the answer.
"""

from __future__ import annotations

import json
import time

from uvicorn.protocols.http.h11_impl import H11Protocol

from warmstart.serve.guard import Guard
from warmstart.serve.limits import Limits

LINGER = 2.0  # seconds a closed connection still reads (and drops) what its client sends
RETRY_AFTER = 1  # seconds a client refused for load is told to wait


def raw_response(status: int, reason: str, message: str, retry_after: int | None = None) -> bytes:
    """A whole ``{"error": message}`` response, written to the socket outside h11 (no request seen, or one
    cut short)."""
    body = json.dumps({"error": message}).encode()
    retry = f"retry-after: {retry_after}\r\n" if retry_after is not None else ""
    head = (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n{retry}"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n")  # fmt: skip
    return head.encode() + body


def unavailable(message: str) -> bytes:
    return raw_response(503, "Service Unavailable", message, RETRY_AFTER)


class Lingering:
    """A connection's transport whose ``close`` lingers: it sends what was written and a FIN, keeps reading
    (the protocol drops what comes) until the client closes, and closes for good after ``linger`` s at most.
    ``on_close`` is called once, when the close begins. Everything else is the real transport's."""

    def __init__(self, transport, loop, on_close, linger: float = LINGER):
        self._transport, self._loop, self._on_close, self.linger = transport, loop, on_close, linger
        self.lingering = False
        self._timer = None

    def __getattr__(self, name):
        return getattr(self._transport, name)

    def is_closing(self) -> bool:
        return self.lingering or self._transport.is_closing()

    def write(self, data: bytes) -> None:
        if not self.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        if self.is_closing():
            return
        self.lingering = True
        self._on_close()
        if self.linger <= 0 or not self._transport.can_write_eof():
            self._transport.close()
            return
        self._transport.write_eof()  # the FIN goes once the buffer is sent
        self._transport.resume_reading()
        self._timer = self._loop.call_later(self.linger, self.close_now)

    def close_now(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._transport.close()


class GuardedH11Protocol(H11Protocol):
    """One connection; ``protocol_class`` makes the subclass that shares one ``Guard`` per server."""

    guard: Guard
    limits: Limits

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self.transport = Lingering(transport, self.loop, self._closing)
        self.peer = self.client[0] if self.client else ""
        self.phase, self.since = "headers", time.monotonic()
        self.partial = False  # bytes of a request whose headers are not complete yet
        self.header_timer = None
        refused = self.guard.admit(self)
        if refused:
            self.drop(unavailable(refused))
        else:
            self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing()
        self.transport.close_now()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return  # closed by the server: what the client still sends is dropped
        if self.phase == "idle" and data:  # a kept-alive connection starts its next request
            self._enter("headers")
            self._arm_header_timer()
        if self.phase == "headers" and data:
            self.partial = True
        super().data_received(data)

    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.transport.is_closing():
            return
        if self.cycle is not cycle:  # complete headers: a request is in progress
            self._cancel_header_timer()
            self.partial = False
            self._enter("body")
        if self.phase == "body" and not self.cycle.more_body:
            self._enter("busy")

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            self._enter("idle")
        super().on_response_complete()  # arms uvicorn's keep-alive timer; may start a pipelined request

    def shutdown(self) -> None:
        """The server stops: no lingering from now on."""
        self.transport.linger = 0.0
        if self.transport.lingering:
            self.transport.close_now()
        else:
            super().shutdown()

    def give_way(self) -> None:
        """Closed to make room for another connection (serve.guard): 503, whatever phase it was in."""
        self.drop(unavailable("the connection was closed to make room for another; send the request again"))

    def drop(self, response: bytes = b"") -> None:
        """Close the connection now (lingering), after ``response`` (raw bytes) if any."""
        if response:
            self.transport.write(response)
        self.transport.close()

    def _closing(self) -> None:
        """The connection closes: it leaves the guard, and a request still running sees a disconnect."""
        self._cancel_header_timer()
        self.guard.release(self)
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True
            self.cycle.message_event.set()

    def _enter(self, phase: str) -> None:
        self.phase, self.since = phase, time.monotonic()

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        self.header_timer = self.loop.call_later(self.limits.header_timeout, self._headers_late)

    def _cancel_header_timer(self) -> None:
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def _headers_late(self) -> None:
        self.header_timer = None
        message = f"the request headers took over {self.limits.header_timeout:g} s to arrive"
        self.drop(raw_response(408, "Request Timeout", message) if self.partial else b"")


def protocol_class(limits: Limits) -> type[GuardedH11Protocol]:
    """The protocol class for one server (uvicorn.Config(http=...)): its connections share one Guard."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"guard": Guard(limits), "limits": limits})
