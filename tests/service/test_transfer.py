"""export / import on real databases: round trips, one user, merge and replace, all or nothing."""

from __future__ import annotations

import base64
import io
import os
import random
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.errors import InvalidDataFile, TransferRefused
from app.service import SpamFilter
from app.settings.schema import Settings
from app.storage.codec import decode_wide, encode_wide
from app.storage.tables import model_scope, token_count
from app.storage.transfer import ModelRows
from tests.builders import ham_message, make_message, spam_message
from tests.conftest import POSTGRES_URL_ENV, DatabaseFactory, PostgresAdmin
from tests.environment import drop_settings
from tests.storage.snapshot import assert_consistent, reader, snapshot

MakeService = Callable[..., SpamFilter]
MakeSettings = Callable[..., Settings]
PROBES = [
    make_message("Claim your prize", "urgent cash bonus for the winner, claim today\n"),
    make_message("Agenda", "meeting notes and the quarterly budget review tomorrow\n"),
    make_message("Mixed", "the project prize and the casino lunch schedule\n"),
    make_message("Unseen", "nothing anyone has learned before xyzzy plugh\n"),
]


def generated(seed: int, size: int) -> Iterator[tuple[bytes, str]]:
    """``size`` generated messages (about half spam) and their labels."""
    rng = random.Random(seed)
    for serial in range(seed * 1000, seed * 1000 + size):
        spam = rng.random() < 0.5
        raw = spam_message(rng, serial) if spam else ham_message(rng, serial)
        yield raw, "spam" if spam else "ham"


def train(service: SpamFilter, seed: int, size: int, user: str | None = None) -> None:
    """``size`` generated messages (about half spam) learned for ``user``."""
    for raw, label in generated(seed, size):
        service.learn(raw, label, user=user)


def exported(service: SpamFilter, user: str | None = None, site_only: bool = False) -> str:
    out = io.StringIO()
    service.export(out, user=user, site_only=site_only)
    return out.getvalue()


def scores(service: SpamFilter, user: str | None = None) -> list[dict[str, float]]:
    return [service.classify(raw, user=user).log_posteriors for raw in PROBES]


def generation(url: str, scope: str) -> int:
    engine = reader(url)
    try:
        with engine.connect() as conn:
            query = sa.select(model_scope.c.generation).where(model_scope.c.name == scope)
            return int(conn.execute(query).scalar_one())
    finally:
        engine.dispose()


@pytest.fixture
def source(service: SpamFilter) -> SpamFilter:
    """A service whose site-wide model and two users' models have learned something."""
    train(service, seed=1, size=40)
    train(service, seed=2, size=12, user="alice@example.org")
    train(service, seed=3, size=8, user="bob")
    return service


@pytest.fixture
def fresh(
    database_factory: DatabaseFactory, make_settings: MakeSettings, make_service: MakeService
) -> Callable[[], tuple[SpamFilter, str]]:
    """Another empty database of the same backend, and its URL."""

    def make() -> tuple[SpamFilter, str]:
        url = database_factory()
        return make_service(make_settings(database_url=url)), url

    return make


def test_a_round_trip_gives_the_same_file_the_same_rows_and_the_same_scores(
    source: SpamFilter, database_url: str, fresh: Callable[[], tuple[SpamFilter, str]]
) -> None:
    text = exported(source)
    target, url = fresh()
    result = target.import_models(io.StringIO(text))
    assert exported(target) == text
    assert result.vocabulary == {
        name: stats.vocabulary
        for name, stats in (
            ("site", source.stats()),
            ("user:alice@example.org", source.stats("alice@example.org")),
            ("user:bob", source.stats("bob")),
        )
    }
    assert snapshot(url, timestamps=False) == snapshot(database_url, timestamps=False)
    assert_consistent(url)
    for user in (None, "alice@example.org", "bob"):
        assert scores(target, user) == scores(source, user)


def ham_scores(text: str) -> Counter[int]:
    """Bin -> count of a file's hamscore records (one model)."""
    found: Counter[int] = Counter()
    for line in text.splitlines():
        if line.startswith("hamscore\t"):
            _, index, count = line.split("\t")
            found[int(index)] += int(count)
    return found


