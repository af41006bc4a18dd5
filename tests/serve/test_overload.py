"""Load on the real server: a connection refused past --max-per-client or --max-connections, or closed to
make room, gets a whole 503 with Retry-After and a clean close, never a reset; slow bodies hold only their
address's share, so another address is still served; a request body has one deadline, not one per read."""

import json
import select
import socket
import threading
import time
from collections import Counter

import pytest

from tests.helpers.serve import live_server
from warmstart.serve.limits import Limits

BODY = json.dumps({"text": "The [MASK] is a city.", "top_k": 2}).encode()
HEAD = b"POST /api/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
REQUEST = HEAD + b"Content-Length: %d\r\n\r\n" % len(BODY) + BODY


@pytest.fixture(scope="module")
def app(tiny_pretrained):
    from warmstart.serve.app import create_app
    from warmstart.serve.load import open_model

    model = open_model(str(tiny_pretrained))
    return lambda limits: create_app(model, limits, "tiny")


def connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket()
    sock.settimeout(10)
    try:
        sock.bind((source, 0))
    except OSError:
        sock.close()
        pytest.skip(f"this machine has no {source} on its loopback")
    sock.connect(("127.0.0.1", port))
    return sock


def read_response(sock: socket.socket) -> tuple[int, dict, bytes]:
    """One whole response with a Content-Length: status, headers (names lowercased), body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(1 << 16)
        assert chunk, f"the connection ended before a whole response: {data!r}"
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    headers = {name.lower(): value for name, value in (line.split(": ", 1) for line in lines[1:])}
    while len(body) < int(headers["content-length"]):
        chunk = sock.recv(1 << 16)
        assert chunk, f"the connection ended inside the body: {data!r}"
        body += chunk
    return int(lines[0].split()[1]), headers, body


def outcome(status: int, headers: dict, body: bytes) -> str:
    """The status ("503" only with Retry-After and a one-line JSON error), or what else came."""
    if status == 503:
        message = json.loads(body)["error"]
        if not headers.get("retry-after", "").isdigit() or not message or "\n" in message:
            return f"503 without Retry-After or one-line error: {headers} {body!r}"
    return str(status)


def one_shot(port: int) -> str:
    """One request on a new connection, as curl or httpx.post send it; the outcome or what ended it."""
    try:
        with connect(port) as sock:
            sock.sendall(REQUEST)
            return outcome(*read_response(sock))
    except (OSError, AssertionError) as e:  # ConnectionResetError, BrokenPipeError, a cut response
        return type(e).__name__


def burst(port: int, clients: int, requests: int) -> Counter:
    """``clients`` threads released together, each sending ``requests`` one-shot requests in turn."""
    results, start = [], threading.Barrier(clients)

    def client():
        start.wait()
        results.extend(one_shot(port) for _ in range(requests))

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return Counter(results)


def test_a_burst_past_the_per_client_cap_gets_200_or_503_never_a_reset(tiny_pretrained):
    """`warmstart serve --max-per-client 4`, bursts from one address: 12 one-shot clients at once, then 48
    clients x 4 requests. Each request gets its 200 or a 503 with Retry-After."""
    with live_server(tiny_pretrained, "--max-per-client", "4") as url:
        port = int(url.rsplit(":", 1)[1])
        small = burst(port, 12, 1)
        assert set(small) <= {"200", "503"} and small["200"] >= 1, small
        big = burst(port, 48, 4)
        assert set(big) <= {"200", "503"} and sum(big.values()) == 192, big
        assert big["200"] >= 4 and big["503"] >= 1, big  # the cap held, and did not shut the client out
        time.sleep(0.5)
        assert one_shot(port) == "200"  # nothing is left counted against the address


def trickle_bodies(socks, answers: dict, stop: threading.Event) -> None:
    """Send one body byte to each open socket every 0.2 s; a socket the server answers is read and left
    (``answers[sock]``: the outcome), as a client stops sending once it has its answer."""
    live = list(socks)
    while live and not stop.wait(0.2):
        for sock in select.select(live, [], [], 0)[0]:
            try:
                answers[sock] = outcome(*read_response(sock))
            except (OSError, AssertionError) as e:
                answers[sock] = type(e).__name__
            live.remove(sock)
        for sock in live:
            sock.send(b" ")


def test_slow_bodies_from_8_addresses_leave_room_for_a_9th(app, running):
    """The default caps (8 per address, 64 in all) filled by 64 slow bodies from 127.0.0.2-9: a client from
    127.0.0.10 still gets 200 within 2 s, each time; the slow connection that gave way got a 503."""
    limits = Limits(body_timeout=15, header_timeout=15)
    with running(app(limits), limits) as port:
        slow = [connect(port, f"127.0.0.{2 + i // 8}") for i in range(64)]
        for sock in slow:
            sock.sendall(HEAD + b"Content-Length: 1000\r\n\r\n{")
        time.sleep(0.3)
        answers, stop = {}, threading.Event()
        trickler = threading.Thread(target=trickle_bodies, args=(slow, answers, stop), daemon=True)
        trickler.start()
        try:
            for _ in range(3):
                start = time.monotonic()
                with connect(port, "127.0.0.10") as fast:
                    fast.sendall(REQUEST)
                    status, _, body = read_response(fast)
                assert status == 200 and time.monotonic() - start < 2.0, body
            time.sleep(0.5)
        finally:
            stop.set()
            trickler.join(5)
            for sock in slow:
                sock.close()
    assert 1 <= len(answers) <= 3 and set(answers.values()) == {"503"}, answers


def test_a_body_has_one_deadline_and_the_408_is_not_reset(app, running):
    """A byte every 0.1 s keeps each read in time, not the whole body: 408 at 1 s. The server then closes
    with a FIN and reads what the client still sends, so neither the 408 nor the close is a reset."""
    limits = Limits(body_timeout=1.0)
    with running(app(limits), limits) as port, connect(port) as sock:
        sock.sendall(HEAD + b"Content-Length: 1000\r\n\r\n{")
        start = time.monotonic()
        while not select.select([sock], [], [], 0.1)[0]:
            sock.send(b" ")
            assert time.monotonic() - start < 5, "no answer"
        status, headers, body = read_response(sock)
        assert status == 408 and 0.9 < time.monotonic() - start < 1.8
        assert json.loads(body)["error"] == "the request body took over 1 s to arrive"
        for _ in range(3):  # the rest of the body, as a client still sending it would: no reset comes back
            sock.sendall(b" " * 100)
            time.sleep(0.1)
        assert sock.recv(1) == b""  # a clean end of stream


def test_a_client_refused_while_sending_reads_its_503(app, running):
    """Past --max-per-client with every connection busy: the refused client sends its whole request, then
    reads a 503 with Retry-After and a clean end of stream."""
    limits = Limits(max_per_client=2, body_timeout=5)
    with running(app(limits), limits) as port:
        busy = [connect(port, "127.0.0.1") for _ in range(2)]
        for sock in busy:
            sock.sendall(HEAD + b"Content-Length: 100\r\n\r\n{")
        time.sleep(0.2)
        with connect(port) as refused:
            refused.sendall(REQUEST)
            time.sleep(0.2)  # the 503 and the FIN are there before the request is read
            refused.sendall(REQUEST)
            assert outcome(*read_response(refused)) == "503"
            assert refused.recv(1) == b""
        for sock in busy:
            sock.close()
