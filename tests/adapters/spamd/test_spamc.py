"""The real spamc (Debian's SpamAssassin 4.0.1 client) against our server.

Every spamc mode a mail system uses: -c (exit 1 for spam), -R / -r (reports), -y (symbols),
plain (PROCESS), --headers, -E, -L spam|ham|forget (TELL), -K (PING), -u (User) and -x (no
safe fallback). The verdicts come from a model trained on generated mail, so a spammy
message must come back spam and a hammy one ham, with spamc's exit codes.
"""

from __future__ import annotations

import random

import pytest

from app.domain.rewrite import add_headers
from app.domain.spam_headers import clue_symbol
from app.service.scoping import Models
from tests.adapters.spamd.conftest import Spamc, Spamd, SpamdFactory
from tests.builders import ham_message, make_message, spam_message

pytestmark = pytest.mark.peer

EX_ISSPAM = 1  # spamc -c / -E: spam
EX_IOERR = 74  # spamc -x: the server refused (whatever code it sent)
EX_UNAVAILABLE = 69  # spamc -x: nothing listens


def fresh(seed: int) -> tuple[bytes, bytes]:
    """A spammy and a hammy message the model has not learned."""
    rng = random.Random(seed)
    return spam_message(rng, 90_000 + seed), ham_message(rng, 91_000 + seed)


def processed(spamd: Spamd, message: bytes) -> bytes:
    """The message as PROCESS should return it: the service's headers on top."""
    report = spamd.service.classify(message).mail_report
    return add_headers(message, report.headers)


def score_line(output: bytes) -> tuple[float, float]:
    """``score/threshold`` as spamc prints it."""
    score, threshold = output.decode().splitlines()[0].split("/")
    return float(score), float(threshold)


def test_check_gives_spam_and_ham_with_spamcs_exit_codes(
    make_spamd: SpamdFactory, spamc: Spamc
) -> None:
    spamd = make_spamd()
    spammy, hammy = fresh(1)
    spam = spamc(spamd.port, "-c", message=spammy)
    ham = spamc(spamd.port, "-c", message=hammy)
    assert spam.returncode == EX_ISSPAM, spam
    assert ham.returncode == 0, ham
    spam_score, threshold = score_line(spam.stdout)
    ham_score, _ = score_line(ham.stdout)
    assert threshold == 5.0
    assert spam_score >= threshold > ham_score
    assert spam_score == spamd.service.classify(spammy).mail_report.score


def test_report(make_spamd: SpamdFactory, spamc: Spamc) -> None:
    spamd = make_spamd()
    spammy, hammy = fresh(2)
    result = spamc(spamd.port, "-R", message=spammy)
    assert result.returncode == 0
    lines = result.stdout.decode().splitlines()
    assert score_line(result.stdout)[0] >= 5.0
    assert lines[1].startswith("Spam filter verdict: spam, log-odds +")
    clues = spamd.service.classify(spammy).clues
    assert f"{clues[0].weight:+9.2f} {clue_symbol(clues[0].token)}" in lines
    ham = spamc(spamd.port, "-R", message=hammy)
    assert ham.stdout.decode().splitlines()[1].startswith("Spam filter verdict: ham")


def test_report_if_spam(make_spamd: SpamdFactory, spamc: Spamc) -> None:
    spamd = make_spamd(trained=True)
    spammy, hammy = fresh(3)
    spam = spamc(spamd.port, "-r", message=spammy)
    # spamd answers REPORT_IFSPAM with "Spam: Yes", which spamc does not take for "True":
    # it prints the report without its score line, as it does against SpamAssassin.
    assert spam.stdout.decode().startswith("Spam filter verdict: spam")
    assert spamc(spamd.port, "-r", message=hammy).stdout == b""


def test_symbols_are_the_clue_tokens(make_spamd: SpamdFactory, spamc: Spamc) -> None:
    spamd = make_spamd()
    spammy, _ = fresh(4)
    result = spamc(spamd.port, "-y", message=spammy)
    assert result.returncode == 0
    expected = [clue_symbol(c.token) for c in spamd.service.classify(spammy).clues]
    assert result.stdout.decode().split(",") == expected


def test_process_adds_the_headers_and_keeps_every_other_byte(
    make_spamd: SpamdFactory, spamc: Spamc
) -> None:
    spamd = make_spamd()
    spammy, hammy = fresh(5)
    odd = make_message("caf\u00e9 prize", "winner cash\n\nline two \u00e9\n", headers={"X-A": "1"})
    for message in (spammy, hammy, odd, odd.replace(b"\r\n", b"\n")):
        result = spamc(spamd.port, message=message)
        assert result.returncode == 0
        assert result.stdout == processed(spamd, message)
        assert result.stdout.endswith(message)
    assert spamc(spamd.port, message=spammy).stdout.startswith(b"X-Spam-Flag: YES\r\n")
    assert spamc(spamd.port, message=hammy).stdout.startswith(b"X-Spam-Status: No, score=-")


def test_headers_mode_returns_the_same_message(make_spamd: SpamdFactory, spamc: Spamc) -> None:
    spamd = make_spamd()
    spammy, _ = fresh(6)
    result = spamc(spamd.port, "--headers", message=spammy)
    assert result.returncode == 0
    assert result.stdout == processed(spamd, spammy)


