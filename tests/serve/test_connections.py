"""Idle, slow or greedy connections do not keep requests out: request headers have a time limit, kept-alive
connections an idle limit, and one client address a cap on its connections (idle ones give way first)."""

import json
import socket
import threading
import time

import httpx
import pytest

from tests.helpers.serve import live_server
from warmstart.serve.guard import GRACE
from warmstart.serve.limits import Limits

PARTIAL = b"POST /api/predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
REQUEST = {"text": "The [MASK] is a city.", "top_k": 2}


@pytest.fixture(scope="module")
def app(tiny_pretrained):
    from warmstart.serve.app import create_app
    from warmstart.serve.load import open_model

    model = open_model(str(tiny_pretrained))
    return lambda limits: create_app(model, limits, "tiny")


def connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket()
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def closed(sock: socket.socket) -> bool:
    """Whether the server closed ``sock`` (reads and drops what it sent before)."""
    sock.setblocking(False)
    try:
        while sock.recv(1 << 16):
            pass
        return True
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def still_open(socks, expected: int, within: float = 3.0) -> int:
    """How many of ``socks`` the server keeps open, once that is ``expected`` or ``within`` s have passed."""
    deadline = time.monotonic() + within
    while True:
        count = sum(not closed(s) for s in socks)
        if count == expected or time.monotonic() > deadline:
            return count
        time.sleep(0.05)


def read_until_closed(sock: socket.socket, within: float) -> tuple[bytes, float]:
    """What the server sends before it closes ``sock``, and the seconds that took."""
    start, data = time.monotonic(), b""
    sock.settimeout(within)
    try:
        while chunk := sock.recv(1 << 16):
            data += chunk
    except TimeoutError:
        raise AssertionError(f"the server kept the connection open over {within} s") from None
    except ConnectionResetError:
        pass
    return data, time.monotonic() - start


def read_response(sock: socket.socket) -> bytes:
    """One whole response with a Content-Length, read from a kept-alive connection."""
    sock.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(1 << 16)
    head, body = data.split(b"\r\n\r\n", 1)
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += sock.recv(1 << 16)
    return data


def trickle(socks, stop: threading.Event) -> None:
    """Send ``PARTIAL`` a byte at a time to each socket, never finishing the headers."""
    for i in range(len(PARTIAL)):
        for sock in socks:
            try:
                sock.send(PARTIAL[i : i + 1])
            except OSError:
                pass
        if stop.wait(0.1):
            return


def test_idle_and_trickling_sockets_do_not_keep_requests_out(tiny_pretrained):
    """`warmstart serve` with its default limits, 40 sockets held open from the same address as the
    requests: 30 send nothing, 10 trickle a header a byte at a time. Requests still get 200 at once."""
    with live_server(tiny_pretrained) as url:
        port = int(url.rsplit(":", 1)[1])
        idle = [connect(port) for _ in range(40)]  # the ones past 8 are refused: all 8 are just opened
        stop = threading.Event()
        slow = threading.Thread(target=trickle, args=(idle[::4], stop), daemon=True)
        slow.start()
        time.sleep(2 * GRACE)  # held open: from now on they give way
        try:
            for _ in range(5):
                start = time.monotonic()
                response = httpx.post(f"{url}/api/predict", json=REQUEST, timeout=5)
                assert response.status_code == 200, response.text
                assert time.monotonic() - start < 1.0 and len(response.json()["masks"][0]) == 2
                time.sleep(0.2)
            with httpx.Client(base_url=url, timeout=5) as client:  # a kept-alive connection too
                assert all(client.post("/api/predict", json=REQUEST).status_code == 200 for _ in range(3))
            assert sum(not closed(s) for s in idle) <= Limits().max_per_client  # the oldest gave way
        finally:
            stop.set()
            slow.join()
            for sock in idle:
                sock.close()


