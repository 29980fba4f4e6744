"""Settings: one pydantic-settings class, environment prefix ``SPAMFILTER_``.

Nested groups use ``__``: ``SPAMFILTER_MODEL__ALPHA=0.5``. Top-level fields are
``SPAMFILTER_DATABASE_URL``, ``SPAMFILTER_API_TOKENS`` (comma-separated) and
``SPAMFILTER_SCOPE``. Nothing is built at import: callers make ``Settings()`` once and pass it.
The entry points build it with ``app.settings.loading.load_settings``, which also reads a TOML file
(``--config``, ``SPAMFILTER_CONFIG``, /etc/spamfilter, the user's config folder) under the
environment.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, field_serializer, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from app.domain.labels import JUNK, LABELS, check_classes

KIB = 1024
MIB = 1024 * KIB


def default_database_url() -> str:
    """SQLite under the user's data folder, shared by the service and the CLI."""
    return f"sqlite:///{Path.home() / '.local' / 'share' / 'spamfilter' / 'spamfilter.db'}"


class ModelSettings(BaseModel):
    """Naive Bayes parameters (read at every call; no migration needed to change them)."""

    alpha: float = Field(
        1.0, gt=0, allow_inf_nan=False, description="additive smoothing; 1 is Laplace"
    )
    # why presence: half the 1-ROCA% of counting occurrences (docs/accuracy.md#defaults-measured)
    counting: Literal["occurrences", "presence"] = Field(
        "presence", description="count every occurrence of a token, or once per message"
    )
    kind: Literal["multinomial", "bernoulli"] = Field(
        "multinomial",
        description="multinomial, or bernoulli (scores every vocabulary token: slower on large"
        " models)",
    )
    # why 25 per kind: the best of the budgets measured (docs/accuracy.md#defaults-measured)
    top_tokens: int = Field(
        25, ge=0, description="score only the N most decisive tokens (0: every token)"
    )
    top_per_kind: bool = Field(
        True,
        description="apply top_tokens to body words and to header/URL/MIME tokens separately",
    )
    # why a floor of 10: lower 1-ROCA% on every seed (docs/accuracy.md#defaults-measured)
    normalise_length: bool = Field(
        True,
        description="weight a kind with fewer than top_tokens tokens as if it had top_tokens",
    )
    length_floor: int = Field(
        10, ge=1, description="normalise_length: weigh a kind as at least this many tokens"
    )
    # why 10: fewer spam missed at the same ham lost (docs/accuracy.md#defaults-measured)
    distinct_min_messages: int = Field(
        10,
        ge=0,
        description="tokens of one kind with identical learned counts from at least N "
        "messages count once (0: every token counts)",
    )
    clues: int = Field(15, ge=0, le=200, description="tokens returned as the explanation")
    # The classes a message can be learned as (app.domain.labels); ham and spam are always
    # among them, so the spam/ham verdict, headers and spamc exit codes keep their meaning.
    classes: Annotated[tuple[str, ...], NoDecode] = Field(
        LABELS,
        description="the classes messages are learned as (comma-separated; must include ham "
        "and spam; 2 to 20 names of a-z, 0-9 and _). Adding one keeps what is learned; "
        "remove or rename one with 'spamfilter classes'",
    )
    junk_classes: Annotated[tuple[str, ...], NoDecode] = Field(
        JUNK,
        description="which of the classes are junk (comma-separated): the verdict and the "
        "log-odds weigh these against all the others",
    )

    @field_validator("classes", "junk_classes", mode="before")
    @classmethod
    def _split_classes(cls, value: object) -> object:
        # A comma-separated string (the environment, or the config file) or a list (a TOML
        # array); names are compared in lower case, blank entries dropped.
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, list | tuple):
            return tuple(str(v).strip().lower() for v in value if str(v).strip())
        return value

    @field_serializer("classes", "junk_classes")
    def _dump_classes(self, value: tuple[str, ...]) -> list[str]:
        # Dumped as a list, as the other list settings are: what a TOML file or a
        # comma-separated variable gives back.
        return list(value)

    @model_validator(mode="after")
    def _check_classes(self) -> ModelSettings:
        check_classes(self.classes, self.junk_classes)
        return self


