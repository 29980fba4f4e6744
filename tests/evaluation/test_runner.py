"""The evaluation loops: online and cross-validation over the real service, call order and
timing on a recording service, failures, metrics of three-way verdicts, model factories."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Any, cast

import pytest

from app.domain.verdict import Verdict
from app.errors import ConfigurationError, InvalidMessage
from app.evaluation.corpus import CorpusItem, load_corpus
from app.evaluation.report import metrics_block, three_way_line
from app.evaluation.runner import (
    Model,
    ModelFactory,
    Row,
    RunResult,
    evaluate,
    existing_database,
    run_cv,
    run_online,
    summarise,
    temporary_sqlite,
)
from app.service import Analysed, FeedbackResult, Outcome, SpamFilter
from app.settings.schema import Settings
from tests.cli.mailfiles import write_corpus

Progress = list[tuple[int, int, str]]


@pytest.fixture
def items(tmp_path: Path) -> list[CorpusItem]:
    return load_corpus(write_corpus(tmp_path / "corpus", n_ham=30, n_spam=30), seed=1)


@pytest.fixture
def models(tmp_path: Path) -> ModelFactory:
    return temporary_sqlite(Settings(_env_file=None, database_url="sqlite://"), tmp_path / "work")


def _recorder() -> tuple[Progress, Any]:
    seen: Progress = []

    def progress(done: int, total: int, phase: str) -> None:
        seen.append((done, total, phase))

    return seen, progress


def test_online_over_the_real_service(items: list[CorpusItem], models: ModelFactory) -> None:
    seen, progress = _recorder()
    result = run_online(items, models, progress)
    assert [row.position for row in result.rows] == list(range(60))
    assert [row.item for row in result.rows] == items
    assert (result.n_classified, result.n_learned, result.failures) == (60, 60, 0)
    assert sum(result.outcomes.values()) == 60 and result.outcomes["learned"] > 0
    assert result.classify_s > 0 and result.learn_s > 0 and result.db_bytes
    assert all(row.learn_s is not None and row.fold is None for row in result.rows)
    assert result.rows[0].log_odds == 0.0  # nothing learned yet
    assert result.rows[0].reason == "not_enough_training"
    assert seen[-1] == (60, 60, "online") and len(seen) == 60
    summary = summarise(result)
    assert summary.metrics.n == 60 and summary.metrics.roca_1_pct < 20
    assert summary.unsure_reasons["not_enough_training"] >= 19  # 10 of each label first


def test_cross_validation_over_the_real_service(
    items: list[CorpusItem], models: ModelFactory
) -> None:
    seen, progress = _recorder()
    result = run_cv(items, models, folds=3, progress=progress)
    assert [row.position for row in result.rows] == list(range(60))
    assert [row.fold for row in result.rows] == [1 + i % 3 for i in range(60)]
    assert (result.n_classified, result.n_learned) == (60, 120)
    assert all(row.learn_s is None for row in result.rows)
    assert seen[-1] == (180, 180, "fold 3/3 classify")
    assert summarise(result).metrics.roca_1_pct < 20
    assert evaluate("cv", items, models, folds=3).n_learned == 120


def test_every_fold_starts_from_an_empty_model(
    items: list[CorpusItem], models: ModelFactory
) -> None:
    names: list[str] = []

    @contextmanager
    def checked(name: str) -> Iterator[Model]:
        names.append(name)
        with models(name) as model:
            stats = model.service.stats()
            assert all(label.messages == 0 for label in stats.labels.values())
            yield model

    run_cv(items[:12], checked, folds=4)
    assert names == ["fold-1", "fold-2", "fold-3", "fold-4"]


class _Recording:
    """A stand-in service that records the calls the online loop makes."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def analyse(self, raw: bytes) -> Analysed:
        if raw.startswith(b"bad"):
            raise InvalidMessage("not a message")
        analysed = Analysed(raw.decode(), cast(Any, {}), False)
        self.calls.append(("analyse", analysed))
        return analysed

    def classify(self, message: Analysed, user: str | None = None) -> _Classified:
        self.calls.append(("classify", message))
        spam = "spam" in message.digest
        return _Classified(Verdict.SPAM if spam else Verdict.HAM, 3.0 if spam else -3.0)

    def learn(self, message: Analysed, label: str, user: str | None = None) -> FeedbackResult:
        self.calls.append(("learn", (message, label)))
        # Any outcome counts by its string value, including ones the runner does not know.
        outcome = _Outcome.SKIPPED if "spam" in message.digest else _Outcome.LEARNED
        return FeedbackResult(message.digest, label, cast(Outcome, outcome))


class _Outcome(StrEnum):
    LEARNED = "learned"
    SKIPPED = "skipped"


class _Classified:
    def __init__(self, verdict: Verdict, log_odds: float) -> None:
        self.verdict, self.log_odds, self.reason = verdict, log_odds, None
        self.spam_probability = 1 / (1 + math.exp(-log_odds))
        self.class_name = "spam" if log_odds > 0 else "ham"  # the most likely class


