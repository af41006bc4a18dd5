"""The server's connections: uvicorn's h11 protocol with a time limit on request headers and a cap on open
connections, per client address and in all, that closes idle connections to make room.

uvicorn alone keeps a connection that never sends a request open for ever, and with ``limit_concurrency``
answers 503 to every request once that many connections are open: a few dozen idle sockets shut everyone
out. Here a connection is *idle* while no request is in progress on it (it has not sent complete headers
yet, or it is kept alive after a response) and *busy* from complete headers to the end of its response.

- Headers: a connection must send complete request headers within ``header_timeout`` seconds of opening,
  or of its first byte after a response; else it is closed (with a 408 if it sent part of a request).
- Keep-alive: a connection that sends nothing for ``keep_alive`` seconds after a response is closed.
- Caps: a new connection from an address that holds ``max_per_client`` connections closes that address's
  longest-idle one; with ``max_connections`` open in all, the longest-idle one of the address holding the
  most goes. Only when every connection in the way is busy is the new one answered 503 and closed. So idle
  or trickling sockets never keep a request out, and one address never holds more than its share.
"""

from __future__ import annotations

import json
import time

from uvicorn.protocols.http.h11_impl import H11Protocol

from warmstart.serve.limits import Limits


def raw_response(status: int, reason: str, message: str) -> bytes:
    """A whole ``{"error": message}`` response, written to the socket before h11 has seen a request."""
    body = json.dumps({"error": message}).encode()
    head = (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n")  # fmt: skip
    return head.encode() + body


class Guard:
    """The open connections of one server by client address; ``admit`` makes room by closing idle ones."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.by_peer: dict[str, list[GuardedH11Protocol]] = {}

    def total(self) -> int:
        return sum(map(len, self.by_peer.values()))

    def admit(self, conn: GuardedH11Protocol) -> str | None:
        """Room for ``conn``: None once it is counted, or why it is refused (every other one is busy)."""
        mine = self.by_peer.get(conn.peer, [])
        while len(mine) >= self.limits.max_per_client and self._close_idle(mine):
            pass
        while self.total() >= self.limits.max_connections and self._close_idle(self._all()):
            pass
        if len(mine) >= self.limits.max_per_client:
            return (f"this client has {len(mine)} requests in progress, the most one client may have; "
                    "wait for one to finish")  # fmt: skip
        if self.total() >= self.limits.max_connections:
            return f"the server has {self.total()} requests in progress, the most it takes; try again soon"
        self.by_peer.setdefault(conn.peer, []).append(conn)
        return None

    def release(self, conn: GuardedH11Protocol) -> None:
        mine = self.by_peer.get(conn.peer, [])
        if conn in mine:
            mine.remove(conn)
            if not mine:
                del self.by_peer[conn.peer]

    def _all(self) -> list[GuardedH11Protocol]:
        return [c for conns in self.by_peer.values() for c in conns]

    def _close_idle(self, conns: list[GuardedH11Protocol]) -> bool:
        """Close the longest-idle of ``conns`` (of the address holding the most); False if all are busy."""
        idle = [c for c in conns if c.idle_since is not None]
        if not idle:
            return False
        victim = min(idle, key=lambda c: (-len(self.by_peer[c.peer]), c.idle_since))
        self.release(victim)
        message = "the connection was closed to make room: send the request headers at once"
        victim.drop(raw_response(503, "Service Unavailable", message) if victim.partial else b"")
        return True


class GuardedH11Protocol(H11Protocol):
    """One connection; ``protocol_class`` makes the subclass that shares one ``Guard`` per server."""

    guard: Guard
    limits: Limits

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self.peer = self.client[0] if self.client else ""
        self.idle_since: float | None = time.monotonic()
        self.partial = False  # bytes of a request whose headers are not complete yet
        self.header_timer = None
        refused = self.guard.admit(self)
        if refused:
            self.idle_since = None
            self.drop(raw_response(503, "Service Unavailable", refused))
        else:
            self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        self.guard.release(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.idle_since is not None and data:
            self.partial = True
            if self.header_timer is None:  # a kept-alive connection starts its next request
                self._arm_header_timer()
        super().data_received(data)

    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle:  # complete headers: a request is in progress
            self._cancel_header_timer()
            self.idle_since, self.partial = None, False

    def on_response_complete(self) -> None:
        if not self.transport.is_closing():
            self.idle_since = time.monotonic()
        super().on_response_complete()  # arms uvicorn's keep-alive timer; may start a pipelined request

    def drop(self, response: bytes = b"") -> None:
        """Close the connection now, after ``response`` (raw bytes) if any."""
        self._cancel_header_timer()
        if not self.transport.is_closing():
            if response:
                self.transport.write(response)
            self.transport.close()

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        self.header_timer = self.loop.call_later(self.limits.header_timeout, self._headers_late)

    def _cancel_header_timer(self) -> None:
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def _headers_late(self) -> None:
        self.header_timer = None
        self.guard.release(self)
        message = f"the request headers took over {self.limits.header_timeout:g} s to arrive"
        self.drop(raw_response(408, "Request Timeout", message) if self.partial else b"")


def protocol_class(limits: Limits) -> type[GuardedH11Protocol]:
    """The protocol class for one server (uvicorn.Config(http=...)): its connections share one Guard."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"guard": Guard(limits), "limits": limits})
