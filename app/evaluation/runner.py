"""Evaluation loops over the real service: TREC online feedback and k-fold cross-validation.

* ``online`` (the peers' protocol): for each message in presentation order, classify it,
  then learn its gold label. The message is read and tokenised once (``service.analyse``);
  that time counts as classify time and the same ``Analysed`` object is passed to
  ``classify`` and ``learn``, so learn time is the service's learn call alone (under thick
  training that call scores the message again to decide whether to learn it).
* ``cv``: ``corpus.kfold_splits``; for each fold a fresh, empty model learns the other
  folds, then classifies the held-out fold without learning. Scores are pooled over the
  folds. Learn time there includes reading and tokenising each message.

The score is the log-odds log P(spam|x) - log P(ham|x) in nats (it never saturates, unlike
the probability); a message is judged spam when the service's verdict is ``spam``. With more
classes, spam is the junk classes' summed posterior and ham the others'; each message is
learned as ``CorpusItem.taught`` and its row keeps the most likely class (``predicted``).
A message that cannot be read or parsed scores 0.0 (neutral), is never learned, and is
counted in ``failures``. Times are wall-clock seconds (``time.perf_counter``).

Every learn call is counted under the string value of the outcome the service reports
(``learned``, ``unchanged``, ``skipped`` when thick training leaves a message out, ...), so a
run shows how many messages actually changed the model; ``n_learned`` counts the calls.

Models come from a ``ModelFactory``: a callable giving, per run or fold name, a context
manager that yields a fresh, empty ``Model`` and cleans up afterwards.
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from app.errors import ConfigurationError, InvalidMessage, MessageTooLarge
from app.evaluation.corpus import CorpusItem, kfold_splits
from app.evaluation.metrics import (
    Metrics,
    compute_metrics,
    pct,
    roc_area_above_pct,
    split_by_label,
    verdict_share_pct,
)
from app.settings.schema import Settings

if TYPE_CHECKING:
    from app.service import Classification, FeedbackResult, SpamFilter

ONLINE = "online"
CV = "cv"
PROTOCOLS = (ONLINE, CV)
NEUTRAL_SCORE = 0.0  # log-odds of P(spam) = 0.5, given to messages that fail
SPAM_VERDICT = "spam"
UNSURE_VERDICT = "unsure"

ProgressFn = Callable[[int, int, str], None]
"""Called as ``progress(done, total, phase)`` after every service call."""


def no_progress(_done: int, _total: int, _phase: str) -> None:
    """A progress callback that shows nothing."""
    return None


def _size_unknown() -> int | None:
    return None


UserOf = Callable[[CorpusItem], str | None]
"""Whose mail a corpus item is: the user whose model judges and learns it (None: site-wide)."""


def no_user(_item: CorpusItem) -> str | None:
    """Every message for the site-wide model."""
    return None


@dataclass(frozen=True, slots=True)
class Model:
    """A fresh, empty service to evaluate, and its on-disk size in bytes once done."""

    service: SpamFilter
    db_bytes: Callable[[], int | None] = _size_unknown


ModelFactory = Callable[[str], AbstractContextManager[Model]]


@dataclass(frozen=True, slots=True)
class Row:
    """One classified message: its position in the presentation order and its score."""

    position: int
    item: CorpusItem
    log_odds: float
    spam_probability: float
    verdict: str
    reason: str | None
    classify_s: float
    learn_s: float | None = None
    fold: int | None = None
    error: str | None = None
    predicted: str = ""  # the most likely class ("" when the message failed)


@dataclass(frozen=True, slots=True)
class RunResult:
    """Rows in presentation order, timing totals (seconds) and failure count of one run."""

    protocol: str
    folds: int | None
    rows: list[Row]
    classify_s: float
    learn_s: float
    n_classified: int
    n_learned: int
    failures: int
    db_bytes: int | None
    wall_s: float
    outcomes: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Summary:
    """Accuracy of a run: the peers' metrics plus what the three-way verdicts add."""

    metrics: Metrics
    unsure: int
    unsure_reasons: dict[str, int]
    roca_1_pct_probability_scale: float
    ties_at_probability_1: int
    verdicts: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def unsure_pct(self) -> float:
        """Share of messages whose verdict was unsure, in percent."""
        return pct(self.unsure, self.metrics.n)

    def verdict_pct(self, label: str, verdict: str) -> float:
        """Share of the ``label`` messages that got ``verdict``, in percent (NaN if none)."""
        return verdict_share_pct(self.verdicts.get(label, {}), verdict)


@dataclass(slots=True)
class _Clock:
    classify_s: float = 0.0
    learn_s: float = 0.0
    n_classified: int = 0
    n_learned: int = 0
    failures: int = 0
    rows: list[Row] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)

    def learned(self, feedback: FeedbackResult) -> None:
        """Count one learn call under its outcome's string value."""
        self.n_learned += 1
        self.outcomes[str(feedback.outcome)] += 1