def test_headers_must_arrive_within_the_time_limit(app, running):
    limits = Limits(header_timeout=0.5, keep_alive=0.5)
    with running(app(limits), limits) as port:
        partial, silent, slow = connect(port), connect(port), connect(port)
        partial.sendall(PARTIAL)
        stop = threading.Event()
        threading.Thread(target=trickle, args=([slow], stop), daemon=True).start()
        data, took = read_until_closed(partial, within=3)
        stop.set()
        assert 0.4 < took < 1.5 and data.startswith(b"HTTP/1.1 408 ")
        message = json.loads(data.split(b"\r\n\r\n", 1)[1])["error"]
        assert message == "the request headers took over 0.5 s to arrive"
        assert read_until_closed(silent, within=1.5)[0] == b""  # sent nothing: closed without a word
        assert read_until_closed(slow, within=1.5)[0].startswith(b"HTTP/1.1 408 ")  # bytes do not extend it
        for sock in (partial, silent, slow):
            sock.close()


def test_kept_alive_connections_are_closed_when_idle(app, running):
    """After a response, silence past keep_alive closes the connection; a next request begun in time has
    header_timeout from its first byte to finish its headers, or gets 408."""
    limits = Limits(header_timeout=1.0, keep_alive=0.4)
    with running(app(limits), limits) as port:
        body = json.dumps(REQUEST).encode()
        request = PARTIAL + b"Content-Length: %d\r\n\r\n" % len(body) + body
        with connect(port) as idle, connect(port) as late:
            for sock in (idle, late):
                sock.sendall(request)
                assert read_response(sock).startswith(b"HTTP/1.1 200 ")
            late.sendall(PARTIAL)  # the next request's headers, never finished
            data, took = read_until_closed(idle, within=2)
            assert data == b"" and took < 0.9
            data, took = read_until_closed(late, within=2)
            assert data.startswith(b"HTTP/1.1 408 ") and took > 0.3


def test_one_address_holds_at_most_its_share(app, running):
    limits = Limits(max_per_client=4, max_connections=6, header_timeout=30)
    with running(app(limits), limits) as port:
        greedy = []
        for _ in range(10):  # opened one by one, each held open long enough to be taken for idle
            try:
                greedy.append(connect(port, "127.0.0.2"))
            except OSError:
                pytest.skip("this machine has no 127.0.0.2 on its loopback")
            time.sleep(1.5 * GRACE)
        assert still_open(greedy, 4) == 4 and all(closed(s) for s in greedy[:6])  # the oldest went first
        other = [connect(port, "127.0.0.3") for _ in range(3)]  # 7 in all: the greediest gives one up
        assert still_open(greedy, 3) == 3 and still_open(other, 3) == 3
        response = httpx.post(f"http://127.0.0.1:{port}/api/predict", json=REQUEST, timeout=5)
        assert response.status_code == 200, response.text
        assert still_open(greedy, 2) == 2 and still_open(other, 3) == 3
        for sock in greedy + other:
            sock.close()


def test_a_client_whose_connections_are_all_busy_gets_503(app, running):
    """Busy connections (a request body still arriving) are not closed to make room: the same client's
    next connection is refused with one line, another client's is served."""
    limits = Limits(max_per_client=2, body_timeout=5)
    with running(app(limits), limits) as port:
        try:
            busy = [connect(port, "127.0.0.2") for _ in range(2)]
        except OSError:
            pytest.skip("this machine has no 127.0.0.2 on its loopback")
        for sock in busy:
            sock.sendall(PARTIAL + b"Content-Length: 100\r\n\r\n{")
        time.sleep(0.2)
        with connect(port, "127.0.0.2") as refused:
            data, _ = read_until_closed(refused, within=3)
        assert data.startswith(b"HTTP/1.1 503 ")
        message = json.loads(data.split(b"\r\n\r\n", 1)[1])["error"]
        assert message.startswith("this client has 2 requests in progress") and "\n" not in message
        response = httpx.post(f"http://127.0.0.1:{port}/api/predict", json=REQUEST, timeout=5)
        assert response.status_code == 200, response.text
        assert not any(closed(s) for s in busy)
        for sock in busy:
            sock.close()