def test_the_file_is_ordered_and_ends_with_its_counts(source: SpamFilter) -> None:
    lines = exported(source).splitlines()
    assert lines[:2] == ["spamfilter-export\t3", "labels\tham\tspam"]
    scopes = [line.split("\t")[1] for line in lines if line.startswith("scope\t")]
    assert scopes == ["site", "user:alice@example.org", "user:bob"]
    kinds = [line.split("\t")[0] for line in lines]
    assert lines[-1] == "\t".join(
        [
            "end",
            *(str(kinds.count(k)) for k in ("scope", "total", "token", "learned", "hamscore")),
        ]
    )


def test_one_users_model_moves_alone_and_can_become_another_users(
    source: SpamFilter, fresh: Callable[[], tuple[SpamFilter, str]]
) -> None:
    text = exported(source, user="Alice@Example.org")
    assert [line for line in text.splitlines() if line.startswith("scope")] == [
        "scope\tuser:alice@example.org"
    ]
    assert exported(source, site_only=True).count("scope\t") == 1

    target, _ = fresh()
    target.import_models(io.StringIO(text), user="carol")
    assert target.stats("carol").labels == source.stats("alice@example.org").labels
    assert target.stats().vocabulary == 0
    with pytest.raises(InvalidDataFile, match="more than one model"):
        target.import_models(io.StringIO(exported(source)), mode="replace", user="dave")
    assert target.stats("dave").vocabulary == 0


def test_merge_adds_counts_and_replace_swaps_the_model(
    service: SpamFilter, fresh: Callable[[], tuple[SpamFilter, str]]
) -> None:
    train(service, seed=4, size=20)
    first = exported(service)
    both, both_url = fresh()
    train(both, seed=4, size=20)
    train(both, seed=5, size=20)
    second_only, _ = fresh()
    train(second_only, seed=5, size=20)
    second = exported(second_only)

    target, url = fresh()
    target.import_models(io.StringIO(first))
    before = generation(url, "global")
    result = target.import_models(io.StringIO(second), mode="merge")
    assert generation(url, "global") > before
    assert result.vocabulary == {"site": both.stats().vocabulary}
    # Counts as if both had been learned in one model; ham scores as each model scored them.
    assert snapshot(url, timestamps=False, scores=False) == snapshot(
        both_url, timestamps=False, scores=False
    )
    assert_consistent(url)
    summed = ham_scores(first) + ham_scores(second)
    assert summed and ham_scores(exported(target)) == summed

    target.import_models(io.StringIO(second), mode="replace")
    assert exported(target) == second


def test_refusals_and_bad_files_leave_the_database_unchanged(
    source: SpamFilter, database_url: str
) -> None:
    text = exported(source)
    before = snapshot(database_url)
    with pytest.raises(TransferRefused, match="--merge"):
        source.import_models(io.StringIO(text))
    with pytest.raises(TransferRefused, match="count them twice"):
        source.import_models(io.StringIO(text), mode="merge")
    lines = text.splitlines(keepends=True)
    broken = [*lines[:-3], "token\t1\t0\t-1\t0\t0\t20000\n", *lines[-2:]]
    with pytest.raises(InvalidDataFile, match=f"line {len(lines) - 2}:"):
        source.import_models(io.StringIO("".join(broken)), mode="replace")
    with pytest.raises(InvalidDataFile, match="truncated"):
        source.import_models(io.StringIO("".join(lines[:-1])), mode="replace")
    assert snapshot(database_url) == before


