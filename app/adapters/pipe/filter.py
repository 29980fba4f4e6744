"""One message through the filter: classify, add the X-Spam fields, never lose the message.

``filter_message`` is the whole contract. The X-Spam-* fields the message came with are
dropped first, always: a sender's own ``X-Spam-Flag: NO`` must never reach a procmail or
Sieve rule as if it were ours. Then, on success, ours are added; whatever goes wrong instead
(not a message, too large, database down or not migrated, a recursion or memory error, a
bug), the output is the input without those fields, every other byte kept, and the exit
status is 3. The classifier is a function of the raw bytes; ``classifier`` picks one:

* with ``SPAMFILTER_FILTER_URL`` set, the running HTTP service (``client.py``), falling back
  to the direct path when the service does not answer;
* otherwise the direct path: the service built in this process on the settings
  ``app.settings.loading.load_settings`` reads (the config file, ``SPAMFILTER_*`` over it), without
  migrating (a database that is not migrated, or a missing config file, is an error, exit 3).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from app.adapters.pipe.records import TYPE_CHECKING, NamedTuple
from app.adapters.pipe.report import ExitCode, FilterReport
from app.domain.rewrite import add_headers, drop_spam_headers
from app.errors import describe

if TYPE_CHECKING:
    from pathlib import Path
    from typing import TextIO

    from app.service import SpamFilter
    from app.settings.schema import Settings

Classify = Callable[[bytes], FilterReport]
PROGRAM = "spamfilter-filter"
_NEVER_MIGRATES = "the filter never creates or migrates the database: spamfilter db upgrade does"


class Filtered(NamedTuple):
    """The bytes to write out and the exit status."""

    output: bytes
    code: ExitCode
    verdict: str | None = None


def filter_message(raw: bytes, classify: Classify, errors: TextIO | None = None) -> Filtered:
    """``raw`` without its own X-Spam-* fields, with ours added; on any error, ``raw``
    without its own X-Spam-* fields and nothing added (exit 3).

    Any exception is caught on purpose (RecursionError and MemoryError included: by the time
    they arrive here the stack and the memory that raised them are released): a filter that
    dies loses the mail in some set-ups (procmail without ``w``, a Postfix pipe script), so
    a failure is one line on ``errors``.
    """
    try:
        report = classify(raw)
        output = add_headers(drop_spam_headers(raw), report.headers)
        return Filtered(output, report.exit_code, report.verdict)
    except Exception as error:
        _say(errors, f"{describe(error)}; message passed through unjudged")
        return Filtered(_unjudged(raw, errors), ExitCode.ERROR)


def _unjudged(raw: bytes, errors: TextIO | None) -> bytes:
    """``raw`` without its X-Spam-* fields; ``raw`` itself only if even that fails.

    Removing them costs a copy of the message. Should that copy run out of memory, the
    message goes out as it came rather than not at all: losing mail is the worse failure,
    and exit 3 tells the delivery agent that nothing here was judged.
    """
    try:
        return drop_spam_headers(raw)
    except Exception as error:
        _say(errors, f"{describe(error)}; its X-Spam fields could not be removed")
        return raw


def _say(errors: TextIO | None, line: str) -> None:
    if errors is not None:
        errors.write(f"{PROGRAM}: {line}\n")


def service_classifier(service: SpamFilter, user: str | None = None) -> Classify:
    """Classify with ``service`` in this process, with ``user``'s model (None: the site-wide
    one); the report's fields are its mail report."""

    def classify(raw: bytes) -> FilterReport:
        result = service.classify(raw, user)
        return FilterReport(result.verdict.value, result.mail_report.headers)

    return classify


def direct_classifier(
    settings: Settings | None = None,
    config: Path | None = None,
    environ: Mapping[str, str] | None = None,
    user: str | None = None,
) -> Classify:
    """Classify in this process, with ``user``'s model (None: the site-wide one); the
    service is built (never migrated) on first use.

    Without ``settings`` they are loaded then (the ``config`` file, else the usual places,
    under ``environ``, default the process's), so a bad setting or a missing file is an error
    of that message (exit 3, passed through) rather than a crash before reading it.
    """

    def classify(raw: bytes) -> FilterReport:
        import os

        from app.bootstrap import build_service
        from app.errors import StorageUnavailable
        from app.settings.loading import load_settings

        chosen = settings or load_settings(config, os.environ if environ is None else environ)
        service = build_service(chosen, migrate=False, adapter="pipe")
        try:
            service.refuse_newer_schema()
            return service_classifier(service, user)(raw)
        except StorageUnavailable as error:
            raise StorageUnavailable(f"{error} ({_NEVER_MIGRATES})") from error
        finally:
            service.close()

    return classify


def classifier(
    environ: Mapping[str, str],
    errors: TextIO,
    settings: Settings | None = None,
    config: Path | None = None,
    user: str | None = None,
) -> Classify:
    """The daemon client when ``SPAMFILTER_FILTER_URL`` is set (the direct path as its
    fallback), else the direct path, both judging with ``user``'s model (None: the
    site-wide one). The environment and the ``config`` file are read per message, inside the
    classifier, so a bad value is that message's error (exit 3, passed through)."""
    direct = direct_classifier(settings, config, environ, user)

    def classify(raw: bytes) -> FilterReport:
        from app.adapters.pipe import client

        daemon = client.daemon_from_environment(environ)
        if daemon is None:
            return direct(raw)
        try:
            return client.classify_remotely(daemon, raw, user)
        except client.DaemonUnavailable as error:
            errors.write(f"{PROGRAM}: service unavailable ({error}); classifying directly\n")
            return direct(raw)

    return classify
