"""Start the server: check the extra is installed, bind the port, load the model, run uvicorn."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

from warmstart.errors import WarmstartError
from warmstart.serve.limits import Limits
from warmstart.serve.load import open_model

INSTALL = "install the serve extra: pip install -c constraints.txt -e '.[serve]' in a warmstart checkout"


def check_installed() -> None:
    try:
        import fastapi  # noqa: F401
        import fastapi_offline  # noqa: F401
        import prometheus_client  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as e:
        raise WarmstartError(f"warmstart serve needs {e.name or 'the serve extra'}", INSTALL) from None


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port; a port in use or a bad host is one clear error."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM)
    except (OSError, OverflowError) as e:
        raise WarmstartError(f"cannot listen on {host}:{port} ({e})", "pass another --host") from None
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn; a live listener still refuses
    try:
        sock.bind((host, port))
        sock.listen(64)
    except OSError as e:
        sock.close()
        raise WarmstartError(f"cannot listen on {host}:{port}: {e.strerror or e}",
                             "pass another --port (or stop what uses it)") from None  # fmt: skip
    return sock


def make_server(app, limits: Limits):
    """uvicorn's server for ``app``, its connections guarded (serve.connections): request headers within
    limits.header_timeout s, idle kept-alive ones closed after limits.keep_alive s, caps on connections per
    client address and in all where waiting and slow ones give way (serve.guard), a 503 with Retry-After
    for each one refused and closes that never reset. No ``limit_concurrency``: its 503 (plain text, no
    Retry-After) would also count the refused connections still lingering."""
    import uvicorn

    from warmstart.serve.connections import protocol_class

    config = uvicorn.Config(app, log_level="warning", http=protocol_class(limits), ws="none",
                            timeout_keep_alive=limits.keep_alive)  # fmt: skip
    return uvicorn.Server(config)


def model_card(run: str) -> str | None:
    """The run's model card (README.md, as `warmstart export` writes it), served at /card; None if none."""
    path = Path(run) / "README.md"
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None


def serve(run: str, host: str = "127.0.0.1", port: int = 8000, limits: Limits | None = None,
          access_log: bool = True, head: str | None = None) -> None:  # fmt: skip
    """Serve ``run`` until Ctrl+C; ``access_log``: one line per request on stderr; ``head``: the head of a
    multitask encoder served."""
    limits = limits or Limits()
    check_installed()
    if not Path(run).is_dir():
        raise WarmstartError(f"no such run directory: {run}", "pass the directory of a warmstart run")
    from warmstart.serve.app import create_app

    sock = bind(host, port)
    try:
        model = open_model(run, head)
        log = sys.stderr if access_log else None
        app = create_app(model, limits, Path(run).resolve().name, log, model_card(run))
        shown = f"[{host}]" if ":" in host else host
        print(f"serving {run} ({model.task.replace('_', ' ')}) at http://{shown}:{sock.getsockname()[1]}/ "
              "(API: /docs, /openapi.json; metrics: /metrics); Ctrl+C stops", file=sys.stderr)  # fmt: skip
        if host not in ("127.0.0.1", "localhost", "::1"):
            print(
                f"warning: {host} is reachable from other machines; the server has no login", file=sys.stderr
            )
        make_server(app, limits).run(sockets=[sock])
    finally:
        sock.close()
