"""The filter as a client of the running HTTP service, and its fallback to the direct path."""

from __future__ import annotations

import io
import json
import random
import socket
import time

import pytest

from app.adapters.pipe import client
from app.adapters.pipe.client import Daemon, DaemonUnavailable, classify_remotely, parse_response
from app.adapters.pipe.filter import classifier, filter_message, service_classifier
from app.errors import ConfigurationError, InvalidMessage, MessageTooLarge
from app.service import SpamFilter
from app.settings.schema import Settings
from tests.adapters.pipe.conftest import RunFilter
from tests.adapters.pipe.daemons import CLASSIFY_ANSWER, canned, free_port, http_service
from tests.builders import ham_message, make_message, spam_message


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:8000", Daemon("127.0.0.1", 8000, "")),
        ("http://localhost", Daemon("localhost", 80, "")),
        ("HTTP://filter.internal:8080/spam/", Daemon("filter.internal", 8080, "/spam")),
        ("http://[::1]:8000", Daemon("::1", 8000, "")),
    ],
)
def test_daemon_urls(url: str, expected: Daemon) -> None:
    assert Daemon.from_url(url) == expected


@pytest.mark.parametrize("url", ["https://127.0.0.1:8000", "127.0.0.1:8000", "http://:80"])
def test_unusable_urls(url: str) -> None:
    with pytest.raises(ConfigurationError):
        client.daemon_from_environment({client.URL_VARIABLE: url})


def test_environment_variables() -> None:
    assert client.daemon_from_environment({}) is None
    assert client.daemon_from_environment({client.URL_VARIABLE: " "}) is None
    daemon = client.daemon_from_environment(
        {client.URL_VARIABLE: "http://127.0.0.1:9", client.TIMEOUT_VARIABLE: "0.5"}
    )
    assert daemon == Daemon("127.0.0.1", 9, "", 0.5)
    for bad in ("soon", "0", "-1"):
        with pytest.raises(ConfigurationError, match=client.TIMEOUT_VARIABLE):
            client.daemon_from_environment(
                {client.URL_VARIABLE: "http://127.0.0.1:9", client.TIMEOUT_VARIABLE: bad}
            )


def test_responses_are_parsed() -> None:
    plain = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nServer: x\r\n\r\n{}trailing"
    assert parse_response(plain) == (200, b"{}")
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'4\r\n{"a"\r\n3;ext=1\r\n: 1\r\n1\r\n}\r\n0\r\n\r\n'
    )
    assert parse_response(chunked) == (200, b'{"a": 1}')
    assert parse_response(b"HTTP/1.0 503 Busy\r\n\r\n") == (503, b"")
    for garbage in (b"", b"hello", b"SPAMD/1.1 0 EX_OK\r\n\r\n", b"HTTP/1.1 OK\r\n\r\n"):
        with pytest.raises(DaemonUnavailable):
            parse_response(garbage)


def test_the_service_answer_supplies_the_headers() -> None:
    with canned("200 OK", json.dumps(CLASSIFY_ANSWER).encode()) as daemon:
        report = classify_remotely(daemon, make_message("Hi", "x\n"))
    expected = [(name, value) for name, value in CLASSIFY_ANSWER["mail"]["headers"]]  # type: ignore[index]
    assert (report.verdict, report.headers) == ("spam", expected)


@pytest.mark.parametrize(
    ("status", "error"), [("400 Bad Request", InvalidMessage), ("413 Too Large", MessageTooLarge)]
)
def test_the_message_is_the_problem(status: str, error: type[Exception]) -> None:
    body = b'{"error": "invalid_message", "detail": "not a message"}'
    with canned(status, body) as daemon, pytest.raises(error, match="not a message"):
        classify_remotely(daemon, b"junk")


