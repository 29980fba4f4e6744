"""More than two classes on a real database (SQLite and PostgreSQL): declared classes learn,
score and answer by name; feedback relabels and forgets exactly across them, per user too;
a class added later keeps what is learned; scores match scikit-learn's MultinomialNB; export
and import carry the classes; rename and remove change every model exactly."""

from __future__ import annotations

import io
import math
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from sklearn.naive_bayes import MultinomialNB

from app.errors import InvalidDataFile, InvalidLabel
from app.service import SpamFilter
from app.settings.schema import Settings
from tests.builders import ham_message, spam_message, word_message
from tests.storage.snapshot import assert_consistent, snapshot

MakeService = Callable[..., SpamFilter]
MakeSettings = Callable[..., Settings]

CLASSES = ("ham", "spam", "newsletter", "phishing")
JUNK = ("spam", "phishing")
DECLARED = {"model": {"classes": ",".join(CLASSES), "junk_classes": ",".join(JUNK)}}

NEWS_WORDS = (
    "edition", "weekly", "digest", "subscribe", "issue", "readers", "column", "highlights",
    "featured", "stories", "roundup", "podcast",
)  # fmt: skip
PHISH_WORDS = (
    "password", "verify", "account", "suspended", "login", "security", "confirm", "bank",
    "identity", "expire", "locked", "credentials",
)  # fmt: skip
NEWS_SENDERS = ("The Weekly <news@weekly.example>",)
PHISH_SENDERS = ("Security Team <alert@bank-secure.example>",)


def message_of(label: str, rng: random.Random, serial: int) -> bytes:
    if label == "ham":
        return ham_message(rng, serial)
    if label == "spam":
        return spam_message(rng, serial)
    if label == "newsletter":
        return word_message(rng, NEWS_WORDS, serial, senders=NEWS_SENDERS)
    return word_message(rng, PHISH_WORDS, serial, senders=PHISH_SENDERS)


def corpus(per_class: int, seed: int = 5) -> list[tuple[bytes, str]]:
    rng = random.Random(seed)
    return [
        (message_of(label, rng, 100 * k + serial), label)
        for serial in range(per_class)
        for k, label in enumerate(CLASSES)
    ]


def fresh(label: str, serial: int) -> bytes:
    return message_of(label, random.Random(serial), 90_000 + serial)


@pytest.fixture
def declared(make_settings: MakeSettings) -> Settings:
    return make_settings(**DECLARED)


def test_every_declared_class_learns_and_answers_by_name(
    declared: Settings, make_service: MakeService
) -> None:
    service = make_service(declared)
    for raw, label in corpus(6):
        assert service.learn(raw, label).outcome == "learned"
    for label in CLASSES:
        result = service.classify(fresh(label, 1))
        assert result.class_name == label
        assert set(result.log_posteriors) == set(CLASSES)
        assert math.fsum(math.exp(v) for v in result.log_posteriors.values()) == pytest.approx(1)
        # The log-odds and P(junk) are the side-merged model's (a two-class site's, see
        # test_the_verdict_is_a_two_class_sites_after_learning_the_same_messages), not the
        # junk mass of these posteriors.
        assert result.spam_probability == pytest.approx(1 / (1 + math.exp(-result.log_odds)))
        assert (result.log_odds > 0) == (label in JUNK)
    stats = service.stats()
    assert {c: stats.labels[c].messages for c in CLASSES} == dict.fromkeys(CLASSES, 6)
    assert_consistent(declared.database_url, CLASSES)


def test_an_undeclared_class_is_refused_naming_the_classes(
    declared: Settings, make_service: MakeService
) -> None:
    service = make_service(declared)
    with pytest.raises(InvalidLabel, match="ham, spam, newsletter, phishing"):
        service.learn(fresh("ham", 1), "receipts")
    assert service.learn(fresh("ham", 1), " Newsletter ").label == "newsletter"


def test_relabel_and_forget_across_classes_restore_every_count(
    declared: Settings, make_service: MakeService
) -> None:
    service = make_service(declared)
    for raw, label in corpus(3):
        service.learn(raw, label)
    before = snapshot(declared.database_url, timestamps=False, classes=CLASSES)
    raw = fresh("newsletter", 7)
    assert service.learn(raw, "newsletter").outcome == "learned"
    for target in ("phishing", "ham", "spam", "newsletter"):
        assert service.learn(raw, target).outcome == "relabelled"
        assert service.learn(raw, target).outcome == "unchanged"
        assert_consistent(declared.database_url, CLASSES)
    assert service.forget(raw).outcome == "forgotten"
    assert snapshot(declared.database_url, timestamps=False, classes=CLASSES) == before