def test_online_tokenises_once_and_classifies_before_learning(tmp_path: Path) -> None:
    files = []
    for name, body in (("a", b"ham one"), ("b", b"bad bytes"), ("c", b"spam two")):
        (tmp_path / name).write_bytes(body)
        files.append(CorpusItem("spam" if name == "c" else "ham", tmp_path / name))
    service = _Recording()

    @contextmanager
    def fake(_name: str) -> Iterator[Model]:
        yield Model(cast(SpamFilter, service))

    result = run_online(files, fake)
    kinds = [kind for kind, _ in service.calls]
    assert kinds == ["analyse", "classify", "learn", "analyse", "classify", "learn"]
    first = service.calls[0][1]
    assert service.calls[1][1] is first and service.calls[2][1] == (first, "ham")
    assert result.failures == 1 and (result.n_classified, result.n_learned) == (3, 2)
    assert result.outcomes == {"learned": 1, "skipped": 1}
    broken = result.rows[1]
    assert (broken.log_odds, broken.verdict, broken.error) == (0.0, "unsure", "invalid_message")
    assert result.db_bytes is None


def _row(position: int, label: str, log_odds: float, verdict: str, reason: str | None) -> Row:
    item = CorpusItem(label, Path(f"/c/{label}/{position}"))
    probability = 1 / (1 + math.exp(-log_odds))
    return Row(position, item, log_odds, probability, verdict, reason, 0.001)


def test_summary_judges_spam_by_verdict_and_counts_unsure() -> None:
    rows = [
        _row(0, "spam", 0.0, "unsure", "not_enough_training"),
        _row(1, "ham", -40.0, "ham", None),
        _row(2, "spam", 5.0, "unsure", "between_thresholds"),  # above 0 but not a spam verdict
        _row(3, "spam", 50.0, "spam", None),
        _row(4, "ham", 2.0, "unsure", "between_thresholds"),
    ]
    result = RunResult("online", None, rows, 0.005, 0.005, 5, 5, 0, None, 0.01)
    summary = summarise(result)
    metrics = summary.metrics
    assert (metrics.n, metrics.n_spam, metrics.n_ham) == (5, 3, 2)
    assert metrics.hm_pct == 0.0 and metrics.sm_pct == pytest.approx(200 / 3)
    assert metrics.roca_1_pct == pytest.approx(100 * 1 / 6)  # only ham 2.0 > spam 0.0
    assert summary.unsure == 3 and summary.unsure_pct == 60.0
    assert summary.unsure_reasons == {"between_thresholds": 2, "not_enough_training": 1}


def test_summary_keeps_the_three_verdicts_of_each_label_apart() -> None:
    rows = [
        _row(0, "spam", -3.0, "ham", None),
        _row(1, "spam", 5.0, "unsure", "between_thresholds"),
        _row(2, "spam", 50.0, "spam", None),
        _row(3, "spam", 60.0, "spam", None),
        _row(4, "ham", -40.0, "ham", None),
        _row(5, "ham", 2.0, "unsure", "between_thresholds"),
    ]
    result = RunResult("online", None, rows, 0.005, 0.005, 6, 6, 0, None, 0.01)
    summary = summarise(result)

    assert summary.verdicts == {
        "spam": {"ham": 1, "spam": 2, "unsure": 1},
        "ham": {"ham": 1, "unsure": 1},
    }
    assert summary.metrics.sm_pct == 50.0  # unsure spam counts as missed
    assert summary.verdict_pct("spam", "ham") == 25.0  # spam judged ham
    assert summary.verdict_pct("spam", "unsure") == 25.0
    assert summary.verdict_pct("ham", "unsure") == 50.0
    assert summary.verdict_pct("ham", "spam") == 0.0
    block = metrics_block(summary)
    assert block["spam_judged_ham_pct"] == 25.0 and block["ham_unsure_pct"] == 50.0
    assert three_way_line(block) == [
        "three-way  ham messages: ham 50.00%, unsure 50.00%, spam 0.00%; "
        "spam messages: ham 25.00%, unsure 25.00%, spam 50.00%"
    ]


def test_an_unknown_protocol_is_refused(items: list[CorpusItem], models: ModelFactory) -> None:
    with pytest.raises(ValueError, match="unknown protocol"):
        evaluate("split", items, models)


def test_an_existing_database_must_be_empty(
    items: list[CorpusItem], make_settings: Any, make_service: Any
) -> None:
    settings: Settings = make_settings()
    result = run_online(items[:8], existing_database(settings))
    assert result.n_learned == 8
    with pytest.raises(ConfigurationError, match="already holds 8 learned messages"):
        run_online(items[:8], existing_database(settings))
    result = run_cv(items[:8], existing_database(settings), folds=2)  # fold scopes are fresh
    assert result.n_learned == 8
    stats = make_service(settings).stats()  # the default scope holds the online run only
    assert sum(label.messages for label in stats.labels.values()) == 8
