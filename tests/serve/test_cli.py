"""`warmstart serve` from the command line: bad input is one line on stderr with exit code 2; a good run
is served on the port asked for."""

import socket
import sys

import httpx
import pytest

from tests.helpers.cli import assert_one_line_error, run
from tests.helpers.serve import live_server
from warmstart.cli.main import main


def test_run_argument_is_required(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["serve"])
    assert exit_.value.code == 2 and "required: run" in capsys.readouterr().err


def test_missing_run_directory(capsys, tmp_path):
    code, _, err = run(capsys, "serve", tmp_path / "nope")
    assert_one_line_error(code, err, "no such run directory", "nope")


def test_not_a_run_directory(capsys, tmp_path):
    code, _, err = run(capsys, "serve", tmp_path, "--port", "0")
    assert_one_line_error(code, err, "no model found in", str(tmp_path))


def test_port_in_use(capsys, tiny_pretrained):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code, _, err = run(capsys, "serve", tiny_pretrained, "--port", port)
    assert_one_line_error(code, err, f"cannot listen on 127.0.0.1:{port}", "another --port")


def test_missing_extra_says_what_to_install(capsys, monkeypatch, tiny_pretrained):
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    code, _, err = run(capsys, "serve", tiny_pretrained)
    assert_one_line_error(code, err, "needs uvicorn", "pip install", "[serve]")


@pytest.mark.parametrize("flag", ["--max-chars", "--max-batch", "--body-timeout", "--max-connections"])
def test_bad_limit_flag(capsys, tiny_pretrained, flag):
    with pytest.raises(SystemExit) as exit_:
        main(["serve", str(tiny_pretrained), flag, "0"])
    assert exit_.value.code == 2 and "must be above 0" in capsys.readouterr().err


def test_serves_on_a_free_port(tiny_pretrained):
    with live_server(tiny_pretrained, "--max-chars", "50", "--max-batch", "2") as url:
        assert url.startswith("http://127.0.0.1:")
        assert httpx.get(f"{url}/api/info").json()["task"] == "fill_mask"
        health = {"status": "ok", "model": tiny_pretrained.name, "kind": "fill_mask"}
        assert httpx.get(f"{url}/api/health").json() == health
        answer = httpx.post(f"{url}/api/predict", json={"text": "A [MASK] city.", "top_k": 2}).json()
        assert len(answer["masks"][0]) == 2
        assert httpx.post(f"{url}/api/predict", json={"text": "[MASK]" * 10}).status_code == 413
        inputs = [{"text": "A [MASK] city.", "top_k": 2}, {"text": "The [MASK].", "top_k": 1}]
        results = httpx.post(f"{url}/api/predict/batch", json={"inputs": inputs}).json()["results"]
        assert results[0] == answer and len(results[1]["masks"][0]) == 1
        too_many = httpx.post(f"{url}/api/predict/batch", json={"inputs": inputs * 2})
        assert too_many.status_code == 413 and "over the limit of 2" in too_many.json()["error"]
