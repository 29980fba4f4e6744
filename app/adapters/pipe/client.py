"""A client of the running HTTP service: ``POST /v1/classify`` over a plain socket.

It keeps a filter process at the cost of a bare interpreter plus one request, so it speaks
through ``_socket``, the socket module's C core, rather than ``http.client`` or ``socket``
itself (why: their import times, docs/integration/pipe.md):
the request is written by hand, HTTP/1.1 with ``Connection: close``, and the response read
to its end. The X-Spam fields come ready-made in the answer's ``mail`` report, so the filter
applies no threshold of its own.
"""

from __future__ import annotations

import _socket
import json
from collections.abc import Mapping

from app.adapters.pipe.records import TYPE_CHECKING, NamedTuple
from app.adapters.pipe.report import FilterReport
from app.domain.verdict import Verdict
from app.errors import ConfigurationError, InvalidMessage, InvalidUser, MessageTooLarge

if TYPE_CHECKING:
    from typing import Any

URL_VARIABLE = "SPAMFILTER_FILTER_URL"
TIMEOUT_VARIABLE = "SPAMFILTER_FILTER_TIMEOUT"
DEFAULT_TIMEOUT = 5.0
_MAX_RESPONSE = 1 << 20
# RFC 3986 unreserved characters: every other byte of a query value is percent-encoded.
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


class DaemonUnavailable(Exception):
    """The service did not answer usefully (refused, timed out, 5xx, garbled)."""


class Daemon(NamedTuple):
    """Where the HTTP service listens, and how long to wait for it (seconds)."""

    host: str
    port: int
    path: str = ""
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def from_url(cls, url: str, timeout: float = DEFAULT_TIMEOUT) -> Daemon:
        """``http://HOST[:PORT][/PREFIX]``; ValueError for anything else (https included)."""
        scheme, sep, rest = url.strip().partition("://")
        if not sep or scheme.lower() != "http":
            raise ValueError(f"{URL_VARIABLE} must be http://HOST[:PORT][/PREFIX], got {url!r}")
        authority, _, path = rest.partition("/")
        host, port = _host_port(authority)
        return cls(host, port, f"/{path}".rstrip("/") if path else "", timeout)


def daemon_from_environment(environ: Mapping[str, str]) -> Daemon | None:
    """The daemon ``SPAMFILTER_FILTER_URL`` names, or None when it is unset or empty."""
    url = environ.get(URL_VARIABLE, "").strip()
    if not url:
        return None
    timeout = _number(environ, TIMEOUT_VARIABLE, DEFAULT_TIMEOUT)
    if timeout <= 0:
        raise ConfigurationError(f"{TIMEOUT_VARIABLE} must be positive, got {timeout}")
    try:
        return Daemon.from_url(url, timeout)
    except ValueError as error:
        raise ConfigurationError(str(error)) from error


def _number(environ: Mapping[str, str], name: str, default: float) -> float:
    value = environ.get(name, "").strip()
    try:
        return float(value) if value else default
    except ValueError as error:
        raise ConfigurationError(f"{name} is not a number: {value!r}") from error


def classify_remotely(daemon: Daemon, raw: bytes, user: str | None = None) -> FilterReport:
    """Ask the service for a verdict on ``raw``, with ``user``'s model (None: the site-wide
    one).

    Raises InvalidMessage (400) or MessageTooLarge (413) when the message is the problem,
    InvalidUser (422) when the user is, and DaemonUnavailable for everything else that is
    not a 200 with the expected JSON.
    """
    query = "" if user is None else f"?user={query_value(user)}"
    status, body = _post(daemon, f"{daemon.path}/v1/classify{query}", raw)
    if status == 400:
        raise InvalidMessage(_detail(body))
    if status == 413:
        raise MessageTooLarge(_detail(body))
    if status == 422:
        raise InvalidUser(_detail(body))
    if status != 200:
        raise DaemonUnavailable(f"HTTP {status} from the service")
    try:
        doc = json.loads(body)
        verdict = Verdict(doc["verdict"]).value
        headers = [(str(name), str(value)) for name, value in doc["mail"]["headers"]]
    except (ValueError, KeyError, TypeError) as error:
        raise DaemonUnavailable(f"unexpected answer from the service: {error}") from error
    return FilterReport(verdict, headers)


