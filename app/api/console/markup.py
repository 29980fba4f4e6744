"""HTML for the console: small functions, every value passed through ``e`` (html.escape).

No inline script or style anywhere: the pages are served under ``default-src 'self'``, so
charts get their data from ``data-*`` attributes read by ``/ui/static/console.js``.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from datetime import datetime

from app.api.console.session import Session

NAV = (
    ("status", "/ui/", "Status"),
    ("traffic", "/ui/traffic", "Traffic"),
    ("history", "/ui/history", "History"),
    ("scan", "/ui/scan", "Scan"),
    ("accuracy", "/ui/accuracy", "Accuracy"),
)


def e(value: object) -> str:
    """``value`` as HTML text (quotes escaped too, so it is safe in attributes)."""
    return html.escape("" if value is None else str(value), quote=True)


def data_attr(name: str, value: object) -> str:
    """A ``data-NAME`` attribute holding ``value`` as JSON."""
    return f' data-{name}="{e(json.dumps(value, separators=(",", ":")))}"'


def when(moment: datetime) -> str:
    """A UTC time as the history shows it."""
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def csrf_field(token: str) -> str:
    """The hidden CSRF field of a form."""
    return f'<input type="hidden" name="csrf" value="{e(token)}">'


def page(
    title: str, body: str, active: str = "", session: Session | None = None, csrf: str = ""
) -> str:
    """A whole console page: head, navigation (when logged in), ``body``."""
    nav = ""
    if session is not None:
        current = ' aria-current="page"'
        links = "".join(
            f'<a href="{href}"{current if key == active else ""}>{e(label)}</a>'
            for key, href, label in NAV
        )
        nav = (
            f'<nav><span class="brand">spamfilter</span>{links}'
            f'<form method="post" action="/ui/logout" class="logout">{csrf_field(csrf)}'
            f'<span class="role">{e(session.role.value)}</span>'
            '<button type="submit">Log out</button></form></nav>'
        )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{e(title)} · spamfilter</title>"
        '<link rel="stylesheet" href="/ui/static/uPlot.min.css">'
        '<link rel="stylesheet" href="/ui/static/console.css">'
        f"</head><body><header>{nav}</header><main><h1>{e(title)}</h1>{body}</main>"
        '<script src="/ui/static/uPlot.iife.min.js"></script>'
        '<script src="/ui/static/console.js"></script></body></html>'
    )


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], css: str = "") -> str:
    """A table; ``rows`` hold cells that are already HTML."""
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(f'<td data-label="{e(h)}">{c}</td>' for h, c in zip(headers, row, strict=True))
        + "</tr>"
        for row in rows
    )
    return (
        f'<div class="scroll"><table class="{e(css)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def facts(pairs: Iterable[tuple[str, str]]) -> str:
    """A definition list; values are already HTML."""
    return "<dl>" + "".join(f"<dt>{e(k)}</dt><dd>{v}</dd>" for k, v in pairs) + "</dl>"


def notice(text: str, kind: str = "info") -> str:
    """A message box (info, error, ok)."""
    return f'<p class="notice {e(kind)}" role="status">{e(text)}</p>'


def verdict_badge(verdict: str) -> str:
    """A verdict as a coloured label."""
    return f'<span class="badge {e(verdict)}">{e(verdict)}</span>'


def clue_chart(clues: Sequence[tuple[str, float]]) -> str:
    """The clues as a horizontal bar chart (SVG): towards spam right, towards ham left."""
    if not clues:
        return notice("No clues: the model had not learned enough to score this message.")
    widest = max(abs(w) for _, w in clues) or 1.0
    row, half = 22, 150
    bars = []
    for i, (token, weight) in enumerate(clues):
        y = i * row
        length = abs(weight) / widest * (half - 4)
        x = half if weight >= 0 else half - length
        kind = "spam" if weight >= 0 else "ham"
        bars.append(
            f'<g class="clue {kind}"><title>{e(token)}: {weight:+.3f}</title>'
            f'<rect x="{x:.1f}" y="{y + 3}" width="{max(length, 1):.1f}" '
            f'height="{row - 6}"/>'
            f'<text x="{2 * half + 8}" y="{y + row - 7}">{e(token[:48])} ({weight:+.2f})</text></g>'
        )
    height = len(clues) * row
    return (
        f'<figure class="clues"><svg viewBox="0 0 620 {height}" role="img" '
        f'aria-label="token weights">'
        f'<line x1="{half}" y1="0" x2="{half}" y2="{height}" class="axis"/>{"".join(bars)}</svg>'
        "<figcaption>Token weights in nats: bars to the right pushed towards spam, to the left "
        "towards ham.</figcaption></figure>"
    )


def login_page(csrf: str, error: str = "") -> str:
    """The login form."""
    body = (notice(error, "error") if error else "") + (
        '<form method="post" action="/ui/login" class="login">'
        f"{csrf_field(csrf)}"
        '<label for="token">API token</label>'
        '<input id="token" name="token" type="password" autocomplete="current-password" required>'
        '<button type="submit">Log in</button></form>'
        "<p>A read token (<code>SPAMFILTER_READ_TOKENS</code>) shows status, history and scans; "
        "an API token (<code>SPAMFILTER_API_TOKENS</code>) may also learn and forget.</p>"
    )
    return page("Log in", body)


def refused_page() -> str:
    """What the console shows when no token is configured."""
    return page(
        "Console closed",
        notice("The console needs tokens: none is configured.", "error")
        + "<p>Set <code>SPAMFILTER_API_TOKENS</code> (admin: may learn and forget) and/or "
        "<code>SPAMFILTER_READ_TOKENS</code> (read-only), or <code>api_tokens</code> / "
        "<code>read_tokens</code> in the config file, then restart the service.</p>",
    )