class DecisionSettings(BaseModel):
    """Verdict cut-offs on the log-odds (nats) and the training guard rail."""

    ham_log_odds: float = Field(0.0, allow_inf_nan=False, description="ham below this log-odds")
    # why 7 to 15: every stream under 0.1 % ham lost (docs/evaluation.md#the-spam-cut-off-measured)
    spam_log_odds: float = Field(
        7.0,
        allow_inf_nan=False,
        description="the lowest spam cut-off (the fixed one without calibration)",
    )
    spam_log_odds_max: float = Field(
        15.0,
        allow_inf_nan=False,
        description="the ceiling of the spam cut-off, used until min_ham ham messages have "
        "scored; the cut-off rises past it only as ceiling_confidence says",
    )
    # why 0.9: replayed on 49 recorded runs, fewer ham lost, never more (docs/accuracy.md)
    ceiling_confidence: float = Field(
        0.9,
        ge=0,
        lt=1,
        allow_inf_nan=False,
        description="calibration: the cut-off rises past spam_log_odds_max once more ham lies "
        "above it than ham_loss_pct explains, at this confidence (0: never)",
    )
    calibrate: bool = Field(
        True,
        description="choose the spam cut-off from the ham scored before learning (off: "
        "spam_log_odds, fixed)",
    )
    ham_loss_pct: float = Field(
        0.1,
        ge=0,
        lt=100,
        allow_inf_nan=False,
        description="calibration: at most this percentage of the ham scored lies above the cut-off",
    )
    min_ham: int = Field(
        500, ge=0, description="calibration: ham messages scored before the cut-off moves"
    )
    min_messages: int = Field(10, ge=0, description="learned messages per label before verdicts")

    def spam_rule(self) -> str:
        """The spam cut-off in words: ``> 8`` or how it is calibrated."""
        if not self.calibrate:
            return f"> {self.spam_log_odds:g}"
        ceiling = max(self.spam_log_odds_max, self.spam_log_odds)
        rises = (
            f", above {ceiling:g} when the ham there says so at {self.ceiling_confidence:g}"
            if self.ceiling_confidence > 0
            else ""
        )
        return (
            f"> a cut-off between {self.spam_log_odds:g} and {ceiling:g} with at most "
            f"{self.ham_loss_pct:g} % of the ham scored above it ({ceiling:g} until "
            f"{self.min_ham} ham have scored{rises})"
        )

    @model_validator(mode="after")
    def _ordered(self) -> DecisionSettings:
        if self.ham_log_odds > self.spam_log_odds:
            raise ValueError("ham_log_odds must not exceed spam_log_odds")
        return self


class TokenizerSettings(BaseModel):
    """The input limits: caps on what one message contributes and on how deep, long or wide
    its structure may be before the rest is read as opaque text (see app.domain.tokenizer and
    app.domain.message). Past every limit a ``meta:limit:*`` token records that it was hit;
    no limit ever turns a message into an error."""

    max_token_length: int = Field(
        40, ge=4, le=1000, description="longer words become one skip: token"
    )
    max_tokens: int = Field(
        5000,
        ge=10,
        description="tokens counted per message (headers first); later ones are dropped",
    )
    scan_bytes: int = Field(
        512 * KIB, ge=KIB, description="only the first N bytes of a larger message are tokenised"
    )
    max_mime_depth: int = Field(
        20, ge=1, le=200, description="MIME nesting (multipart, message/rfc822) read as parts"
    )
    max_mime_parts: int = Field(500, ge=1, description="MIME parts read as parts per message")
    max_comment_depth: int = Field(
        8, ge=1, le=100, description="nested ( ) comments read in an address header"
    )
    max_html_depth: int = Field(
        256, ge=1, le=10_000, description="nested HTML elements read as markup"
    )
    max_header_bytes: int = Field(
        16 * KIB, ge=256, description="bytes of one header field that are tokenised"
    )
    max_header_tokens: int = Field(200, ge=1, description="tokens one header field contributes")


