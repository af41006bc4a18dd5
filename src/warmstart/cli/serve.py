"""`warmstart serve RUN`: a local web page and JSON API for a finetuned, masked-LM or generating run."""

from __future__ import annotations

import argparse
import dataclasses

from warmstart.cli.common import head_flag


def _serve(a):
    from warmstart.serve.limits import Limits
    from warmstart.serve.run import serve

    given = {f.name: getattr(a, f.name) for f in dataclasses.fields(Limits) if hasattr(a, f.name)}
    limits = Limits(**given)  # each flag --x-y is the field x_y
    serve(a.run, a.host, a.port, limits, access_log=not a.no_access_log, head=a.head)


def _positive(number):
    def parse(text: str):
        value = number(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
        return value

    return parse


def _port(text: str) -> int:
    """A TCP port: 1 to 65535, or 0 (the system picks a free one)."""
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1 to 65535 (0: any free port), got {text}")
    return value


_port.__name__ = "int"  # argparse's own words for a non-number: "invalid int value: 'x'"


def add_serve(sub) -> None:
    sv = sub.add_parser(
        "serve",
        help="a local web page and JSON API for a run: classify, tag, answer, fill [MASK] or generate",
        description="Serve a finetuned run (classification, tagging, extractive_qa, multiple_choice, "
        "text_to_text), a masked-LM pretrained encoder (fill [MASK]) or a gpt2/t5/bart run (generate) on "
        "http://HOST:PORT/ (the page), /api (JSON; docs at /docs, schema at /openapi.json) and /metrics "
        "(Prometheus). Needs the serve extra (fastapi, uvicorn, prometheus_client, fastapi-offline): "
        "pip install -c constraints.txt -e '.[serve]'.",
    )
    sv.add_argument("run", help="run directory (a finetune run's best model, a pretrain run's final one)")
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (default: this machine only)")
    sv.add_argument("--port", type=_port, default=8000, help="port to listen on (0: any free port)")
    sv.add_argument("--max-chars", type=_positive(int), default=2000, help="most characters in a request")
    sv.add_argument(
        "--max-batch",
        type=_positive(int),
        default=64,
        help="most inputs in one /api/predict/batch request (their text counts in --max-chars together)",
    )
    sv.add_argument("--max-new-tokens", type=_positive(int), default=200, help="generation: most new tokens")
    sv.add_argument("--timeout", type=_positive(float), default=30.0, help="seconds a request may run")
    sv.add_argument(
        "--header-timeout",
        type=_positive(float),
        default=5.0,
        help="seconds a client may take to send headers",
    )
    sv.add_argument(
        "--body-timeout",
        type=_positive(float),
        default=10.0,
        help="seconds a request body may take to arrive, all of it (else 408)",
    )
    sv.add_argument(
        "--keep-alive", type=_positive(float), default=5.0, help="seconds an idle connection stays open"
    )
    sv.add_argument(
        "--max-per-client",
        type=_positive(int),
        default=8,
        help="connections one client address may hold open (its idle ones give way first)",
    )
    sv.add_argument(
        "--max-connections",
        type=_positive(int),
        default=64,
        help="connections open in all (past it, idle or slow ones of the address holding most give way)",
    )
    sv.add_argument(
        "--no-access-log",
        action="store_true",
        help="do not write a line on stderr for each request (client, time, request, status, bytes, ms)",
    )
    head_flag(sv)
    sv.set_defaults(func=_serve)
