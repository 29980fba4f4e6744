"""The console's pages as HTML (see ``markup`` for the pieces)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from app.api.console.figures import Chart
from app.api.console.health import Health
from app.api.console.markup import (
    clue_chart,
    csrf_field,
    data_attr,
    e,
    facts,
    notice,
    table,
    verdict_badge,
    when,
)
from app.domain.labels import LABELS
from app.service import Classification, FeedbackResult, Stats
from app.service.accounts import UserSummary
from app.service.history import FALSE_POSITIVE, MISSED_SPAM, Entry, EntryFilter
from app.settings.schema import Settings

USERS_SHOWN = 50


@dataclass(frozen=True, slots=True)
class StatusFacts:
    """What the status page shows."""

    version: str
    stats: Stats
    readiness: str | None
    database_bytes: int | None
    uptime_seconds: float
    daemons: Sequence[Health]
    users: Sequence[UserSummary] = ()


def size(n: int | None) -> str:
    """Bytes in a readable unit."""
    if n is None:
        return "unknown"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def duration(seconds: float) -> str:
    """An uptime as days, hours, minutes."""
    minutes, _ = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    return (f"{days} d " if days else "") + f"{hours} h {minutes} min"


def status_body(found: StatusFacts, settings: Settings) -> str:
    """The status page: version, database, model, training, users, daemons."""
    stats = found.stats
    ready = "ready" if found.readiness is None else f"not ready: {found.readiness}"
    overview = facts(
        [
            ("Version", e(found.version)),
            ("Database", f"{e(stats.database)}, {e(size(found.database_bytes))}, {e(ready)}"),
            ("Uptime (this HTTP worker)", e(duration(found.uptime_seconds))),
            ("Vocabulary", f'<span id="vocabulary">{stats.vocabulary:,}</span> tokens'),
            (
                "Training mode",
                e(f"{settings.training_mode} (margin {settings.training_margin:g} nats)"),
            ),
            (
                "Thresholds",
                e(
                    f"ham < {settings.decision.ham_log_odds:g} ≤ unsure; spam "
                    f"{settings.decision.spam_rule()} (log-odds, nats); "
                    f"{settings.decision.min_messages} messages per label before verdicts"
                ),
            ),
        ]
    )
    labels = table(
        ["Label", "Messages learned", "Tokens learned"],
        [
            [e(label), f'<span id="learned-{e(label)}">{s.messages:,}</span>', f"{s.tokens:,}"]
            for label, s in stats.labels.items()
        ],
    )
    daemons = table(
        ["Daemon", "Address", "State", "Detail"],
        [
            [
                e(h.name),
                f"<code>{e(h.address)}</code>",
                f'<span class="state {e(h.state.replace(" ", "-"))}">{e(h.state)}</span>',
                e(h.detail),
            ]
            for h in found.daemons
        ],
    )
    users = ""
    if found.users:
        shown = found.users[:USERS_SHOWN]
        more = len(found.users) - len(shown)
        users = (
            f'<h2>Per-user models (<span id="user-count">{len(found.users):,}</span>)</h2>'
            + table(
                ["User", *(f"{label} messages" for label in LABELS), "Vocabulary"],
                [
                    [
                        e(u.user),
                        *(f"{u.messages[label]:,}" for label in LABELS),
                        f"{u.vocabulary:,}",
                    ]
                    for u in shown
                ],
            )
            + (
                f'<p class="hint">and {more:,} more (spamfilter user list shows them all)</p>'
                if more
                else ""
            )
        )
    return (
        f'<section class="cards">{overview}</section><h2>Learned (site-wide model)</h2>{labels}'
        f"{users}<h2>Daemons</h2>{daemons}"
    )


def result_panel(result: Classification) -> str:
    """A classification with its clues."""
    return (
        '<section class="result" id="result">'
        f"<h2>Verdict: {verdict_badge(result.verdict.value)}</h2>"
        + facts(
            [
                ("Log-odds", f"{result.log_odds:+.3f} nats"),
                ("P(spam)", f"{result.spam_probability:.6f}"),
                ("Reason", e(result.reason.value if result.reason else "—")),
                ("Tokens", f"{result.tokens:,}"),
                ("Digest", f"<code>{e(result.digest)}</code>"),
            ]
        )
        + clue_chart([(c.token, c.weight) for c in result.clues])
        + "</section>"
    )


def learn_buttons(csrf: str, admin: bool, extra: str = "", classes: Sequence[str] = LABELS) -> str:
    """A learn button per declared class (ham and spam by default) and a forget button
    (admin sessions only)."""
    if not admin:
        return '<p class="hint">Learning needs an admin (API) token.</p>'
    buttons = "".join(
        f'<button type="submit" name="action" value="{e(name)}">Learn as {e(name)}</button>'
        for name in classes
    )
    return (
        f'<div class="actions">{csrf_field(csrf)}{extra}{buttons}'
        '<button type="submit" name="action" value="forget" class="quiet">Forget</button></div>'
    )


def scan_body(
    csrf: str,
    admin: bool,
    raw: str = "",
    result: Classification | None = None,
    learned: FeedbackResult | None = None,
    error: str = "",
    classes: Sequence[str] = LABELS,
) -> str:
    """Paste or upload a message; classify, learn it as one of ``classes`` or forget it."""
    told = ""
    if learned is not None:
        what = f"as {learned.label}" if learned.label else ""
        told = notice(
            f"{learned.outcome.value} {what}".strip() + f" ({learned.digest[:12]}…)", "ok"
        )
    buttons = learn_buttons(csrf, admin, classes=classes)
    return (
        (notice(error, "error") if error else "")
        + told
        + '<form method="post" action="/ui/scan" class="scan">'
        + '<label for="raw">Raw message (headers and body)</label>'
        + f'<textarea id="raw" name="raw" rows="14" spellcheck="false">{e(raw)}</textarea>'
        + '<label for="upload">…or upload a file</label>'
        + '<input id="upload" type="file" accept=".eml,message/rfc822,text/plain" data-into="raw">'
        + f'<div class="actions">{csrf_field(csrf)}'
        + '<button type="submit" name="action" value="classify">Scan</button></div>'
        + buttons
        + "</form>"
        + (result_panel(result) if result else "")
    )


def history_body(entries: Sequence[Entry], chosen: EntryFilter, adapters: Sequence[str]) -> str:
    """The newest verdicts with a filter form."""

    def option(value: str, current: str | None) -> str:
        selected = " selected" if value == (current or "") else ""
        return f'<option value="{e(value)}"{selected}>{e(value or "any")}</option>'

    form = (
        '<form method="get" action="/ui/history" class="filters">'
        '<label>Verdict <select name="verdict">'
        + "".join(option(v, chosen.verdict) for v in ("", "ham", "unsure", "spam"))
        + '</select></label><label>Adapter <select name="adapter">'
        + "".join(option(a, chosen.adapter) for a in ("", *adapters))
        + f'</select></label><label>User <input name="user" value="{e(chosen.user or "")}"></label>'
        + f'<label>Sender or subject <input name="q" value="{e(chosen.text or "")}"></label>'
        + '<button type="submit">Filter</button></form>'
    )
    rows = [
        [
            f'<a href="/ui/history/{entry.id}">{e(when(entry.at))}</a>',
            e(entry.adapter),
            e(entry.user or "—"),
            e(entry.sender or "—"),
            e(entry.subject or "—"),
            verdict_badge(entry.verdict)
            + (f' <span class="learned">→ {e(entry.learned)}</span>' if entry.learned else ""),
            f"{entry.log_odds:+.2f}",
            f"{entry.ms:.1f}",
        ]
        for entry in entries
    ]
    listing = (
        table(
            ["Time (UTC)", "Adapter", "User", "Sender", "Subject", "Verdict", "Score", "ms"],
            rows,
            "history",
        )
        if rows
        else notice("No verdicts recorded yet (or none match).")
    )
    more = ""
    if len(entries) >= 100:
        query = {
            k: v
            for k, v in (
                ("verdict", chosen.verdict),
                ("adapter", chosen.adapter),
                ("user", chosen.user),
                ("q", chosen.text),
            )
            if v
        }
        query["before"] = str(entries[-1].id)
        more = f'<p><a href="/ui/history?{e(urlencode(query))}">Older</a></p>'
    return form + listing + more


def entry_body(
    entry: Entry,
    kept: bool,
    csrf: str,
    admin: bool,
    told: str = "",
    classes: Sequence[str] = LABELS,
) -> str:
    """One verdict: its facts, its clue chart, and learning it as one of ``classes`` while
    its tokens are kept."""
    details = facts(
        [
            ("Time (UTC)", e(when(entry.at))),
            ("Adapter", e(entry.adapter)),
            ("User", e(entry.user or "— (site-wide model)")),
            ("Sender", e(entry.sender or "—")),
            ("Subject", e(entry.subject or "—")),
            ("Message-ID", e(entry.message_id or "—")),
            ("Verdict", verdict_badge(entry.verdict)),
            ("Log-odds", f"{entry.log_odds:+.3f} nats"),
            ("Milliseconds", f"{entry.ms:.2f}"),
            ("Learned as", f'<span id="learned-as">{e(entry.learned or "not learned")}</span>'),
            ("Digest", f"<code>{e(entry.digest)}</code>"),
        ]
    )
    if kept:
        actions = (
            f'<form method="post" action="/ui/history/{entry.id}">'
            f"{learn_buttons(csrf, admin, classes=classes)}</form>"
        )
    else:
        actions = notice("Its tokens are no longer kept: it can no longer be learned from here.")
    return (notice(told, "ok") if told else "") + details + clue_chart(entry.clues) + actions


def charts_body(charts: Sequence[Chart], intro: str = "") -> str:
    """Charts drawn by console.js from their data attributes (a table too, without script)."""
    return intro + "".join(
        f'<figure class="chart"{data_attr("chart", chart)}><figcaption>{e(chart["title"])} '
        f"({e(chart['unit'])})</figcaption></figure>"
        for chart in charts
    )


def accuracy_body(days: Sequence[dict[str, int]], chart: Chart) -> str:
    """Errors reported through feedback, per day, as a chart and a table."""
    rows = [
        [
            e(_day(d["day"])),
            f"{d['judged']:,}",
            f"{d['feedback']:,}",
            f'<span class="fp">{d[FALSE_POSITIVE]:,}</span>',
            f'<span class="fn">{d[MISSED_SPAM]:,}</span>',
        ]
        for d in reversed(days)
    ]
    intro = (
        "<p>A correction is feedback that contradicts the verdict the history holds for the same "
        "message: judged spam and learned as ham (a false positive), or judged ham or unsure "
        "and learned as spam (spam that got through). Counted once per message.</p>"
    )
    return charts_body([chart], intro) + table(
        ["Day (UTC)", "Judged", "Feedback", "Ham judged spam", "Spam that got through"],
        rows,
        "accuracy",
    )


def _day(epoch: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d")
