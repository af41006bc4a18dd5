"""The FastAPI app around one served model: the page at /, the JSON API under /api, /openapi.json.

/api/predict answers one input, /api/predict/batch several in order (``{"inputs": [...]}`` ->
``{"results": [...]}``), /api/stream streams generated text, /api/info describes the model and the limits,
/api/health is a cheap 200 for load balancers, /metrics the Prometheus figures (serve.metrics), /docs Swagger
UI served from the app itself (serve.docs), /card the run's model card (its README.md) where it has one.
Each request is measured once (serve.access): a log line, when the app is given a stream, and /metrics.
Every error is ``{"error": "<one line>"}`` (the ``Error`` schema of /openapi.json, which lists for each
endpoint the statuses it can answer): 400 bad JSON or input the model refuses, 408 headers or body too slow,
413 too much text, too many inputs or too many bytes, 422 unknown fields, wrong types or text that is not
valid Unicode (a lone surrogate), 503 no room for the connection (serve.connections), 504 past the time
limit; 404/405 for unknown routes. The app reads no file named by a client: its page, the docs' assets and
the model card are read when the app is built.
"""

import itertools
import json
import threading
import time
from importlib.resources import files
from typing import TextIO

import anyio
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, StreamingResponse
from starlette.exceptions import HTTPException

from warmstart import __version__
from warmstart.errors import WarmstartError
from warmstart.serve.access import Measured, access_log
from warmstart.serve.docs import add_docs
from warmstart.serve.limits import BodyLimit, Limits, characters, unpaired_surrogate
from warmstart.serve.metrics import Metrics
from warmstart.serve.schemas import BATCHES, BODIES, TEXT_FIELDS, BatchOut, Health, errors

PAGE_POLICY = "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'"


class ApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _error(status: int, message: str) -> JSONResponse:
    # a lone surrogate quoted from the request (an unknown field's name) is shown escaped, not a 500
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    return JSONResponse({"error": message}, status_code=status)


def _where(loc) -> str:
    """A field's place in the body as a client writes it: ``text``, ``choices[1]``, ``inputs[3].text``."""
    where = ""
    for part in loc[1:] if loc[:1] == ("body",) else loc:
        where += f"[{part}]" if isinstance(part, int) else f".{part}" if where else str(part)
    return where


async def _invalid(request, exc: RequestValidationError) -> JSONResponse:
    errs = exc.errors()  # an unknown field first: {"review": ...} is a misnamed text, not a missing one
    err = next((e for e in errs if e["type"] == "extra_forbidden"), errs[0])
    where = _where(tuple(err["loc"]))
    if err["type"] == "json_invalid":
        return _error(400, "the body is not valid JSON; send a JSON object")
    if err["type"] == "string_unicode":  # pydantic's word for a lone surrogate in a field's name
        return _error(422, _surrogate(f"a field name of {where}" if where else "a field name"))
    if err["type"] == "extra_forbidden":
        return _error(422, f"unknown field '{where}'; {_taken(request, err['loc'])}; see /openapi.json")
    if not where:
        return _error(422, f"the body must be a JSON object ({err['msg']})")
    if err["type"] in ("model_attributes_type", "model_type"):  # an input of a batch that is no object
        return _error(422, f"{where} must be a JSON object")
    return _error(422, f"{where}: {err['msg']}")


def _taken(request, loc) -> str:
    """The fields the object holding an unknown field takes: an input's, or a batch's ``inputs``."""
    body = getattr(request.app.state, "body", None)
    if body is None:
        return "this model takes other fields"
    in_batch = request.url.path.endswith("/batch")
    if in_batch and len([p for p in loc if p != "body"]) == 1:
        return "a batch takes inputs"
    names = [n if f.is_required() else f"{n} (optional)" for n, f in body.model_fields.items()]
    return f"{'each input' if in_batch else 'this model'} takes {', '.join(names)}"


def _surrogate(where: str) -> str:
    return (
        f"{where} holds an unpaired surrogate (a lone \\ud800-\\udfff escape); the text must be valid Unicode"
    )


def _handlers() -> dict:
    return {
        RequestValidationError: _invalid,
        HTTPException: lambda request, exc: _error(exc.status_code, str(exc.detail)),
        ApiError: lambda request, exc: _error(exc.status, str(exc)),
        WarmstartError: lambda request, exc: _error(400, str(exc)),
    }


