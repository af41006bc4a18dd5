"""/docs: Swagger UI for /openapi.json with its script, style and icon served by the app itself, from the
files the fastapi-offline package bundles (Swagger UI 5, which reads OpenAPI 3.1; read once when the app is
built): the page loads nothing from elsewhere, so it works offline, and its Content-Security-Policy holds it
to this server."""

from __future__ import annotations

import html
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response

ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "favicon.png": "image/png",
}
POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:"
)


def add_docs(app: FastAPI, title: str) -> None:
    import fastapi_offline

    folder = Path(fastapi_offline.__file__).parent / "static"
    page = get_swagger_ui_html(openapi_url="/openapi.json", title=html.escape(title),
                               swagger_js_url="/docs/swagger-ui-bundle.js",
                               swagger_css_url="/docs/swagger-ui.css",
                               swagger_favicon_url="/docs/favicon.png",
                               swagger_ui_parameters={"validatorUrl": None}).body  # fmt: skip

    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    def docs():
        return HTMLResponse(page, headers={"Content-Security-Policy": POLICY})

    for name, media in ASSETS.items():
        _add_asset(app, f"/docs/{name}", (folder / name).read_bytes(), media)


def _add_asset(app: FastAPI, path: str, content: bytes, media: str) -> None:
    headers = {"Cache-Control": "public, max-age=86400"}
    app.get(path, include_in_schema=False)(lambda: Response(content, media_type=media, headers=headers))