class ServerSettings(BaseModel):
    """HTTP front end."""

    host: str = Field("127.0.0.1", description="the address spamfilter serve listens on")
    port: int = Field(8000, ge=0, le=65535, description="the port spamfilter serve listens on")
    # why one per core: bench speed by workers (docs/benchmarks.md#the-defaults-measured)
    workers: int = Field(
        default_factory=lambda: min(max(os.cpu_count() or 1, 1), 64),
        ge=1,
        le=64,
        description="worker processes of spamfilter serve (default: one per core)",
    )
    allow_public_bind: bool = Field(
        False, description="bind a non-loopback address without API tokens"
    )
    max_message_bytes: int = Field(
        25 * MIB, ge=KIB, description="hard cap; larger requests get 413"
    )
    max_buffered_bytes: int = Field(
        128 * MIB,
        ge=KIB,
        description="bytes of message bodies held in memory at once by one process, across "
        "every connection and adapter; past it a request gets 503 (milter: tempfail)",
    )
    # why a quarter: token holders keep 3/4 of the budget (docs/operations.md#limits)
    anonymous_share: float = Field(
        0.25,
        gt=0,
        le=1,
        description="the share of max_buffered_bytes that HTTP requests without a valid API "
        "token hold at most together, when API tokens are configured (past it: 503)",
    )
    budget_wait_seconds: float = Field(
        5.0,
        ge=0,
        description="a body that finds max_buffered_bytes full waits this long for room "
        "(HTTP, spamd, milter) before it is refused (503, spamd 75, milter tempfail)",
    )
    stall_seconds: float = Field(
        2.0,
        gt=0,
        description="while a body waits for room, bodies still arriving that sent under 8 KiB "
        "in this long are cut off to make room (HTTP 408, spamd 79, milter: tempfail)",
    )
    max_connections: int = Field(
        256, ge=1, description="concurrent HTTP connections per worker; more get 503"
    )
    idle_timeout_seconds: float = Field(
        5.0, gt=0, description="an idle keep-alive HTTP connection is closed after this"
    )
    read_timeout_seconds: float = Field(
        30.0,
        gt=0,
        description="a whole request body must arrive within this, however it trickles (408)",
    )
    # why 1: bench speed, classify/s and p99 by threads (docs/benchmarks.md#the-defaults-measured)
    service_threads: int = Field(
        1,
        ge=1,
        le=64,
        description="service calls one worker runs at once, each in a thread; the others wait "
        "their turn (many threads only fight over the interpreter lock)",
    )


class SpamdSettings(BaseModel):
    """The spamd-protocol listener (spamc, Exim's spam= condition)."""

    host: str = Field("127.0.0.1", description="the address spamfilter spamd listens on")
    port: int = Field(783, ge=0, le=65535, description="the port spamfilter spamd listens on")
    allow_tell: bool = Field(False, description="accept TELL (learn/forget), like --allow-tell")
    # The spamd protocol has no credentials (spamc sends none), so TELL, which trains the
    # models, is limited by the peer's address, as spamd's --allowed-ips limits connections.
    tell_from: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["127.0.0.0/8", "::1/128"],
        description="with allow_tell: the addresses and networks TELL is accepted from "
        "(comma-separated; others get 77 Permission denied); loopback by default",
    )
    metrics_port: int | None = Field(
        None,
        ge=0,
        le=65535,
        description="serve Prometheus metrics over HTTP on this port of spamd.host (none: off)",
    )
    timeout_seconds: float = Field(30.0, gt=0, description="read timeout per request")
    idle_timeout_seconds: float = Field(
        5.0, gt=0, description="a connection that sends nothing for this long is closed"
    )
    max_connections: int = Field(
        64, ge=1, description="requests served at once; further clients wait in the listen backlog"
    )

    @field_validator("tell_from", mode="before")
    @classmethod
    def _split_networks(cls, value: object) -> object:
        # A comma-separated string (the environment) or a list (a TOML file); each entry
        # must be an address or a network (a bare address is a network of one).
        if isinstance(value, str):
            value = [part for part in value.split(",") if part.strip()]
        if isinstance(value, list | tuple):
            return [str(ipaddress.ip_network(str(v).strip(), strict=False)) for v in value]
        return value


class MailSettings(BaseModel):
    """What a mail server does with a verdict (the milter acts on it; spamd only reports)."""

    spam_action: Literal["accept", "reject", "quarantine"] = Field(
        "accept", description="for spam: add headers only, reject with 5xx, or quarantine"
    )
    reject_log_odds: float = Field(
        30.0, allow_inf_nan=False, description="with spam_action=reject: reject above this"
    )
    on_error: Literal["accept", "tempfail"] = Field(
        "accept", description="when classification fails (like Postfix milter_default_action)"
    )


