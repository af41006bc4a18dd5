"""The access log: one line per request (client, time, request line, status, bytes, milliseconds), every
answer logged, the app's own errors too; `warmstart serve` writes it on stderr unless --no-access-log."""

import io
import re
import time

import httpx

from tests.helpers.serve import live_server
from warmstart.serve.access import _escaped

JSON = {"content-type": "application/json"}
LINE = re.compile(
    r"(?P<client>\S+) - - \[\d{2}/\w{3}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}\] "
    r'"(?P<method>\S+) (?P<target>\S+) HTTP/1\.1" (?P<status>\d{3}) (?P<size>\d+) (?P<ms>\d+\.\d)ms'
)


def logged(text: str) -> list:
    found = [LINE.fullmatch(line) for line in text.splitlines()]
    assert all(found), text
    return found


def test_one_line_for_each_request(api, classifier_run):
    log = io.StringIO()
    client = api(classifier_run, log=log, max_chars=100)
    answer = client.post("/api/predict", json={"text": "A warm film."})
    assert answer.status_code == 200
    assert client.get("/nope?x=1").status_code == 404
    assert client.post("/api/predict", content=b'{"text": ', headers=JSON).status_code == 400
    assert client.post("/api/predict", content=b"x" * 200_000, headers=JSON).status_code == 413  # BodyLimit's
    assert client.get("/a%22b%0Ac").status_code == 404
    found = logged(log.getvalue())
    assert [(m["method"], m["target"], m["status"]) for m in found] == [
        ("POST", "/api/predict", "200"),
        ("GET", "/nope?x=1", "404"),
        ("POST", "/api/predict", "400"),
        ("POST", "/api/predict", "413"),
        ("GET", "/a%22b%0Ac", "404"),  # as sent: one field of one line
    ]
    assert {m["client"] for m in found} == {"testclient"}
    assert int(found[0]["size"]) == len(answer.content) and float(found[0]["ms"]) > 0


def test_what_a_client_sends_cannot_break_the_line():
    assert _escaped(b'/a"b c\n\\\xff') == "/a\\x22b\\x20c\\x0a\\x5c\\xff"


def wait_for(lines: list, what: str) -> list:
    deadline = time.monotonic() + 20
    while not any(what in line for line in lines) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [line for line in lines if what in line]


def test_the_server_logs_on_stderr(tiny_pretrained):
    lines = []
    with live_server(tiny_pretrained, log=lines) as url:
        assert httpx.get(f"{url}/api/health").status_code == 200
        assert httpx.post(f"{url}/api/predict", json={"text": "A [MASK] city."}).status_code == 200
        health, predict = wait_for(lines, "/api/health"), wait_for(lines, "/api/predict")
    (health,), (predict,) = logged("\n".join(health)), logged("\n".join(predict))
    assert (health["client"], health["method"], health["status"]) == ("127.0.0.1", "GET", "200")
    assert (predict["method"], predict["status"]) == ("POST", "200")


def test_no_access_log_silences_it(tiny_pretrained):
    lines = []
    with live_server(tiny_pretrained, "--no-access-log", log=lines) as url:
        for _ in range(3):
            assert httpx.get(f"{url}/api/health").status_code == 200
        time.sleep(0.5)
    assert not [line for line in lines if "/api/health" in line]
