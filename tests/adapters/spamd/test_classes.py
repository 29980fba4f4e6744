"""Classes beyond spam and ham over the spamd protocol: TELL's own X-Spamfilter-Class field
(the codec, then our server over a socket) and X-Spam-Class in what the real spamc gets back
from PROCESS and HEADERS."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from app.adapters.spamd.protocol import ExitCode, SpamdError, TellAction, parse_request, tell_action
from app.service import SpamFilter
from app.settings.schema import Settings
from tests.adapters.spamd.conftest import Spamc, Spamd, exchange, spamd_overrides, train
from tests.adapters.spamd.test_protocol import CAP, MSG, request
from tests.adapters.spamd.test_spamc import fresh
from tests.conftest import ServiceFactory, SettingsFactory

CLASSES = {
    "classes": ["ham", "newsletter", "spam", "phishing"],
    "junk_classes": ["spam", "phishing"],
}
JUNK = ("spam", "phishing")
CLASS_REPLY = "X-Spam-Class: "


def _tell(fields: bytes) -> bytes:
    return request("TELL", "1.5", fields + f"Content-length: {len(MSG)}\r\n".encode())


@pytest.mark.parametrize(
    ("fields", "action"),
    [
        (b"X-Spamfilter-Class: Newsletter\r\nSet: local\r\n", TellAction(learn="newsletter")),
        (b"Message-class: ham\r\nX-Spamfilter-Class: newsletter\r\nSet: local\r\n",
         TellAction(learn="newsletter")),
        (b"Message-class: spam\r\nX-Spamfilter-Class: phishing\r\nSet: local\r\n",
         TellAction(learn="phishing")),
        (b"X-Spamfilter-Class: phishing\r\nRemove: local\r\n", TellAction(forget=True)),
    ],
)  # fmt: skip
def test_tell_learns_the_class_named_by_our_field(fields: bytes, action: TellAction) -> None:
    assert tell_action(parse_request(_tell(fields), CAP).head, JUNK) == action


@pytest.mark.parametrize(
    ("fields", "detail"),
    [
        (b"Message-class: ham\r\nX-Spamfilter-Class: phishing\r\nSet: local\r\n",
         "(Message-class ham disagrees with X-Spamfilter-Class phishing)"),
        (b"Message-class: spam\r\nX-Spamfilter-Class: newsletter\r\nSet: local\r\n",
         "(Message-class spam disagrees with X-Spamfilter-Class newsletter)"),
    ],
)  # fmt: skip
def test_a_message_class_on_the_other_side_is_refused(fields: bytes, detail: str) -> None:
    with pytest.raises(SpamdError) as caught:
        tell_action(parse_request(_tell(fields), CAP).head, JUNK)
    assert caught.value.status is ExitCode.PROTOCOL
    assert caught.value.detail == detail


@pytest.mark.parametrize(
    "value", [b"news letter", b"", b"-x", b"9a", b"n" * 32, b"a.b", b"caf\xc3\xa9"]
)
def test_a_malformed_class_is_a_bad_header(value: bytes) -> None:
    with pytest.raises(SpamdError, match="X-Spamfilter-Class header contains invalid class"):
        parse_request(_tell(b"X-Spamfilter-Class: " + value + b"\r\nSet: local\r\n"), CAP)


@pytest.fixture
def classes_spamd(
    make_settings: SettingsFactory,
    make_service: ServiceFactory,
    run_spamd: Callable[[SpamFilter, Settings], Spamd],
) -> Callable[..., Spamd]:
    """A trained server whose site declares ``model`` (default: four classes)."""

    def make(model: dict[str, object] | None = None) -> Spamd:
        settings = make_settings(
            **spamd_overrides(allow_tell=True), model=CLASSES if model is None else model
        )
        service = make_service(settings)
        train(service)
        return run_spamd(service, settings)

    return make


@pytest.mark.peer
def test_spamc_gets_the_class_header_from_process_and_headers(
    classes_spamd: Callable[..., Spamd], spamc: Spamc
) -> None:
    spamd = classes_spamd()
    for message in fresh(21):
        expected = spamd.service.classify(message).class_name
        assert expected in CLASSES["classes"]
        for args in ((), ("--headers",)):
            result = spamc(spamd.port, *args, message=message)
            assert result.returncode == 0, result
            head = result.stdout.split(b"\r\n\r\n")[0].decode()
            assert f"\r\n{CLASS_REPLY}{expected}\r\n" in f"\r\n{head}\r\n"


@pytest.mark.peer
def test_a_ham_and_spam_site_sends_no_class_header(
    classes_spamd: Callable[..., Spamd], spamc: Spamc
) -> None:
    spamd = classes_spamd(model={})
    for message in fresh(22):
        result = spamc(spamd.port, message=message)
        assert result.returncode == 0 and b"X-Spam-Verdict: " in result.stdout
        assert CLASS_REPLY.encode() not in result.stdout


def test_tell_with_our_field_learns_over_a_socket(classes_spamd: Callable[..., Spamd]) -> None:
    spamd = classes_spamd()
    before = spamd.service.stats().labels["spam"].messages
    fields = b"Message-class: spam\r\nX-Spamfilter-Class: spam\r\nSet: local\r\n"
    assert exchange(spamd.port, _tell(fields)).startswith(b"SPAMD/1.1 0 EX_OK\r\nDidSet: local")
    assert spamd.service.stats().labels["spam"].messages == before + 1


def test_tell_with_an_undeclared_class_changes_nothing(
    classes_spamd: Callable[..., Spamd],
) -> None:
    spamd = classes_spamd()
    before = spamd.service.stats()
    reply = exchange(spamd.port, _tell(b"X-Spamfilter-Class: receipts\r\nSet: local\r\n"))
    assert reply.startswith(b"SPAMD/1.0 64 ")  # EX_USAGE: an unknown class, as an unknown label
    assert spamd.service.stats() == before


def test_tell_learns_a_declared_class_beyond_spam_and_ham(
    classes_spamd: Callable[..., Spamd],
) -> None:
    spamd = classes_spamd()
    fields = b"Message-class: ham\r\nX-Spamfilter-Class: newsletter\r\nSet: local\r\n"
    assert exchange(spamd.port, _tell(fields)).startswith(b"SPAMD/1.1 0 EX_OK\r\nDidSet: local")
    assert spamd.service.stats().labels["newsletter"].messages == 1