class MilterSettings(BaseModel):
    """The milter listener (Postfix smtpd_milters, Sendmail INPUT_MAIL_FILTER)."""

    socket: str = Field("inet:8891@127.0.0.1", description="inet:PORT@HOST or unix:PATH")
    metrics_port: int | None = Field(
        None,
        ge=0,
        le=65535,
        description="serve Prometheus metrics over HTTP on this port of metrics_host (none: off)",
    )
    metrics_host: str = Field("127.0.0.1", description="the address of the metrics port")
    timeout_seconds: float = Field(
        60.0, gt=0, description="per classification and per frame; idle connections live longer"
    )
    # why 600 s: twice Postfix's smtpd_timeout (docs/operations.md#limits)
    idle_timeout_seconds: float = Field(
        600.0, gt=0, description="a connection silent between frames for this long is closed"
    )
    # why 30 s: the MTA sends a message at once from its queue (docs/operations.md#limits)
    message_timeout_seconds: float = Field(
        30.0,
        gt=0,
        description="from a message's first header field to its end: a peer that has not "
        "finished by then loses the connection (idle_timeout_seconds is for between messages)",
    )
    max_connections: int = Field(
        256, ge=1, description="concurrent MTA connections; more are closed at once"
    )
    # why "site": one verdict serves every recipient (docs/per-user.md)
    recipients: Literal["site", "first"] = Field(
        "site",
        description="with several envelope recipients, judge with the site-wide model (site) "
        "or the first recipient's (first)",
    )


class LogSettings(BaseModel):
    """What the service writes about the mail it judges."""

    verdicts: str = Field(
        "auto",
        min_length=1,
        description="the verdict log, one JSON line per classify, learn and forget: auto "
        "(standard error in serve, spamd and milter; off in one-shot commands), off, stderr, "
        "or a file path",
    )


class UserSettings(BaseModel):
    """Per-user models: how a user's counts and the site-wide ones are combined."""

    # why 1000: spamfilter eval --per-user on the Enron mailboxes (docs/per-user.md#measured)
    fallback_strength: float = Field(
        1000.0,
        ge=0,
        allow_inf_nan=False,
        description="how many messages of a user's own the site-wide model weighs as",
    )
    train_site: bool = Field(
        True, description="feedback given for a user also trains the site-wide model"
    )


class ConsoleSettings(BaseModel):
    """The web console at /ui/ and the activity it shows (recorded by serve, spamd, milter and
    the CLI's learn, forget and classify)."""

    enabled: bool = Field(True, description="serve the web console at /ui/")
    record: bool = Field(
        True, description="daemons record verdicts and per-minute counts for the console"
    )
    session_key: str = Field(
        "",
        description="key signing console session cookies (empty: a random key made once and "
        "kept in the database, so every worker and replica agrees)",
    )
    session_hours: float = Field(12.0, gt=0, le=24 * 30, description="a login lasts this long")
    # why 5 a minute: 300 guesses in 0.3 s without it (docs/security.md#console-access)
    login_failures: int = Field(
        5,
        ge=0,
        description="failed console logins allowed per client address (an IPv6 client per /64) "
        "within login_window_seconds; past it, 429 with Retry-After until the window ends "
        "(0: no limit)",
    )
    login_window_seconds: float = Field(
        60.0, gt=0, le=86_400, description="the window failed console logins are counted in"
    )
    secure_cookie: bool = Field(
        False,
        description="always mark the session cookie Secure (it is whenever the request is "
        "HTTPS); set behind a proxy that terminates TLS",
    )
    history_entries: int = Field(
        10_000,
        ge=0,
        description="verdicts kept in the history, besides those of anonymous callers",
    )
    # why apart: anonymous calls emptied a shared history in a minute (docs/console.md)
    history_anonymous_entries: int = Field(
        1_000,
        ge=0,
        description="verdicts of anonymous callers (classify over HTTP without a valid token "
        "while tokens are configured) kept in the history, counted apart so that a flood of "
        "them cannot push out the others",
    )
    history_days: float = Field(7.0, ge=0, description="verdicts older than this are deleted")
    keep_tokens_hours: float = Field(
        48.0,
        ge=0,
        description="a verdict's tokens are kept this long, so it can be learned from the "
        "history (0: never kept)",
    )
    show_senders: bool = Field(
        True, description="keep the sender and subject of each verdict in the history"
    )
    rollup_days: int = Field(30, ge=1, description="per-minute counts are kept this long")
    flush_seconds: float = Field(
        2.0, gt=0, le=300, description="recorded activity is written at least this often"
    )
    # why 100: bench speed, HTTP p99 by flush size (docs/benchmarks.md#the-defaults-measured)
    flush_events: int = Field(100, ge=1, description="... or once this many events wait")
    buffer_events: int = Field(
        5_000, ge=1, description="events held in memory at most; past it the oldest are lost"
    )


