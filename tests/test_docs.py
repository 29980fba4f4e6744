"""The manual stays true to the code: the settings tables of docs/configuration.md are what
``app.settings.Settings`` describes (docs/gen_config.py writes them), and the README stays the
short front door, its detail on the docs pages (mkdocs build --strict, in .ci/run, checks
every link between them)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import BaseModel

from app.settings.schema import Settings

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT / "docs" / "gen_config.py"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_config", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_configuration_page_is_what_the_settings_describe() -> None:
    gen = generator()
    page = gen.PAGE.read_text()
    assert page == gen.rewrite(page), "run: .venv/bin/python docs/gen_config.py"
    assert gen.main(["--check"]) == 0


def test_every_setting_has_a_row_with_its_description() -> None:
    rendered = generator().render()
    rows = [line for line in rendered.splitlines() if line.startswith("| `SPAMFILTER_")]
    leaves = 0
    for field in Settings.model_fields.values():
        group = field.annotation
        nested = isinstance(group, type) and issubclass(group, BaseModel)
        leaves += len(group.model_fields) if nested else 1  # type: ignore[union-attr]
    assert len(rows) == leaves
    assert not [row for row in rows if row.endswith("|  |")], "a setting without a description"
    assert "| `SPAMFILTER_MODEL__ALPHA` | `1.0` | additive smoothing; 1 is Laplace |" in rows
    assert "| `SPAMFILTER_SERVER__WORKERS` | one per core |" in rendered


def test_a_changed_description_makes_the_check_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    gen = generator()
    field = Settings.model_fields["scope"]
    monkeypatch.setattr(field, "description", "a description the page does not show")
    assert gen.main(["--check"]) == 1


def test_the_readme_fits_on_a_screen_and_links_every_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250, "move detail to a page of docs/"
    pages = {page.name for page in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert {page for page in pages if f"(docs/{page})" not in readme} == set()