def query_value(text: str) -> str:
    """``text`` percent-encoded as a query value (UTF-8; stdlib urllib costs an import)."""
    return "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in text.encode())


def _post(daemon: Daemon, path: str, raw: bytes) -> tuple[int, bytes]:
    head = (
        f"POST {path} HTTP/1.1\r\n"
        f"Host: {daemon.host}:{daemon.port}\r\n"
        "Content-Type: message/rfc822\r\n"
        f"Content-Length: {len(raw)}\r\n"
        "Connection: close\r\n\r\n"
    )
    try:
        sock = _connect(daemon)
        try:
            sock.sendall(head.encode("ascii") + raw)
            response = _read_all(sock)
        finally:
            sock.close()
    except OSError as error:
        raise DaemonUnavailable(f"{daemon.host}:{daemon.port}: {error}") from error
    return parse_response(response)


def _connect(daemon: Daemon) -> _socket.socket:
    """A stream socket connected to the daemon, with its timeout: ``socket.create_connection``
    on the C core, each address of the host tried in turn. The ``socket`` module wraps the
    same calls, but importing it (with ``selectors`` and ``array``) costs a filter process
    ~2 ms; OSError (its subclasses ``TimeoutError`` and ``gaierror`` included) as there."""
    failure: OSError | None = None
    found = _socket.getaddrinfo(_host_bytes(daemon.host), daemon.port, 0, _socket.SOCK_STREAM)
    for family, kind, proto, _, address in found:
        sock = _socket.socket(family, kind, proto)
        try:
            sock.settimeout(daemon.timeout)
            sock.connect(address)
        except OSError as error:
            sock.close()
            failure = error
            continue
        return sock
    raise failure or OSError(f"no address for {daemon.host}")


def _host_bytes(host: str) -> bytes | str:
    """An ASCII host as bytes: a str makes the socket module encode it with the ``idna``
    codec, whose import (with ``stringprep``) costs a filter process ~1.5 ms."""
    return host.encode("ascii") if host.isascii() else host


def _read_all(sock: _socket.socket) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while chunk := sock.recv(65536):
        chunks.append(chunk)
        size += len(chunk)
        if size > _MAX_RESPONSE:
            raise DaemonUnavailable("the service's answer is too large")
    return b"".join(chunks)


def parse_response(response: bytes) -> tuple[int, bytes]:
    """Status code and body of a complete HTTP/1.x response (chunked bodies decoded)."""
    head, sep, body = response.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if not sep or len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise DaemonUnavailable("the service's answer is not HTTP/1.x")
    fields = {
        name.strip().lower(): value.strip()
        for name, _, value in (line.partition(b":") for line in lines[1:])
    }
    if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
        body = _dechunk(body)
    elif fields.get(b"content-length", b"").isdigit():
        body = body[: int(fields[b"content-length"])]
    return int(parts[1]), body


def _dechunk(body: bytes) -> bytes:
    out: list[bytes] = []
    while True:
        size_line, sep, rest = body.partition(b"\r\n")
        try:
            size = int(size_line.split(b";")[0], 16)
        except ValueError as error:
            raise DaemonUnavailable("bad chunked encoding from the service") from error
        if not sep or size == 0:
            return b"".join(out)
        out.append(rest[:size])
        body = rest[size + 2 :]


def _host_port(authority: str) -> tuple[str, int]:
    if authority.startswith("["):  # [IPv6]:port
        host, _, port = authority[1:].partition("]")
        port = port.removeprefix(":")
    else:
        host, _, port = authority.rpartition(":") if ":" in authority else (authority, "", "")
    if not host:
        raise ValueError(f"no host in {URL_VARIABLE}")
    return host, int(port) if port else 80


def _detail(body: bytes) -> str:
    try:
        doc: Any = json.loads(body)
        return str(doc.get("detail") or doc.get("error"))
    except (ValueError, AttributeError):
        return body[:200].decode("utf-8", "replace")
