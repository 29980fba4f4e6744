"""1,000 real messages of the SpamAssassin corpus through the filter, every byte checked.

Opt-in (``SPAMFILTER_TEST_CORPUS=1``, with the corpus at ../shared/corpora/spamassassin beside
the repository): it trains on a tenth of the corpus, then filters 1,000 other messages in
process and as 1,000 real processes (through the running HTTP service, the fast path, with a
sample on the direct path), and checks that each output is its input with X-Spam fields added.
"""

from __future__ import annotations

import os
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from app.adapters.pipe.filter import Filtered, filter_message, service_classifier
from app.adapters.pipe.report import ExitCode
from app.domain.rewrite import drop_spam_headers
from app.service import SpamFilter
from tests.adapters.pipe.conftest import RunFilter
from tests.adapters.pipe.daemons import http_service
from tests.adapters.pipe.roundtrip import check_round_trip

CORPUS = Path(__file__).resolve().parents[3].parent / "shared" / "corpora" / "spamassassin"
TRAIN_EVERY = 10  # every 10th message of each folder is learned
FILTERED = 1000
DIRECT_SAMPLE = 40

pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(
        os.environ.get("SPAMFILTER_TEST_CORPUS") != "1" or not CORPUS.is_dir(),
        reason=f"set SPAMFILTER_TEST_CORPUS=1 with the corpus at {CORPUS} to run",
    ),
]


def _files(label: str) -> list[Path]:
    return sorted(path for path in (CORPUS / label).iterdir() if path.is_file())


def training_and_test() -> tuple[list[tuple[Path, str]], list[Path]]:
    """Learned (path, label) pairs, and FILTERED other paths spread over both folders."""
    learned: list[tuple[Path, str]] = []
    rest: list[Path] = []
    for label in ("ham", "spam"):
        for number, path in enumerate(_files(label)):
            if number % TRAIN_EVERY == 0:
                learned.append((path, label))
            else:
                rest.append(path)
    step = len(rest) / FILTERED
    return learned, [rest[int(i * step)] for i in range(FILTERED)]


@pytest.fixture
def corpus_model(service: SpamFilter) -> tuple[SpamFilter, list[Path]]:
    """The service trained on a tenth of the corpus, and the 1,000 messages to filter."""
    learned, filtered = training_and_test()
    for path, label in learned:
        service.learn(path.read_bytes(), label)
    return service, filtered


def check(raw: bytes, filtered: Filtered) -> None:
    """The byte contract; an error must be a message the service cannot read."""
    if filtered.code is ExitCode.ERROR:
        assert filtered.output == drop_spam_headers(raw)
    else:
        check_round_trip(raw, filtered.output)


def test_a_thousand_corpus_messages_in_process(
    corpus_model: tuple[SpamFilter, list[Path]],
) -> None:
    service, paths = corpus_model
    classify = service_classifier(service)
    codes: Counter[ExitCode] = Counter()
    for path in paths:
        raw = path.read_bytes()
        filtered = filter_message(raw, classify)
        check(raw, filtered)
        codes[filtered.code] += 1
    assert sum(codes.values()) == FILTERED
    assert codes[ExitCode.SPAM] > 100 and codes[ExitCode.HAM] > 400
    assert codes[ExitCode.ERROR] <= 5


def test_a_thousand_corpus_messages_as_processes(
    corpus_model: tuple[SpamFilter, list[Path]], run_filter: RunFilter, database_url: str
) -> None:
    service, paths = corpus_model
    classify = service_classifier(service)
    with http_service(database_url) as url, ThreadPoolExecutor(4) as pool:
        env = {"SPAMFILTER_FILTER_URL": url}
        results = pool.map(lambda path: run_filter(path.read_bytes(), env=env), paths)
        for path, result in zip(paths, results, strict=True):
            raw = path.read_bytes()
            expected = filter_message(raw, classify)
            assert (result.returncode, result.stdout) == (expected.code, expected.output), path
            assert b"service unavailable" not in result.stderr
            check(raw, expected)
    for path in paths[:: FILTERED // DIRECT_SAMPLE]:
        raw = path.read_bytes()
        result = run_filter(raw)
        expected = filter_message(raw, classify)
        assert (result.returncode, result.stdout) == (expected.code, expected.output), path
