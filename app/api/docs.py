"""The interactive API documentation, from files inside the package: it works offline.

FastAPI's own ``/docs`` and ``/redoc`` load Swagger UI and ReDoc from a CDN, so on a machine
without internet access both pages were blank. Here the pinned files in ``docs_static/``
(versions, sources and checksums in its ``MANIFEST``) are served at ``/docs-static`` and the
two pages point at them, at a local icon, and at nothing outside the server. Like
``/openapi.json`` they are public: they show the contract, nothing of the data. The
contract's response examples keep their nulls (``_with_null_examples``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

from app.api import schemas

STATIC_DIR = Path(__file__).with_name("docs_static")
STATIC_PATH = "/docs-static"
SWAGGER_JS = "swagger-ui-bundle.js"
SWAGGER_CSS = "swagger-ui.css"
REDOC_JS = "redoc.standalone.js"
FAVICON = "favicon-32x32.png"

# Swagger UI's defaults, but for the badge that sends the spec's URL to validator.swagger.io.
SWAGGER_UI_PARAMETERS = {"validatorUrl": None}

router = APIRouter(include_in_schema=False)


@router.get("/docs", response_class=HTMLResponse)
async def swagger_ui(request: Request) -> HTMLResponse:
    """Swagger UI: try every call from the browser (a bearer token goes in Authorize)."""
    return _unframed(
        get_swagger_ui_html(
            **_page(request, "Swagger UI"),
            swagger_js_url=_asset(request, SWAGGER_JS),
            swagger_css_url=_asset(request, SWAGGER_CSS),
            swagger_favicon_url=_asset(request, FAVICON),
            swagger_ui_parameters=SWAGGER_UI_PARAMETERS,
        )
    )


@router.get("/redoc", response_class=HTMLResponse)
async def redoc(request: Request) -> HTMLResponse:
    """ReDoc: the same contract as one readable page."""
    return _unframed(
        get_redoc_html(
            **_page(request, "ReDoc"),
            redoc_js_url=_asset(request, REDOC_JS),
            redoc_favicon_url=_asset(request, FAVICON),
            with_google_fonts=False,
        )
    )


def _unframed(response: HTMLResponse) -> HTMLResponse:
    """``response`` that no other site may show in a frame (Swagger UI's "Try it out" could
    be clicked through one)."""
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Content-Security-Policy"] = "frame-ancestors 'none'"
    return response


def install_docs(app: FastAPI) -> None:
    """Serve ``/docs``, ``/redoc`` and their files on ``app`` (created with
    ``docs_url=None, redoc_url=None`` so that FastAPI's CDN-based pages are not there too)."""
    app.include_router(router)
    app.mount(STATIC_PATH, StaticFiles(directory=STATIC_DIR), name="docs-static")
    app.openapi = _with_null_examples(app.openapi)  # type: ignore[method-assign]


def _with_null_examples(openapi: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    """``openapi`` with the response models' examples as ``app.api.schemas`` writes them.

    FastAPI drops every null from the document it builds, the examples' included, so the
    ClassifyResponse example lost its ``"reason": null`` and StatsResponse its ``"user":
    null``: keys the server does send.
    """

    def document() -> dict[str, Any]:
        built = openapi()
        components = built.get("components", {}).get("schemas", {})
        for name, examples in _model_examples().items():
            if name in components:
                components[name]["examples"] = examples
        return built

    return document


def _model_examples() -> dict[str, Any]:
    examples = {}
    for model in vars(schemas).values():
        if isinstance(model, type) and issubclass(model, BaseModel):
            extra = model.model_config.get("json_schema_extra")
            if isinstance(extra, dict) and "examples" in extra:
                examples[model.__name__] = extra["examples"]
    return examples


class _Page(TypedDict):
    openapi_url: str
    title: str


def _page(request: Request, viewer: str) -> _Page:
    return {
        "openapi_url": f"{_base(request)}{request.app.openapi_url}",
        "title": f"{request.app.title} - {viewer}",
    }


def _asset(request: Request, name: str) -> str:
    return f"{_base(request)}{STATIC_PATH}/{name}"


def _base(request: Request) -> str:
    # Behind a proxy that serves the app under a prefix (uvicorn --root-path), as FastAPI's
    # own docs pages do.
    root: str = request.scope.get("root_path", "")
    return root.rstrip("/")
