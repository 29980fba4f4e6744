"""The API documentation pages: offline, from pinned assets that ship in the package.

``/docs`` and ``/redoc`` must load nothing from outside the server (they were blank on a
machine without internet), and the files they load must be the ones ``docs_static/MANIFEST``
pins. The examples in the contract are checked in ``test_docs_examples.py``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
import tomllib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.api.docs import STATIC_DIR, STATIC_PATH
from tests.api.conftest import Api, MakeApi

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["/docs", "/redoc"]
TOKEN = "docs-test-token"
CONTENT_TYPES = {
    ".js": ("text/javascript", "application/javascript"),
    ".css": ("text/css",),
    ".png": ("image/png",),
    ".json": ("application/json",),
}


# --- the pages and their files --------------------------------------------------------------


class _Links(HTMLParser):
    """Every ``src``, ``href`` and ReDoc ``spec-url`` in a page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.links += [v for k, v in attrs if k in ("src", "href", "spec-url") and v]


def links_of(page: str) -> list[str]:
    """The resources a page loads: its attributes, and Swagger UI's ``url: '...'``."""
    parser = _Links()
    parser.feed(page)
    return parser.links + re.findall(r"\burl: '([^']*)'", page)


def content_type_of(link: str) -> tuple[str, ...]:
    suffix = Path(link).suffix
    return CONTENT_TYPES[suffix]


@pytest.mark.parametrize("page", PAGES)
def test_a_docs_page_loads_only_files_of_the_server(client: TestClient, page: str) -> None:
    reply = client.get(page)
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/html")
    assert not re.search(r"https?://", reply.text), "a page refers to another host"
    links = links_of(reply.text)
    assert "/openapi.json" in links
    assert any(link.endswith(".js") for link in links)
    for link in links:
        assert link.startswith("/") and not link.startswith("//"), link
        served = client.get(link)
        assert served.status_code == 200, link
        assert served.headers["content-type"].startswith(content_type_of(link)), link


def test_swagger_ui_sends_the_contract_to_no_validator(client: TestClient) -> None:
    assert '"validatorUrl": null' in client.get("/docs").text


def test_the_pages_follow_a_root_path(api: Api) -> None:
    behind_proxy = TestClient(api.app, root_path="/spamfilter")
    for page in PAGES:
        links = links_of(behind_proxy.get(page).text)
        assert links and all(link.startswith("/spamfilter/") for link in links), links


def test_the_docs_are_public_when_tokens_are_configured(make_api: MakeApi) -> None:
    secured = make_api(api_tokens=[TOKEN])
    assert secured.client.get("/v1/stats").status_code == 401
    for page in PAGES:
        for link in [page, *links_of(secured.client.get(page).text)]:
            assert secured.client.get(link).status_code == 200, link


def test_fastapi_cdn_pages_are_not_there_too(api: Api) -> None:
    assert api.app.docs_url is None
    assert api.app.redoc_url is None
    assert api.client.get("/docs/oauth2-redirect").status_code == 404


def manifest() -> dict[str, tuple[str, str, str]]:
    """{file: (sha256, package@version, source)} from ``docs_static/MANIFEST``."""
    entries: dict[str, tuple[str, str, str]] = {}
    for line in (STATIC_DIR / "MANIFEST").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        digest, name, package, source = line.split()
        entries[name] = (digest, package, source)
    return entries


def test_the_manifest_lists_every_asset_with_its_source() -> None:
    entries = manifest()
    shipped = {p.name for p in STATIC_DIR.iterdir()} - {"MANIFEST", "README.md"}
    assert set(entries) == shipped
    for name, (digest, package, source) in entries.items():
        assert re.fullmatch(r"[0-9a-f]{64}", digest), name
        assert re.fullmatch(r"[a-z-]+@\d+\.\d+\.\d+", package), name
        tarball = package.replace("@", "-")
        assert source.startswith("https://registry.npmjs.org/"), name
        assert f"/{tarball}.tgz#package/" in source, name
    licences = {package for _, package, _ in entries.values()}
    licensed = {entries[n][1] for n in entries if n.endswith(".LICENSE")}
    assert licences == licensed, "every package ships its LICENSE"


@pytest.mark.parametrize("name", sorted(manifest()))
def test_a_served_asset_is_the_pinned_file(client: TestClient, name: str) -> None:
    digest = manifest()[name][0]
    assert hashlib.sha256((STATIC_DIR / name).read_bytes()).hexdigest() == digest
    served = client.get(f"{STATIC_PATH}/{name}")
    assert served.status_code == 200
    assert hashlib.sha256(served.content).hexdigest() == digest


def test_the_assets_are_package_data() -> None:
    with (ROOT / "pyproject.toml").open("rb") as file:
        patterns = tomllib.load(file)["tool"]["setuptools"]["package-data"]["app.api"]
    relative = STATIC_DIR.relative_to(ROOT / "app" / "api")
    for path in STATIC_DIR.iterdir():
        name = str(relative / path.name)
        assert any(fnmatch.fnmatch(name, pattern) for pattern in patterns), name