@pytest.mark.parametrize(
    ("status", "body"),
    [
        ("503 Service Unavailable", b'{"error": "storage_unavailable"}'),
        ("200 OK", b"not json"),
        ("200 OK", b'{"verdict": "maybe"}'),
        ("200 OK", b'{"verdict": "spam"}'),
        ("401 Unauthorized", b"{}"),
    ],
)
def test_the_service_is_the_problem(status: str, body: bytes) -> None:
    with canned(status, body) as daemon, pytest.raises(DaemonUnavailable):
        classify_remotely(daemon, make_message("Hi", "x\n"))


def test_each_address_of_the_host_is_tried_in_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    refused = free_port()
    with canned("200 OK", json.dumps(CLASSIFY_ANSWER).encode()) as daemon:
        # A name that resolves to a closed port first, then to the service (localhost's ::1
        # and 127.0.0.1, say).
        stream = (client._socket.AF_INET, client._socket.SOCK_STREAM, 6, "")
        addresses = [(*stream, ("127.0.0.1", refused)), (*stream, ("127.0.0.1", daemon.port))]
        monkeypatch.setattr(client._socket, "getaddrinfo", lambda *_: addresses)
        assert classify_remotely(daemon, make_message("Hi", "x\n")).verdict == "spam"
        monkeypatch.setattr(client._socket, "getaddrinfo", lambda *_: addresses[:1])
        with pytest.raises(DaemonUnavailable, match="refused"):
            classify_remotely(daemon, make_message("Hi", "x\n"))
        monkeypatch.setattr(client._socket, "getaddrinfo", lambda *_: [])
        with pytest.raises(DaemonUnavailable, match="no address"):
            classify_remotely(daemon, make_message("Hi", "x\n"))


def test_a_service_that_never_answers_times_out() -> None:
    # Connections queue in the backlog, accepted by no one: only the timeout ends the wait.
    with socket.create_server(("127.0.0.1", 0)) as listener:
        daemon = Daemon("127.0.0.1", listener.getsockname()[1], "", 0.2)
        started = time.monotonic()
        with pytest.raises(DaemonUnavailable, match="timed out"):
            classify_remotely(daemon, make_message("Hi", "x\n"))
        assert time.monotonic() - started < 5


def test_a_service_that_does_not_answer_falls_back(trained: SpamFilter, settings: Settings) -> None:
    raw = spam_message(random.Random(3), 4000)
    environ = {client.URL_VARIABLE: f"http://127.0.0.1:{free_port()}"}
    errors = io.StringIO()
    through = filter_message(raw, classifier(environ, errors, settings))
    assert through == filter_message(raw, service_classifier(trained))
    assert errors.getvalue().startswith("spamfilter-filter: service unavailable (127.0.0.1:")
    assert errors.getvalue().endswith("); classifying directly\n")


def test_a_bad_url_passes_the_message_through(settings: Settings) -> None:
    raw = make_message("Hi", "x\n")
    errors = io.StringIO()
    classify = classifier({client.URL_VARIABLE: "ftp://x"}, errors, settings)
    filtered = filter_message(raw, classify, errors)
    assert (filtered.output, int(filtered.code)) == (raw, 3)
    assert "configuration_error: SPAMFILTER_FILTER_URL must be" in errors.getvalue()


def test_through_the_real_service_the_output_is_the_direct_paths(
    trained: SpamFilter, run_filter: RunFilter, database_url: str
) -> None:
    rng = random.Random(21)
    messages = [spam_message(rng, 100), ham_message(rng, 101), make_message("Hello", "You?\n")]
    with http_service(database_url) as url:
        for raw in messages:
            direct = run_filter(raw)
            remote = run_filter(raw, env={client.URL_VARIABLE: url})
            assert remote.stderr == b""
            assert (remote.returncode, remote.stdout) == (direct.returncode, direct.stdout)
            assert direct.stdout != raw
        rejected = run_filter(b"no header here\n", env={client.URL_VARIABLE: url})
    assert (rejected.returncode, rejected.stdout) == (3, b"no header here\n")
    assert b"invalid_message" in rejected.stderr
