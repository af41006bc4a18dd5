"""/metrics in the Prometheus text format (prometheus_client): requests by path and status, their latency,
the inputs the model answered, and which model is served. Each app has its own registry."""

from __future__ import annotations

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    Info,
    generate_latest,
)
from starlette.responses import Response

from warmstart import __version__
from warmstart.serve.access import Answered

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)  # seconds
OTHER = "other"  # the path label of every request to no route of the app (404s): one series, not one a path


class Metrics:
    """The figures of one app; ``observe`` is a serve.access observer, ``predicted(n)`` counts answers."""

    def __init__(self, name: str, task: str):
        self.registry = CollectorRegistry()
        self.paths: set[str] = set()  # the app's routes, set once they are all added
        self.requests = Counter("warmstart_serve_requests", "HTTP requests answered, by path and status",
                                ["path", "status"], registry=self.registry)  # fmt: skip
        self.latency = Histogram("warmstart_serve_request_duration_seconds",
                                 "seconds from a request's start to the end of its response, by path",
                                 ["path"], buckets=BUCKETS, registry=self.registry)  # fmt: skip
        self.examples = Counter("warmstart_serve_examples_predicted",
                                "inputs the model answered (each input of a batch counts)",
                                registry=self.registry)  # fmt: skip
        model = Info("warmstart_serve_model", "the served model", registry=self.registry)
        model.info({"name": name, "task": task, "version": __version__})

    def observe(self, answered: Answered) -> None:
        path = answered.path if answered.path in self.paths else OTHER
        self.requests.labels(path, str(answered.status)).inc()
        self.latency.labels(path).observe(answered.seconds)

    def predicted(self, count: int = 1) -> None:
        self.examples.inc(count)

    def response(self) -> Response:
        """The figures now, in the Prometheus text format: GET /metrics."""
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)
