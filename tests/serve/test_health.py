"""GET /api/health: 200 {"status": "ok", "model", "kind"} for load balancers, without calling the model, and
at once while long requests hold the model."""

import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from warmstart.serve.limits import Limits


def test_health_names_the_model(api, classifier_run, t5_text_run):
    answer = api(classifier_run).get("/api/health")
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok", "model": classifier_run.name, "kind": "classification"}
    assert api(t5_text_run).get("/api/health").json()["kind"] == "generation"  # as /api/info's task


class Busy:
    """A model whose answers take as long as a test likes: one at a time (as the real ones, under a lock),
    each waiting for ``release``; ``entered`` gets a token as each one starts."""

    task, streams = "classification", False

    def __init__(self):
        self.lock, self.release, self.entered = threading.Lock(), threading.Event(), queue.Queue()
        self.calls = 0

    def info(self) -> dict:
        self.calls += 1
        return {"labels": ["a", "b"]}

    def predict(self, fields: dict, deadline: float | None = None) -> dict:
        with self.lock:
            self.calls += 1
            self.entered.put(fields["text"])
            assert self.release.wait(30)
            return {**fields, "label": "a"}


def test_health_answers_while_long_requests_run(running):
    from warmstart.serve.app import create_app

    model, limits = Busy(), Limits(timeout=60)
    with running(create_app(model, limits, "busy"), limits) as port, ThreadPoolExecutor(3) as pool:
        url = f"http://127.0.0.1:{port}"
        single = [pool.submit(httpx.post, f"{url}/api/predict", json={"text": t}, timeout=30) for t in "ab"]
        several = pool.submit(
            httpx.post, f"{url}/api/predict/batch", json={"inputs": [{"text": "c"}]}, timeout=30
        )
        try:
            model.entered.get(timeout=10)  # one request holds the model, two wait for it
            time.sleep(0.2)
            for _ in range(5):
                start = time.monotonic()
                answer = httpx.get(f"{url}/api/health", timeout=5)
                assert answer.status_code == 200 and time.monotonic() - start < 1.0
                assert answer.json() == {"status": "ok", "model": "busy", "kind": "classification"}
            assert model.calls == 1  # health asked the model nothing
        finally:
            model.release.set()
        assert [f.result().json()["label"] for f in single] == ["a", "a"]
        assert several.result().json() == {"results": [{"text": "c", "label": "a"}]}