def test_counts_that_disagree_with_their_totals_are_refused_and_change_nothing(
    source: SpamFilter, database_url: str, fresh: Callable[[], tuple[SpamFilter, str]]
) -> None:
    """Issue 30, row 10: a token in 10**6 messages of a label that has a few dozen (a
    Bernoulli model would give it a probability above 1), or in spam messages of a model
    whose spam total is 0. Refused with the line, in every mode; neither database changes."""
    text = exported(source, site_only=True)
    lines = text.splitlines(keepends=True)
    at = next(n for n, line in enumerate(lines) if line.startswith("token"))
    fields = lines[at].split("\t")
    fields[1:3] = ["1000000", "1000000"]  # ham messages, occurrences
    inflated = "".join([*lines[:at], "\t".join(fields), *lines[at + 1 :]])
    spam_total = next(line for line in lines if line.startswith("total\tspam"))
    *_, rest = spam_total.split("\t", 3)
    # No spam messages, yet spam tokens and learned records follow.
    emptied = text.replace(spam_total, "\t".join(["total", "spam", "0", rest]))
    target, target_url = fresh()
    before = snapshot(database_url), snapshot(target_url)
    ham = source.stats().labels["ham"].messages
    with pytest.raises(
        InvalidDataFile, match=rf"line {at + 1}: token -?\d+ is in 1,000,000 ham messages, "
        rf"more than the {ham:,} of the ham total \(line \d+\)"
    ):  # fmt: skip
        target.import_models(io.StringIO(inflated))
    with pytest.raises(InvalidDataFile, match=r"line \d+: token -?\d+ is in \d+ spam messages"):
        source.import_models(io.StringIO(emptied), mode="replace")
    assert (snapshot(database_url), snapshot(target_url)) == before
    target.import_models(io.StringIO(text))  # the file as exported is taken
    assert exported(target) == text


def age_half_the_tokens(url: str) -> None:
    """Make every other token row of every model (by id) last seen in 1970."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.update(token_count).where(token_count.c.token_id % 2 == 0).values(seen_day=0)
            )
    finally:
        engine.dispose()


def unheld(text: str) -> list[tuple[int, int]]:
    """The token ids that a file's learned records name and their model's token records do
    not hold, each with the line (from 1) of the record naming it."""
    tokens: set[int] = set()
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        kind, *fields = line.split("\t")
        if kind == "scope":
            tokens.clear()
        elif kind == "token":
            tokens.add(int(fields[0]))
        elif kind == "learned":
            bag = decode_wide(base64.b64decode(fields[3]))
            found += [(number, i) for i in bag if i not in tokens]
    return found


ByUser = dict[str | None, list[tuple[bytes, str]]]  # messages and labels


def learn_and_expire(service: SpamFilter, url: str) -> ByUser:
    """Messages learned site-wide and for alice, then more than half of each model's tokens
    expired (by age, then by the cap); the messages by user."""
    learned = {None: list(generated(6, 30)), "alice": list(generated(7, 12))}
    for user, messages in learned.items():
        for raw, label in messages:
            service.learn(raw, label, user=user)
    vocabulary = {user: service.stats(user).vocabulary for user in learned}
    age_half_the_tokens(url)
    reports = service.expire(every=True, max_tokens=30, max_age_days=365)
    assert all(r.by_age and r.by_size for r in reports), reports
    for user in learned:
        assert 0 < service.stats(user).vocabulary < vocabulary[user] / 2
    return learned


def assert_forgets_to_zero(service: SpamFilter, url: str, learned: ByUser) -> None:
    """Forgetting every message learned takes every count and total back to zero."""
    for user in learned:
        for raw, _ in learned[user]:
            assert service.forget(raw, user=user).outcome.value == "forgotten"
    for user in learned:  # alice's messages trained the site-wide model too
        stats = service.stats(user)
        assert stats.vocabulary == 0
        assert all(s.messages == s.tokens == 0 for s in stats.labels.values())
    after = snapshot(url)
    assert after["token_count"] == after["learned_message"] == after["ham_score"] == []
    assert {row[-3:] for row in after["label_total"]} == {(0, 0, 0)}


def test_an_export_after_expiry_imports_and_forgets_to_zero(
    service: SpamFilter,
    database_url: str,
    fresh: Callable[[], tuple[SpamFilter, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 30, row 10: expiry (by age, then by the cap) deletes token rows and keeps the
    learned records whose bags name them; the export leaves those ids out of the bags, so the
    file imports although records must name only tokens it holds, and forgetting every
    message there takes every count back to zero. Small batches: the held ids are looked up
    while the learned records are still being read (a server-side cursor on PostgreSQL)."""
    monkeypatch.setattr("app.storage.transfer.BATCH", 4)
    monkeypatch.setattr("app.service.transfer._LEARNED_BATCH", 3)
    learned = learn_and_expire(service, database_url)
    text = exported(service)
    assert unheld(text) == []

    target, url = fresh()
    target.import_models(io.StringIO(text))
    assert exported(target) == text
    assert_consistent(url)
    for user in learned:
        assert scores(target, user) == scores(service, user)
    assert_forgets_to_zero(target, url, learned)