def test_exitcode_mode(make_spamd: SpamdFactory, spamc: Spamc) -> None:
    spamd = make_spamd()
    spammy, hammy = fresh(7)
    spam = spamc(spamd.port, "-E", message=spammy)
    assert (spam.returncode, spam.stdout) == (EX_ISSPAM, processed(spamd, spammy))
    assert spamc(spamd.port, "-E", message=hammy).returncode == 0


def test_ping(make_spamd: SpamdFactory, spamc: Spamc) -> None:
    result = spamc(make_spamd(trained=False).port, "-K")
    assert (result.returncode, result.stdout) == (0, b"SPAMD/1.5 0\n")


def test_user_is_passed_to_the_service(
    make_spamd: SpamdFactory, spamc: Spamc, monkeypatch: pytest.MonkeyPatch
) -> None:
    spamd = make_spamd(trained=False)
    users: list[str | None] = []
    models = spamd.service.models

    def spy(user: str | None) -> Models:
        users.append(user)
        return models(user)

    monkeypatch.setattr(spamd.service, "models", spy)
    spamc(spamd.port, "-u", "alice", "-c", message=fresh(8)[0])
    assert users == ["alice"]


def test_tell_is_refused_unless_allowed(make_spamd: SpamdFactory, spamc: Spamc) -> None:
    spamd = make_spamd()
    before = spamd.service.stats()
    result = spamc(spamd.port, "-L", "spam", message=fresh(9)[0])
    assert result.returncode == EX_IOERR  # spamd's "69 Service Unavailable", as spamc sees it
    assert spamd.service.stats() == before


def test_tell_learns_relabels_and_forgets_idempotently(
    make_spamd: SpamdFactory, spamc: Spamc
) -> None:
    spamd = make_spamd(allow_tell=True)
    message, _ = fresh(10)
    base = spamd.service.stats().labels

    def tell(kind: str) -> str:
        result = spamc(spamd.port, "-L", kind, message=message)
        assert result.returncode == 0, result
        return result.stdout.decode().strip()

    def learned() -> tuple[int, int]:
        labels = spamd.service.stats().labels
        return labels["spam"].messages, labels["ham"].messages

    start = (base["spam"].messages, base["ham"].messages)
    assert tell("spam") == "Message successfully un/learned"
    assert learned() == (start[0] + 1, start[1])
    assert tell("spam") == "Message was already un/learned"
    assert learned() == (start[0] + 1, start[1])
    assert tell("ham") == "Message successfully un/learned"  # relabelled: counts moved
    assert learned() == (start[0], start[1] + 1)
    assert tell("forget") == "Message successfully un/learned"
    assert learned() == start
    assert tell("forget") == "Message was already un/learned"
    assert spamd.service.stats().labels == base


def test_a_model_taught_through_spamc_gives_verdicts(
    make_spamd: SpamdFactory, spamc: Spamc
) -> None:
    spamd = make_spamd(trained=False, allow_tell=True)
    spammy, hammy = fresh(11)
    assert spamc(spamd.port, "-c", message=spammy).returncode == 0  # untrained: not spam
    rng = random.Random(5)
    for serial in range(10):
        for kind, message in (
            ("spam", spam_message(rng, serial)),
            ("ham", ham_message(rng, serial)),
        ):
            assert spamc(spamd.port, "-L", kind, message=message).returncode == 0
    assert spamc(spamd.port, "-c", message=spammy).returncode == EX_ISSPAM
    assert spamc(spamd.port, "-c", message=hammy).returncode == 0


def test_refusals_with_and_without_safe_fallback(make_spamd: SpamdFactory, spamc: Spamc) -> None:
    spamd = make_spamd(trained=False, max_message_bytes=1024)
    big = make_message("big", "word " * 400 + "\n")
    not_mail = b"just some words, no header at all\n"
    for message in (big, not_mail):
        # safe fallback (the default): the message passes unchanged, -c says 0/0
        passed = spamc(spamd.port, "-s", "100000", message=message)
        assert (passed.returncode, passed.stdout) == (0, message)
        checked = spamc(spamd.port, "-s", "100000", "-c", message=message)
        assert (checked.returncode, checked.stdout) == (0, b"0/0\n")
        # -x: spamc fails instead, with EX_IOERR for any refusal by the server
        strict = spamc(spamd.port, "-s", "100000", "-x", message=message)
        assert (strict.returncode, strict.stdout) == (EX_IOERR, b"")


def test_a_stopped_server(make_spamd: SpamdFactory, spamc: Spamc) -> None:
    spamd = make_spamd(trained=False)
    port = spamd.port
    spamd.stop()
    message, _ = fresh(12)
    passed = spamc(port, message=message)
    assert (passed.returncode, passed.stdout) == (0, message)
    assert spamc(port, "-c", message=message).stdout == b"0/0\n"
    assert spamc(port, "-x", message=message).returncode == EX_UNAVAILABLE
    assert spamc(port, "-K").returncode == EX_UNAVAILABLE