def _item(body, limits: Limits, model, where: str = "") -> dict:
    """The fields of one input (``where``: its place in a batch, ``inputs[3].``), checked for text that is
    not Unicode and for more new tokens than the limit."""
    fields = body.model_dump(exclude_none=True)
    if model.streams:  # the model's own default, within the server's limit
        fields.setdefault("max_new_tokens", min(model.max_new_tokens, limits.max_new_tokens))
    bad = unpaired_surrogate(fields)
    if bad is not None:
        raise ApiError(422, _surrogate(where + bad))
    if fields.get("max_new_tokens", 0) > limits.max_new_tokens:
        limit = limits.max_new_tokens
        raise ApiError(413, f"{where}max_new_tokens is over the limit of {limit}; ask for fewer")
    return fields


def _check_chars(count: int, limits: Limits, what: str) -> None:
    if count > limits.max_chars:
        raise ApiError(413, f"{what} has {count:,} characters, over the limit of "
                            f"{limits.max_chars:,}; shorten it (the limit is serve --max-chars)")  # fmt: skip


def _fields(body, limits: Limits, model) -> dict:
    fields = _item(body, limits, model)
    _check_chars(characters(fields, TEXT_FIELDS), limits, "the input")
    return fields


def _batch(body, limits: Limits, model) -> list[dict]:
    """The fields of each input of a batch; the text of all of them together counts against max_chars."""
    if len(body.inputs) > limits.max_batch:
        raise ApiError(413, f"the batch has {len(body.inputs)} inputs, over the limit of {limits.max_batch}; "
                            "send fewer (the limit is serve --max-batch)")  # fmt: skip
    items = [_item(one, limits, model, f"inputs[{i}].") for i, one in enumerate(body.inputs)]
    _check_chars(sum(characters(fields, TEXT_FIELDS) for fields in items), limits, "the batch")
    return items


def _predict_all(model, items: list[dict], deadline: float, cancelled: threading.Event) -> list[dict]:
    """``model.predict`` of each input in turn (so each answer is /api/predict's); an input the model refuses
    is a WarmstartError naming its place, and the rest stop once the request has ended (``cancelled``)."""
    results = []
    for i, fields in enumerate(items):
        if cancelled.is_set():
            break
        try:
            results.append(model.predict(fields, deadline))
        except WarmstartError as e:
            raise WarmstartError(f"inputs[{i}]: {e.problem}", e.fix) from None
    return results


async def _in_thread(fn, limits: Limits, cancelled: threading.Event | None = None):
    """``fn()`` in a worker thread; past the time limit the request ends with 504 (the thread is left to
    finish, and told to stop through ``cancelled``)."""
    try:
        with anyio.fail_after(limits.timeout):
            return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)
    except TimeoutError:
        if cancelled is not None:
            cancelled.set()
        raise ApiError(504, f"the model took over {limits.timeout:g} s; send less text or raise "
                            "serve --timeout") from None  # fmt: skip


def _event(name: str, data: dict) -> str:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


POST_ERRORS = (400, 408, 413, 422, 503, 504)
# a GET's body is not read (limits.BodyLimit): only the connection's limits apply
GET_ERRORS = errors(408, 503, says={408: "the request headers took over serve --header-timeout to arrive"})


def create_app(model, limits: Limits | None = None, name: str = "model", log: TextIO | None = None,
               card: str | None = None) -> FastAPI:  # fmt: skip
    """The app for ``model`` (from ``load.open_model``): /api/predict takes the body of its task. ``log``: a
    stream for the access log (none: no log); ``card``: the model card's text (Markdown), served at /card."""
    limits = limits or Limits()
    app = FastAPI(title=f"warmstart serve: {name}", version=__version__, docs_url=None, redoc_url=None,
                  exception_handlers=_handlers(),
                  description=f"A {model.task.replace('_', ' ')} model served by warmstart.")  # fmt: skip
    metrics = Metrics(name, model.task)
    app.state.body = BODIES[model.task]  # what an unknown field's error lists
    app.add_middleware(BodyLimit, max_body=limits.max_body, timeout=limits.body_timeout)
    observers = [metrics.observe] + ([access_log(log)] if log is not None else [])
    app.add_middleware(Measured, observers=observers)  # outermost: BodyLimit's answers are measured too
    _add_pages(app, model, limits, name, card)
    _add_predict(app, model, limits, metrics.predicted)
    if model.streams:
        _add_stream(app, model, limits, BODIES[model.task], metrics.predicted)
    add_docs(app, app.title)
    app.get("/metrics", include_in_schema=False)(metrics.response)
    metrics.paths = {route.path for route in app.routes}
    return app


