"""TELL on a message thick training skips: spamc can only say "already learned", so our reply
carries an ``X-Spamfilter-Outcome: skipped`` line and the server log says why."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from app.adapters.spamd.protocol import TellResponse, render_response
from app.adapters.spamd.server import SpamdServer
from app.service import SpamFilter
from app.settings.schema import Settings
from tests.adapters.spamd.conftest import Spamc, Spamd, exchange, spamd_overrides, train
from tests.adapters.spamd.test_spamc import fresh
from tests.conftest import ServiceFactory, SettingsFactory

MARGIN = 5.0
SKIPPED_REPLY = b"SPAMD/1.1 0 EX_OK\r\nX-Spamfilter-Outcome: skipped\r\n\r\n\r\n"


@pytest.fixture
def thick_spamd(
    make_settings: SettingsFactory,
    make_service: ServiceFactory,
    run_spamd: Callable[[SpamFilter, Settings], Spamd],
) -> Spamd:
    """A trained server that accepts TELL and trains thick (margin ``MARGIN`` nats)."""
    overrides = spamd_overrides(allow_tell=True)
    settings = make_settings(training_mode="thick", training_margin=MARGIN, **overrides)
    service = make_service(settings)
    train(service)
    return run_spamd(service, settings)


def _tell(port: int, message: bytes, kind: str) -> bytes:
    fields = b"Message-class: %s\r\nSet: local\r\n" % kind.encode()
    head = b"TELL SPAMC/1.5\r\n" + fields + b"Content-length: %d\r\n\r\n" % len(message)
    return exchange(port, head + message)


def test_the_codec_writes_the_outcome_line() -> None:
    assert render_response(TellResponse(outcome="skipped")) == SKIPPED_REPLY
    assert render_response(TellResponse(did_set=("local",))) == (
        b"SPAMD/1.1 0 EX_OK\r\nDidSet: local\r\n\r\n\r\n"
    )


def test_a_skipped_message_says_so_in_the_reply_and_the_log(
    thick_spamd: Spamd, caplog: pytest.LogCaptureFixture
) -> None:
    spammy, _ = fresh(21)
    before = thick_spamd.service.stats().labels
    with caplog.at_level(logging.INFO, logger=SpamdServer.__module__):
        reply = _tell(thick_spamd.port, spammy, "spam")
    assert reply == SKIPPED_REPLY
    assert thick_spamd.service.stats().labels == before
    assert "TELL learn spam: skipped: already judged right by more than 5 nats" in caplog.text


def test_a_message_judged_wrong_is_learned_without_the_line(thick_spamd: Spamd) -> None:
    spammy, _ = fresh(22)
    assert _tell(thick_spamd.port, spammy, "ham") == (
        b"SPAMD/1.1 0 EX_OK\r\nDidSet: local\r\n\r\n\r\n"
    )


@pytest.mark.peer
def test_spamc_still_reads_the_reply(thick_spamd: Spamd, spamc: Spamc) -> None:
    spammy, _ = fresh(23)
    result = spamc(thick_spamd.port, "-L", "spam", message=spammy)
    assert result.returncode == 0, result
    assert result.stdout.decode().strip() == "Message was already un/learned"
    result = spamc(thick_spamd.port, "-L", "ham", message=spammy)  # judged wrong: learned
    assert result.returncode == 0, result
    assert result.stdout.decode().strip() == "Message successfully un/learned"