def evaluate(
    protocol: str,
    items: Sequence[CorpusItem],
    models: ModelFactory,
    folds: int = 10,
    progress: ProgressFn = no_progress,
) -> RunResult:
    """Run ``protocol`` ("online" or "cv") over ``items`` in their order."""
    if protocol == ONLINE:
        return run_online(items, models, progress)
    if protocol == CV:
        return run_cv(items, models, folds, progress)
    raise ValueError(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}")


def run_online(
    items: Sequence[CorpusItem],
    models: ModelFactory,
    progress: ProgressFn = no_progress,
    user_of: UserOf = no_user,
) -> RunResult:
    """TREC immediate feedback: classify each message, then learn its gold label, both for
    the user ``user_of`` names (None: the site-wide model)."""
    clock = _Clock()
    started = time.perf_counter()
    with models(ONLINE) as model:
        for position, item in enumerate(items):
            row = _classify_then_learn(model.service, position, item, clock, user_of(item))
            clock.rows.append(row)
            progress(position + 1, len(items), ONLINE)
        db_bytes = model.db_bytes()
    return _result(ONLINE, None, clock, db_bytes, time.perf_counter() - started)


def _classify_then_learn(
    service: SpamFilter, position: int, item: CorpusItem, clock: _Clock, user: str | None
) -> Row:
    """One online step: read, tokenise and classify (classify time), then learn (learn time)."""
    t0 = time.perf_counter()
    clock.n_classified += 1
    try:
        analysed = service.analyse(item.path.read_bytes())
        result = service.classify(analysed, user)
    except (OSError, InvalidMessage, MessageTooLarge) as error:
        elapsed = time.perf_counter() - t0
        clock.classify_s += elapsed
        clock.failures += 1
        return _failed(position, item, elapsed, error)
    t1 = time.perf_counter()
    feedback = service.learn(analysed, item.taught, user)
    t2 = time.perf_counter()
    clock.classify_s += t1 - t0
    clock.learn_s += t2 - t1
    clock.learned(feedback)
    return _row(position, item, result, t1 - t0, learn_s=t2 - t1)


def run_cv(
    items: Sequence[CorpusItem],
    models: ModelFactory,
    folds: int = 10,
    progress: ProgressFn = no_progress,
) -> RunResult:
    """k-fold cross-validation: per fold, a fresh model learns k-1 folds, classifies one."""
    splits = kfold_splits(list(enumerate(items)), folds)
    clock = _Clock()
    total = sum(len(train) + len(test) for train, test in splits)
    done = 0
    sizes: list[int] = []
    started = time.perf_counter()
    for fold, (train, test) in enumerate(splits, start=1):
        phase = f"fold {fold}/{folds}"
        with models(f"fold-{fold}") as model:
            for _position, item in train:
                _learn_file(model.service, item, clock)
                done += 1
                progress(done, total, f"{phase} learn")
            for position, item in test:
                clock.rows.append(_classify_file(model.service, position, item, fold, clock))
                done += 1
                progress(done, total, f"{phase} classify")
            size = model.db_bytes()
            if size is not None:
                sizes.append(size)
    clock.rows.sort(key=lambda row: row.position)
    db_bytes = max(sizes) if sizes else None
    return _result(CV, folds, clock, db_bytes, time.perf_counter() - started)


def _learn_file(service: SpamFilter, item: CorpusItem, clock: _Clock) -> None:
    t0 = time.perf_counter()
    try:
        clock.learned(service.learn(service.analyse(item.path.read_bytes()), item.taught))
    except (OSError, InvalidMessage, MessageTooLarge):
        clock.failures += 1
    clock.learn_s += time.perf_counter() - t0


def _classify_file(
    service: SpamFilter, position: int, item: CorpusItem, fold: int, clock: _Clock
) -> Row:
    t0 = time.perf_counter()
    clock.n_classified += 1
    try:
        result = service.classify(service.analyse(item.path.read_bytes()))
    except (OSError, InvalidMessage, MessageTooLarge) as error:
        elapsed = time.perf_counter() - t0
        clock.classify_s += elapsed
        clock.failures += 1
        return _failed(position, item, elapsed, error, fold)
    elapsed = time.perf_counter() - t0
    clock.classify_s += elapsed
    return _row(position, item, result, elapsed, fold=fold)


def _row(
    position: int,
    item: CorpusItem,
    result: Classification,
    classify_s: float,
    learn_s: float | None = None,
    fold: int | None = None,
) -> Row:
    return Row(
        position=position,
        item=item,
        log_odds=result.log_odds,
        spam_probability=result.spam_probability,
        verdict=result.verdict.value,
        reason=None if result.reason is None else result.reason.value,
        classify_s=classify_s,
        learn_s=learn_s,
        fold=fold,
        predicted=result.class_name,
    )