def _add_pages(app: FastAPI, model, limits: Limits, name: str, card: str | None) -> None:
    page = files("warmstart.serve").joinpath("page.html").read_text(encoding="utf-8")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index():
        return HTMLResponse(page, headers={"Content-Security-Policy": PAGE_POLICY})

    if card is not None:
        app.get("/card", include_in_schema=False)(lambda: PlainTextResponse(card, media_type="text/markdown"))

    @app.get("/api/info", summary="what the model does and the limits of a request", responses=GET_ERRORS)
    def info() -> dict:
        sizes = {"max_chars": limits.max_chars, "max_batch": limits.max_batch, "timeout": limits.timeout}
        if model.streams:
            sizes["max_new_tokens_limit"] = limits.max_new_tokens
        links = {"docs": "/docs", "card": "/card" if card is not None else None}
        return {"task": model.task, "name": name, "streams": model.streams, **sizes, **links, **model.info()}

    alive = {"status": "ok", "model": name, "kind": model.task}

    @app.get("/api/health", summary="200 while the server answers (for load balancers)", responses=GET_ERRORS)
    async def health() -> Health:
        """Runs no model and takes no lock or worker thread: it answers while long requests run."""
        return alive


def _add_predict(app: FastAPI, model, limits: Limits, predicted) -> None:
    async def predict(body) -> dict:
        fields = _fields(body, limits, model)
        deadline = time.monotonic() + limits.timeout
        answer = await _in_thread(lambda: model.predict(fields, deadline), limits)
        predicted(1)
        return answer

    async def predict_batch(body) -> BatchOut:
        items = _batch(body, limits, model)
        deadline, cancelled = time.monotonic() + limits.timeout, threading.Event()
        results = await _in_thread(lambda: _predict_all(model, items, deadline, cancelled), limits, cancelled)
        predicted(len(results))
        return {"results": results}

    predict.__annotations__["body"] = BODIES[model.task]
    predict_batch.__annotations__["body"] = BATCHES[model.task]
    app.post("/api/predict", summary=f"the model's answer ({model.task})",
             responses=errors(*POST_ERRORS))(predict)  # fmt: skip
    predict_batch.__doc__ = (
        f"Up to {limits.max_batch} inputs (serve --max-batch), each as /api/predict takes it, with at most "
        f"{limits.max_chars:,} characters of text in all; the answers come in input order, each the one "
        "/api/predict gives. An input that is refused fails the whole request, naming its place: inputs[i]."
    )
    says = {413: "too much: over serve --max-batch inputs, over --max-chars characters of text in all, "
                 "over --max-new-tokens for one input, or too many body bytes"}  # fmt: skip
    app.post("/api/predict/batch", summary=f"the model's answers to several inputs, in order ({model.task})",
             responses=errors(*POST_ERRORS, says=says))(predict_batch)  # fmt: skip


def _add_stream(app: FastAPI, model, limits: Limits, body_cls, predicted) -> None:
    async def stream(body) -> StreamingResponse:
        """Server-sent events: ``text`` events with the pieces of the answer as they are generated, then
        ``done`` with the whole text (or ``error`` with one line). Bad input is a 400 before any event."""
        fields = _fields(body, limits, model)
        cancelled = threading.Event()
        pieces = model.stream(fields, time.monotonic() + limits.timeout, cancelled)
        first = await _in_thread(lambda: next(pieces, ""), limits, cancelled)

        def events():
            text = ""
            try:
                for piece in itertools.chain([first], pieces):
                    if piece:
                        text += piece
                        yield _event("text", {"text": piece})
                yield _event("done", {"generated": text})
                predicted(1)
            except WarmstartError as e:
                yield _event("error", {"error": str(e)})
            finally:
                cancelled.set()

        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)

    stream.__annotations__["body"] = body_cls
    app.post("/api/stream", summary="the generated text, streamed as server-sent events",
             response_class=StreamingResponse, responses=errors(*POST_ERRORS))(stream)  # fmt: skip