def test_per_user_models_share_the_site_classes(
    make_settings: MakeSettings, make_service: MakeService
) -> None:
    settings = make_settings(**DECLARED, users={"train_site": True})
    service = make_service(settings)
    for raw, label in corpus(4):
        service.learn(raw, label, user="alice@example.org")
    mine = service.stats("alice@example.org")
    assert mine.labels["newsletter"].messages == 4
    assert service.stats().labels["phishing"].messages == 4
    result = service.classify(fresh("phishing", 3), user="alice@example.org")
    assert result.class_name == "phishing"
    assert result.verdict != "ham"
    raw = fresh("newsletter", 4)
    service.learn(raw, "newsletter", user="alice@example.org")
    service.learn(raw, "ham", user="alice@example.org")
    assert service.forget(raw, user="alice@example.org").outcome == "forgotten"
    assert_consistent(settings.database_url, CLASSES)


def test_a_class_that_has_learned_nothing_does_not_hold_back_verdicts(
    declared: Settings, make_service: MakeService
) -> None:
    """Verdicts wait for min_messages of junk and of not-junk, not of every class."""
    service = make_service(declared)
    for raw, label in corpus(declared.decision.min_messages):
        if label in ("ham", "spam"):
            service.learn(raw, label)
    result = service.classify(fresh("spam", 2))
    assert set(result.log_posteriors) == {"ham", "spam"}
    assert result.class_name == "spam"
    assert result.reason != "not_enough_training"
    assert result.verdict == "spam"


def test_with_ham_and_spam_declared_again_scores_are_bit_identical(
    make_settings: MakeSettings, make_service: MakeService, database_factory: Any
) -> None:
    """A site that adds classes scores ham-and-spam mail exactly as before until the new
    classes learn; and the default site's answers carry the class."""
    plain = make_service(make_settings())
    wider = make_service(make_settings(database_url=database_factory(), **DECLARED))
    for raw, label in corpus(5):
        if label in ("ham", "spam"):
            plain.learn(raw, label)
            wider.learn(raw, label)
    for serial in range(4):
        for label in ("ham", "spam"):
            a, b = plain.classify(fresh(label, serial)), wider.classify(fresh(label, serial))
            assert (a.log_odds, a.log_posteriors, a.clues) == (
                b.log_odds,
                b.log_posteriors,
                b.clues,
            )
            assert a.class_name == b.class_name == label


def test_a_class_added_later_keeps_what_was_learned(
    make_settings: MakeSettings, make_service: MakeService
) -> None:
    plain_settings = make_settings()
    plain = make_service(plain_settings)
    for raw, label in corpus(4):
        if label in ("ham", "spam"):
            plain.learn(raw, label)
    before = plain.classify(fresh("spam", 1))
    plain.close()
    counts = snapshot(plain_settings.database_url, timestamps=False)
    wider_settings = make_settings(**DECLARED)
    wider = make_service(wider_settings)  # adds the count columns of the new classes
    after = wider.classify(fresh("spam", 1))
    assert (after.log_odds, after.log_posteriors) == (before.log_odds, before.log_posteriors)
    assert snapshot(plain_settings.database_url, timestamps=False) == counts
    for raw, label in corpus(3, seed=9):
        if label == "newsletter":
            wider.learn(raw, label)
    assert wider.classify(fresh("newsletter", 2)).class_name == "newsletter"
    assert_consistent(wider_settings.database_url, CLASSES)


def vectors(service: SpamFilter, messages: list[bytes]) -> list[Counter[str]]:
    return [service.analyse(raw).tokens for raw in messages]