def _failed(
    position: int, item: CorpusItem, elapsed: float, error: Exception, fold: int | None = None
) -> Row:
    code = getattr(error, "code", None) or type(error).__name__
    return Row(
        position, item, NEUTRAL_SCORE, 0.5, UNSURE_VERDICT, None, elapsed, fold=fold, error=code
    )


def _result(
    protocol: str, folds: int | None, clock: _Clock, db_bytes: int | None, wall_s: float
) -> RunResult:
    return RunResult(
        protocol=protocol,
        folds=folds,
        rows=clock.rows,
        classify_s=clock.classify_s,
        learn_s=clock.learn_s,
        n_classified=clock.n_classified,
        n_learned=clock.n_learned,
        failures=clock.failures,
        db_bytes=db_bytes,
        wall_s=wall_s,
        outcomes=dict(sorted(clock.outcomes.items())),
    )


def after(result: RunResult, skip: int) -> RunResult:
    """``result`` judged only on the messages after the first ``skip`` of the order: every
    message was still classified and learned, so the model had learned the first ``skip``
    ("learn a month, judge the next"). Timing and learning totals stay those of the whole run.
    """
    if skip <= 0:
        return result
    return replace(result, rows=[row for row in result.rows if row.position >= skip])


def summarise(result: RunResult) -> Summary:
    """The metrics of a run: scores are log-odds, judged spam is verdict == "spam".

    The decisions come from the verdicts, not from a cut-off on the scores: a verdict also
    needs enough training (``decision.min_messages``).
    """
    labels = [row.item.label for row in result.rows]
    scores = [row.log_odds for row in result.rows]
    judged = [row.verdict == SPAM_VERDICT for row in result.rows]
    # The cut-off arguments are unused when judged_spam is given.
    metrics = compute_metrics(labels, scores, 0.0, False, judged_spam=judged)
    unsure = [row for row in result.rows if row.verdict == UNSURE_VERDICT]
    reasons = Counter(row.error or row.reason or "unknown" for row in unsure)
    spam_p, ham_p = split_by_label(labels, [row.spam_probability for row in result.rows])
    verdicts: dict[str, Counter[str]] = {}
    for row in result.rows:
        verdicts.setdefault(row.item.label, Counter())[row.verdict] += 1
    return Summary(
        metrics=metrics,
        unsure=len(unsure),
        unsure_reasons=dict(sorted(reasons.items())),
        roca_1_pct_probability_scale=roc_area_above_pct(spam_p, ham_p),
        ties_at_probability_1=sum(1 for row in result.rows if row.spam_probability == 1.0),
        verdicts={label: dict(sorted(c.items())) for label, c in verdicts.items()},
    )


def temporary_sqlite(settings: Settings, workdir: Path) -> ModelFactory:
    """Models in fresh SQLite files under ``workdir``, one folder per run or fold.

    ``db_bytes`` closes the pooled connections first, so SQLite folds its write-ahead log
    into the database file and the size is that of the model alone.
    """
    from app.bootstrap import build_service

    @contextmanager
    def models(name: str) -> Iterator[Model]:
        folder = workdir / name
        folder.mkdir(parents=True)
        url = f"sqlite:///{folder / 'model.db'}"
        service = build_service(settings.model_copy(update={"database_url": url}))

        def db_bytes() -> int:
            service.close()
            return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())

        try:
            yield Model(service, db_bytes)
        finally:
            service.close()
            shutil.rmtree(folder, ignore_errors=True)

    return models


def existing_database(settings: Settings) -> ModelFactory:
    """Models in the configured database, which must hold nothing in the scopes used.

    The online run uses ``settings.scope``; fold N of a cross-validation uses the scope
    ``<scope>/cv-fold-N`` so each fold starts empty without dropping anything. What the run
    learned stays in the database.
    """
    from app.bootstrap import build_service

    @contextmanager
    def models(name: str) -> Iterator[Model]:
        scope = settings.scope if name == ONLINE else f"{settings.scope}/cv-{name}"
        service = build_service(settings.model_copy(update={"scope": scope}))
        try:
            refuse_non_empty(service)
            yield Model(service)
        finally:
            service.close()

    return models


def refuse_non_empty(service: SpamFilter) -> None:
    """Raise ConfigurationError when the service's scope already holds a model."""
    stats = service.stats()
    learned = sum(label.messages for label in stats.labels.values())
    if learned or stats.vocabulary:
        raise ConfigurationError(
            f"the {stats.database} database already holds {learned} learned messages in "
            f"scope {stats.scope!r}; evaluate on an empty database"
        )
