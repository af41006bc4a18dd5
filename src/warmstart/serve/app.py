"""The FastAPI app around one served model: the page at /, the JSON API under /api, /openapi.json.

Every error is ``{"error": "<one line>"}``: 400 bad JSON or input the model refuses, 413 too much text,
422 unknown fields, wrong types or text that is not valid Unicode (a lone surrogate), 404/405 unknown
routes, 504 past the time limit. The app reads no file named by a client: its one page is read from the
package when the app is built.
"""

import itertools
import json
import threading
import time
from importlib.resources import files

import anyio
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException

from warmstart import __version__
from warmstart.errors import WarmstartError
from warmstart.serve.limits import BodyLimit, Limits, characters, unpaired_surrogate
from warmstart.serve.schemas import BODIES, TEXT_FIELDS

PAGE_POLICY = "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'"


class ApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _error(status: int, message: str) -> JSONResponse:
    # a lone surrogate quoted from the request (an unknown field's name) is shown escaped, not a 500
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    return JSONResponse({"error": message}, status_code=status)


async def _invalid(request, exc: RequestValidationError) -> JSONResponse:
    err = exc.errors()[0]
    where = ".".join(str(x) for x in err["loc"] if x != "body")
    if err["type"] == "json_invalid":
        return _error(400, "the body is not valid JSON; send a JSON object")
    if err["type"] == "string_unicode":  # pydantic's word for a lone surrogate in a field's name
        return _error(422, _surrogate(where or "a field name"))
    if err["type"] == "extra_forbidden":
        return _error(422, f"unknown field '{where}'; see /openapi.json for the fields this model takes")
    if not where:
        return _error(422, f"the body must be a JSON object ({err['msg']})")
    return _error(422, f"{where}: {err['msg']}")


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


def _fields(body, limits: Limits, model) -> dict:
    fields = body.model_dump(exclude_none=True)
    if model.streams:  # the model's own default, within the server's limit
        fields.setdefault("max_new_tokens", min(model.max_new_tokens, limits.max_new_tokens))
    bad = unpaired_surrogate(fields)
    if bad is not None:
        raise ApiError(422, _surrogate(bad))
    count = characters(fields, TEXT_FIELDS)
    if count > limits.max_chars:
        raise ApiError(413, f"the input has {count:,} characters, over the limit of "
                            f"{limits.max_chars:,}; shorten it (the limit is serve --max-chars)")  # fmt: skip
    if fields.get("max_new_tokens", 0) > limits.max_new_tokens:
        raise ApiError(413, f"max_new_tokens is over the limit of {limits.max_new_tokens}; ask for fewer")
    return fields


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


def create_app(model, limits: Limits | None = None, name: str = "model") -> FastAPI:
    """The app for ``model`` (from ``load.open_model``): /api/predict takes the body of its kind."""
    limits = limits or Limits()
    body_cls = BODIES[model.kind]
    app = FastAPI(title=f"warmstart serve: {name}", version=__version__, docs_url=None, redoc_url=None,
                  exception_handlers=_handlers(),
                  description=f"A {model.kind.replace('_', ' ')} model served by warmstart.")  # fmt: skip
    app.add_middleware(BodyLimit, max_body=limits.max_body, timeout=limits.body_timeout)
    page = files("warmstart.serve").joinpath("page.html").read_text(encoding="utf-8")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index():
        return HTMLResponse(page, headers={"Content-Security-Policy": PAGE_POLICY})

    @app.get("/api/info", summary="what the model does and the limits of a request")
    def info() -> dict:
        sizes = {"max_chars": limits.max_chars, "timeout": limits.timeout}
        if model.streams:
            sizes["max_new_tokens_limit"] = limits.max_new_tokens
        return {"task": model.kind, "name": name, "streams": model.streams, **sizes, **model.info()}

    async def predict(body) -> dict:
        fields = _fields(body, limits, model)
        deadline = time.monotonic() + limits.timeout
        return await _in_thread(lambda: model.predict(fields, deadline), limits)

    predict.__annotations__["body"] = body_cls
    app.post("/api/predict", summary=f"the model's answer ({model.kind})")(predict)
    if model.streams:
        _add_stream(app, model, limits, body_cls)
    return app


def _add_stream(app: FastAPI, model, limits: Limits, body_cls) -> None:
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
            except WarmstartError as e:
                yield _event("error", {"error": str(e)})
            finally:
                cancelled.set()

        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)

    stream.__annotations__["body"] = body_cls
    app.post("/api/stream", summary="the generated text, streamed as server-sent events",
             response_class=StreamingResponse)(stream)  # fmt: skip
