"""Who may hold the server's connections: the caps per client address and in all, and which connection gives
way to a new one (serve.connections says when a connection is in which phase).

A connection is in one of four phases: ``headers`` (opened, or the first byte of its next request came, and
its request headers are not complete), ``body`` (headers complete, body still arriving), ``busy`` (the whole
request came, its response is not finished) and ``idle`` (kept alive after a response). ``headers`` and
``idle`` connections are *waiting*: nothing is in progress on them.

- Per address, at most ``max_per_client`` connections. A new one past that closes the address's own
  longest-waiting one, if one has waited ``GRACE`` s at least; else the new one is refused. A burst of
  connections from one address thus gets its first ``max_per_client`` served and the rest refused: a
  connection just opened has had no time to send its request, and is not taken for an idle one.
- In all, at most ``max_connections``. A new one past that takes the place of a connection from an address
  that holds *more* connections than the new one's address does (or one of its own, as above): waiting
  ones first, then ``body`` ones (a slow upload gives way to a fair share), the address holding the most
  first, the longest in its phase first. ``busy`` connections never give way. Only when none can is the new
  one refused.

So slow bodies and trickling headers hold at most their address's share: 64 slow connections from 8
addresses fill the server, yet a 9th address still gets in (one of them gives way); a fast request reaches
``busy`` in milliseconds and then keeps its place. Whatever gives way or is refused is answered 503 with
Retry-After by the connection (``give_way``), never dropped without a word.
"""

from __future__ import annotations

import time

from warmstart.serve.limits import Limits

WAITING = ("headers", "idle")
GRACE = 0.1  # seconds a waiting connection keeps its place against newer ones of its own address


class Guard:
    """The open connections of one server by client address. A connection has ``peer`` (its address),
    ``phase``, ``since`` (when it entered its phase) and ``give_way()`` (answer 503 and close)."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.by_peer: dict[str, list] = {}

    def total(self) -> int:
        return sum(map(len, self.by_peer.values()))

    def admit(self, conn) -> str | None:
        """Room for ``conn``: None once it is counted, or why it is refused (nothing can give way)."""
        mine = self.by_peer.get(conn.peer, [])
        while len(mine) >= self.limits.max_per_client and self._give_way(self._own(mine)):
            pass
        if len(mine) >= self.limits.max_per_client:
            return (f"this client has {len(mine)} requests in progress, the most one client may have; "
                    "wait for one to finish")  # fmt: skip
        while self.total() >= self.limits.max_connections and self._give_way(self._fair(conn.peer)):
            pass
        if self.total() >= self.limits.max_connections:
            return (f"the server has {self.total()} requests in progress or arriving, the most it takes; "
                    "try again soon")  # fmt: skip
        self.by_peer.setdefault(conn.peer, []).append(conn)
        return None

    def release(self, conn) -> None:
        mine = self.by_peer.get(conn.peer, [])
        if conn in mine:
            mine.remove(conn)
            if not mine:
                del self.by_peer[conn.peer]

    def _own(self, mine: list) -> list[tuple]:
        """The connections of the new one's own address that have waited GRACE s at least."""
        now = time.monotonic()
        return [(c.since, c) for c in mine if c.phase in WAITING and now - c.since >= GRACE]

    def _fair(self, peer: str) -> list[tuple]:
        """What may give way to a new connection from ``peer``: its own as ``_own``, and those of addresses
        holding more than ``peer`` does that are not busy; waiting before body, most held first."""
        mine = self.by_peer.get(peer, [])
        ranked = [((False, -len(mine), since), c) for since, c in self._own(mine)]
        for other, conns in self.by_peer.items():
            if other != peer and len(conns) > len(mine):
                ranked += [
                    ((c.phase not in WAITING, -len(conns), c.since), c) for c in conns if c.phase != "busy"
                ]
        return ranked

    def _give_way(self, ranked: list[tuple]) -> bool:
        """Close the first of ``ranked`` ((key, connection) pairs); False if there is none."""
        if not ranked:
            return False
        victim = min(ranked, key=lambda pair: pair[0])[1]
        self.release(victim)
        victim.give_way()
        return True