def test_an_older_export_naming_expired_tokens_imports_and_forgets_to_zero(
    service: SpamFilter,
    database_url: str,
    fresh: Callable[[], tuple[SpamFilter, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Releases before format version 3 wrote each learned bag as stored, so a site's old
    backup after expiry names tokens the file does not hold. As version 2 it imports, those
    ids left out (the file the export writes now), and forgetting every message takes every
    count back to zero; the same records as version 3 break its promise: refused with the
    line, nothing changed."""
    learned = learn_and_expire(service, database_url)
    text = exported(service)
    with monkeypatch.context() as patch:  # the export of a release before version 3
        patch.setattr(ModelRows, "held", lambda _rows, _scope, ids: set(ids))
        as_stored = exported(service)
    assert as_stored.startswith("spamfilter-export\t3\n")
    old = as_stored.replace("\t3\n", "\t2\n", 1)
    lacking = unheld(old)
    assert lacking

    target, url = fresh()
    target.import_models(io.StringIO(old))
    assert exported(target) == text
    assert_consistent(url)
    for user in learned:
        assert scores(target, user) == scores(service, user)
    assert_forgets_to_zero(target, url, learned)

    other, other_url = fresh()
    before = snapshot(other_url)
    number, token_id = lacking[0]
    message = f"line {number}: the learned record names token {token_id}, which"
    with pytest.raises(InvalidDataFile, match=message):
        other.import_models(io.StringIO(as_stored))
    assert snapshot(other_url) == before


def test_a_learned_record_naming_a_token_the_file_lacks_is_refused(
    source: SpamFilter, database_url: str, fresh: Callable[[], tuple[SpamFilter, str]]
) -> None:
    """Issue 30, row 10: forgetting such a record would take counts that other messages
    add to that token later. Refused with its line, in every mode; nothing changes."""
    text = exported(source, site_only=True)
    lines = text.splitlines(keepends=True)
    at = next(n for n, line in enumerate(lines) if line.startswith("learned"))
    fields = lines[at].split("\t")
    bag = decode_wide(base64.b64decode(fields[4]))
    tokens = [int(line.split("\t")[1]) for line in lines if line.startswith("token")]
    lacking = next(i for i in range(1, 100) if i not in tokens)
    fields[4] = base64.b64encode(encode_wide({**bag, lacking: 1})).decode("ascii")
    crafted = "".join([*lines[:at], "\t".join(fields), *lines[at + 1 :]])
    target, target_url = fresh()
    before = snapshot(database_url), snapshot(target_url)
    message = rf"line {at + 1}: the learned record names token {lacking}, which the model's"
    with pytest.raises(InvalidDataFile, match=message):
        target.import_models(io.StringIO(crafted))
    with pytest.raises(InvalidDataFile, match=message):
        source.import_models(io.StringIO(crafted), mode="replace")
    assert (snapshot(database_url), snapshot(target_url)) == before


TOP = 2**53 - 1  # the largest count a file may hold and a merge may make


HEADER = "spamfilter-export\t3\nlabels\tham\tspam\nscope\tsite\n"


def counts_only(text: str, top: int) -> tuple[str, int]:
    """A file of one site-wide model whose ham total is ``top`` messages, occurrences and
    token messages, and whose one token, the first of ``text``, is in ``top`` ham messages
    with as many occurrences; and the largest ham total of ``text``."""
    lines = text.splitlines()
    token = next(line for line in lines if line.startswith("token")).split("\t")
    total = next(line for line in lines if line.startswith("total\tham")).split("\t")
    token[1:5] = [str(top), str(top), "0", "0"]
    body = f"total\tham\t{top}\t{top}\t{top}\n" + "\t".join(token) + "\n"
    return f"{HEADER}{body}end\t1\t1\t1\t0\t0\n", max(map(int, total[2:]))


def test_a_merge_past_the_largest_count_is_refused_and_changes_nothing(
    service: SpamFilter, database_url: str, fresh: Callable[[], tuple[SpamFilter, str]]
) -> None:
    train(service, seed=8, size=10)
    text = exported(service, site_only=True)
    before = snapshot(database_url)
    _, held = counts_only(text, 0)
    too_many, _ = counts_only(text, TOP - held + 1)
    with pytest.raises(TransferRefused, match=r"larger than 9,007,199,254,740,991 \(total ham"):
        service.import_models(io.StringIO(too_many), mode="merge")
    assert snapshot(database_url) == before
    total = f"{HEADER}total\tspam\t{TOP}\t0\t0\nend\t1\t1\t0\t0\t0\n"
    with pytest.raises(TransferRefused, match=r"larger than 9,007,199,254,740,991 \(total spam"):
        service.import_models(io.StringIO(total), mode="merge")
    assert snapshot(database_url) == before
    (held_bin,) = list(ham_scores(text))[:1]
    scores = f"{HEADER}hamscore\t{held_bin}\t{TOP}\nend\t1\t0\t0\t0\t1\n"
    with pytest.raises(TransferRefused, match=rf"\(hamscore {held_bin}\)"):
        service.import_models(io.StringIO(scores), mode="merge")
    assert snapshot(database_url) == before

    # Up to the largest count itself is fine, and what is stored reads back exactly.
    just_enough, _ = counts_only(text, TOP - held)
    service.import_models(io.StringIO(just_enough), mode="merge")
    assert f"\t{TOP}\t" in exported(service)  # the ham occurrences, the largest total
    target, _ = fresh()
    target.import_models(io.StringIO(total))
    assert target.stats().labels["spam"].messages == TOP
    assert exported(target) == total
    assert snapshot(database_url) != before


def test_a_forced_merge_reports_the_messages_held_already(source: SpamFilter) -> None:
    text = exported(source, site_only=True)
    messages = source.stats().labels
    result = source.import_models(io.StringIO(text), mode="merge", force=True)
    assert result.already_held == sum(summary.messages for summary in messages.values())
    assert source.stats().labels["spam"].messages == 2 * messages["spam"].messages


def test_learned_times_survive_to_the_microsecond(
    service: SpamFilter, fresh: Callable[[], tuple[SpamFilter, str]]
) -> None:
    raw = make_message("Lunch?", "Are we still on for noon\n")
    service.learn(raw, "ham")
    text = exported(service)
    stamp = next(line for line in text.splitlines() if line.startswith("learned")).split("\t")[3]
    assert stamp.endswith("Z") and len(stamp) == len("2026-03-03T10:15:00.123456Z")
    target, _ = fresh()
    target.import_models(io.StringIO(text))
    assert exported(target) == text


@pytest.fixture
def postgres_url(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh PostgreSQL schema, whatever backend the other databases of the test use."""
    if not os.environ.get(POSTGRES_URL_ENV):
        pytest.skip(f"set {POSTGRES_URL_ENV} to run the PostgreSQL tests")
    admin: PostgresAdmin = request.getfixturevalue("postgres_admin")
    url = admin.create()
    yield url
    admin.drop(url)


@pytest.mark.postgres
def test_sqlite_to_postgresql_and_back_gives_identical_files_and_scores(
    tmp_path: Path,
    postgres_url: str,
    make_service: MakeService,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    drop_settings(monkeypatch)

    def settings(url: str) -> Settings:
        return Settings(_env_file=None, database_url=url, training_mode="everything")

    lite = make_service(settings(f"sqlite:///{tmp_path / 'lite.db'}"))
    train(lite, seed=6, size=40)
    train(lite, seed=7, size=10, user="alice")
    text = exported(lite)
    pg = make_service(settings(postgres_url))
    pg.import_models(io.StringIO(text))
    assert exported(pg) == text
    with reader(postgres_url).connect() as conn:  # statistics gathered after the import
        planned, stored = conn.execute(
            sa.text(
                "SELECT c.reltuples, (SELECT count(*) FROM token_count) FROM pg_class c "
                "WHERE c.oid = 'token_count'::regclass"
            )
        ).one()
    assert planned == stored > 0
    back = make_service(settings(f"sqlite:///{tmp_path / 'back.db'}"))
    back.import_models(io.StringIO(exported(pg)))
    assert exported(back) == text
    for user in (None, "alice"):
        assert scores(pg, user) == scores(lite, user) == scores(back, user)
