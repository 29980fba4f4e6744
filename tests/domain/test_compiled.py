"""The compiled build gives the pure build's tokens, ids and scores, bit for bit.

Each side runs in a process of its own (``benchmarks.compiled_run results``): one with every
candidate module loaded from its ``.py`` source, one as built. Floats travel as
``float.hex``, so equal means equal to the last bit. The comparison is skipped in a pure
build, where both sides would run the same code.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app import compiled
from app.compiled import CANDIDATES, COMPILED, compiled_modules, is_compiled
from tests.builders import ham_message, make_message, spam_message

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpora" / "spamassassin"
needs_compiled = pytest.mark.skipif(
    not compiled_modules(), reason="a pure build: nothing compiled to compare"
)


def _side(corpus: Path, limit: int, pure: bool, service: bool = False) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.compiled_run", "results"]
    command += ["--corpus", str(corpus), "--limit", str(limit)]
    if pure:
        command += ["--source", ",".join(CANDIDATES)]
    if service:
        command.append("--service")
    done = subprocess.run(command, capture_output=True, cwd=ROOT, timeout=600, check=False)
    assert done.returncode == 0, done.stderr.decode()
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _assert_same(corpus: Path, limit: int, service: bool = False) -> None:
    pure = _side(corpus, limit, pure=True, service=service)
    built = _side(corpus, limit, pure=False, service=service)
    assert pure.pop("compiled") == []
    assert built.pop("compiled") == compiled_modules()
    assert pure["messages"] > 10 and pure["scores"] and pure["blended"]
    for key in pure:
        assert pure[key] == built[key], key


def _builder_messages(folder: Path) -> None:
    """ham/ and spam/ folders of the builders' messages: generated words, HTML, encoded and
    raw 8-bit headers, relays, CJK text, attachments' names."""
    rng = random.Random(7)
    extra = [
        make_message("Grüße aus Köln", "Schöne Grüße, bis morgen\n"),
        make_message("会議の件", "明日の会議は十時からです。よろしくお願いします。\n"),
        make_message(
            "Cheap meds",
            "Visit now\n",
            html='<p>Visit <a href="http://pills.example/buy?x=1">here</a> now</p>',
            headers=[
                ("Received", "from mx1.relay.example (mx1.relay.example [192.0.2.7]) by x"),
                ("Received", "from [2001:db8::1] by mx.example.org"),
            ],
        ),
        b"From: =?utf-8?q?Caf=C3=A9?= <cafe@example.org>\r\nSubject: caf\xc3\xa9 au lait\r\n"
        b"Content-Type: text/plain; charset=latin-1\r\n\r\nUn caf\xe9 cr\xe8me, merci\r\n",
    ]
    for label in ("ham", "spam"):
        (folder / label).mkdir()
    for serial in range(40):
        (folder / "ham" / f"{serial:03d}").write_bytes(ham_message(rng, serial))
        (folder / "spam" / f"{serial:03d}").write_bytes(spam_message(rng, serial))
    for serial, raw in enumerate(extra):
        label = "spam" if serial % 2 else "ham"
        (folder / label / f"x{serial:03d}").write_bytes(raw)


@needs_compiled
def test_the_builders_messages_score_the_same_compiled_and_pure(tmp_path: Path) -> None:
    _builder_messages(tmp_path)
    _assert_same(tmp_path, 200, service=True)


@needs_compiled
@pytest.mark.skipif(not CORPUS.is_dir(), reason="no ../shared/corpora/spamassassin")
def test_a_corpus_sample_scores_the_same_compiled_and_pure() -> None:
    _assert_same(CORPUS, 300)


def test_a_module_counts_as_compiled_when_it_loads_from_an_extension_module() -> None:
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    for name in CANDIDATES:
        module = importlib.import_module(name)
        assert is_compiled(name) == str(module.__file__).endswith(suffixes), name
    assert not is_compiled("app.compiled")  # never compiled itself
    assert not is_compiled("app.domain.no_such_module")


NB, FALLBACK = "app.domain.naive_bayes", "app.domain.fallback"


@pytest.mark.parametrize(
    ("kept", "loaded", "kind"),
    [
        ((), set(), "pure Python"),
        ((NB, FALLBACK), set(), "pure Python"),
        ((NB, FALLBACK), {NB, FALLBACK}, "compiled: mypyc"),
        ((NB, FALLBACK), {NB}, f"compiled: mypyc, 1 of the {len(CANDIDATES)} candidates"),
        (
            (),
            set(CANDIDATES),
            f"compiled: mypyc, {len(CANDIDATES)} of the {len(CANDIDATES)} candidates",
        ),
    ],
)
def test_the_build_kind_says_which_modules_load_compiled(
    kept: tuple[str, ...], loaded: set[str], kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kept`` stands for ``COMPILED`` (the release build's modules), ``loaded`` for the
    candidates that load compiled."""
    monkeypatch.setattr(compiled, "COMPILED", kept)
    monkeypatch.setattr(compiled, "is_compiled", lambda name: name in loaded)
    assert compiled.build_kind() == kind


def test_the_release_build_keeps_only_candidates_compiled() -> None:
    assert set(COMPILED) <= set(CANDIDATES)