def test_scores_match_sklearn_multinomial_nb_with_four_classes(
    make_settings: MakeSettings, make_service: MakeService
) -> None:
    """With every token scored (no top-N, no length normalisation, no distinct evidence) and
    occurrences counted, the service's log-posteriors are scikit-learn's."""
    alpha = 0.5
    settings = make_settings(
        **{
            "model": {
                **DECLARED["model"],
                "alpha": alpha,
                "counting": "occurrences",
                "top_tokens": 0,
                "normalise_length": False,
                "distinct_min_messages": 0,
            }
        }
    )
    service = make_service(settings)
    training = corpus(5, seed=21)
    for raw, label in training:
        service.learn(raw, label)
    learned = vectors(service, [raw for raw, _ in training])
    vocabulary = sorted({token for bag in learned for token in bag})
    column = {token: j for j, token in enumerate(vocabulary)}
    x = np.zeros((len(learned), len(vocabulary)), dtype=int)
    for i, bag in enumerate(learned):
        for token, n in bag.items():
            x[i, column[token]] = n
    y = np.array([label for _, label in training])
    model = MultinomialNB(alpha=alpha).fit(x, y)
    for serial, label in enumerate(CLASSES * 2):
        raw = fresh(label, 40 + serial)
        row = np.zeros((1, len(vocabulary)), dtype=int)
        for token, n in service.analyse(raw).tokens.items():
            if token in column:
                row[0, column[token]] = n
        expected = dict(zip(model.classes_.tolist(), model.predict_log_proba(row)[0], strict=True))
        result = service.classify(raw)
        for name in CLASSES:
            assert result.log_posteriors[name] == pytest.approx(expected[name], abs=1e-9)
        assert result.class_name == model.predict(row)[0]


def test_export_names_the_classes_and_imports_where_they_are_declared(
    declared: Settings,
    make_settings: MakeSettings,
    make_service: MakeService,
    database_factory: Any,
) -> None:
    service = make_service(declared)
    for raw, label in corpus(3):
        service.learn(raw, label)
    out = io.StringIO()
    service.export(out)
    text = out.getvalue()
    assert text.splitlines()[1] == "labels\tham\tspam\tnewsletter\tphishing"

    reordered = make_settings(
        database_url=database_factory(),
        model={"classes": "newsletter,ham,phishing,spam,receipt", "junk_classes": "spam,phishing"},
    )
    other = make_service(reordered)
    other.import_models(io.StringIO(text).readlines())
    assert {c: other.stats().labels[c].messages for c in CLASSES} == dict.fromkeys(CLASSES, 3)
    probe = fresh("newsletter", 5)
    assert other.classify(probe).log_posteriors == pytest.approx(
        service.classify(probe).log_posteriors, abs=1e-9
    )
    assert_consistent(reordered.database_url, reordered.model.classes)

    plain = make_service(make_settings(database_url=database_factory()))
    with pytest.raises(InvalidDataFile, match=r"newsletter.*model\.classes"):
        plain.import_models(io.StringIO(text).readlines())
    assert plain.stats().labels["ham"].messages == 0


def test_the_default_export_is_unchanged(settings: Settings, service: SpamFilter) -> None:
    rng = random.Random(3)
    service.learn(ham_message(rng, 1), "ham")
    out = io.StringIO()
    service.export(out)
    assert out.getvalue().splitlines()[1] == "labels\tham\tspam"


SIDE_OF = {"ham": "ham", "newsletter": "ham", "spam": "spam", "phishing": "spam"}


@pytest.mark.parametrize("user", [None, "alice@example.org"], ids=["site", "per-user"])
def test_the_verdict_is_a_two_class_sites_after_learning_the_same_messages(
    make_settings: MakeSettings,
    make_service: MakeService,
    database_factory: Any,
    user: str | None,
) -> None:
    """The verdict, log-odds, P(junk) and clues come from the side-merged model: those of a
    site that learned every message as its side, ham or spam (learning everything, so both
    learn the same messages); the class from the four classes' posteriors."""
    users = {"train_site": True}
    two = make_service(make_settings(users=users))
    four = make_service(make_settings(database_url=database_factory(), users=users, **DECLARED))
    for raw, label in corpus(8):
        two.learn(raw, SIDE_OF[label], user=user)
        four.learn(raw, label, user=user)
    for serial in range(3):
        for label in CLASSES:
            a = two.classify(fresh(label, serial), user=user)
            b = four.classify(fresh(label, serial), user=user)
            assert (a.verdict, a.reason, a.log_odds, a.spam_probability, a.clues) == (
                b.verdict,
                b.reason,
                b.log_odds,
                b.spam_probability,
                b.clues,
            )
            assert a.spam_cutoff == b.spam_cutoff
            assert b.class_name == label
            assert set(b.log_posteriors) == set(CLASSES)