class Settings(BaseSettings):
    """Everything configurable, read from the environment (and a .env file if present)."""

    model_config = SettingsConfigDict(
        env_prefix="SPAMFILTER_", env_nested_delimiter="__", env_file=".env", extra="ignore"
    )

    database_url: str = Field(
        default_factory=default_database_url,
        description="sqlite:///PATH or postgresql://user:pass@host/db",
    )
    api_tokens: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="comma-separated bearer tokens; when set, feedback, forget, stats and metrics"
        " need Authorization: Bearer TOKEN, and classify hides header and address clues from"
        " callers without one",
    )
    # Tokens that open the console read-only (status, history, graphs, scan); api_tokens
    # are the admin role, which may also learn and forget.
    read_tokens: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="comma-separated tokens that open the web console read-only",
    )
    # A user's scope is ``<scope>/user:<name>`` (app.domain.users): 44 + 6 + 150 characters
    # fit the 200 of a scope name.
    scope: str = Field(
        "global",
        min_length=1,
        max_length=44,
        pattern=r"^[^\s:]+$",
        description="the site-wide model's name; users' models are named under it",
    )
    # why thick: half the 1-ROCA% of learning everything (docs/accuracy.md#defaults-measured)
    training_mode: Literal["everything", "thick"] = Field(
        "thick", description="learn every labelled message, or only the hard ones"
    )
    training_margin: float = Field(
        30.0, ge=0, allow_inf_nan=False, description="thick mode: |log-odds| learned below"
    )
    # why 0.3: the model kept learning a server's stream (docs/accuracy.md#learning-what-is-new)
    training_novelty: float = Field(
        0.3,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="thick mode: also learn a message when at least this share of its distinct "
        "tokens is new to the model (0: off)",
    )
    # why 1,000,000: accuracy by cap (docs/evaluation.md#what-a-cap-costs, operations.md)
    max_tokens: int = Field(
        1_000_000,
        ge=0,
        description="per model: past this many distinct tokens the rarest and oldest are "
        "expired, by 'spamfilter expire' and after learning (0: no cap)",
    )
    # why 0: no corpus measured an age rule (docs/operations.md#keeping-the-database-small)
    max_token_age_days: int = Field(
        0,
        ge=0,
        description="expire tokens not learned for this many days (0: never by age)",
    )
    # why 200,000: bench speed, token rows read (docs/benchmarks.md#the-defaults-measured)
    cache_tokens: int = Field(
        200_000,
        ge=0,
        description="learned token counts each process keeps in memory, checked against the "
        "database on every read (0: none)",
    )
    model: ModelSettings = ModelSettings()
    decision: DecisionSettings = DecisionSettings()
    tokenizer: TokenizerSettings = TokenizerSettings()
    server: ServerSettings = Field(default_factory=ServerSettings)
    spamd: SpamdSettings = SpamdSettings()
    mail: MailSettings = MailSettings()
    milter: MilterSettings = MilterSettings()
    users: UserSettings = UserSettings()
    log: LogSettings = LogSettings()
    console: ConsoleSettings = ConsoleSettings()

    @field_validator("api_tokens", "read_tokens", mode="before")
    @classmethod
    def _split_tokens(cls, value: object) -> object:
        # A comma-separated string (the environment) or a list (a TOML file); either way
        # blank entries are dropped, so that an empty token can never open anything.
        if isinstance(value, str):
            value = value.split(",")
        if isinstance(value, list | tuple):
            return [
                t.strip() if isinstance(t, str) else t
                for t in value
                if not isinstance(t, str) or t.strip()
            ]
        return value
