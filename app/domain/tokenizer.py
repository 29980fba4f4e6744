"""Tokens from a parsed message: body words plus namespaced header, URL and MIME tokens.

Body words are bare (``viagra``); every synthetic token is ``namespace:value`` (``subject:free``,
``from:domain:example.com``, ``url:host:example.com``) so that the same word in a Subject and
in a body are different evidence. Output is deterministic for the same bytes and options.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from email.message import Message
from email.utils import getaddresses
from functools import partial
from itertools import islice

from app.domain.html import html_text_and_urls
from app.domain.message import (
    ParsedMessage,
    Part,
    field_value,
    header_field,
    header_text,
    header_values,
    text_parts,
)


@dataclass(frozen=True, slots=True)
class TokenizerOptions:
    """Caps on what one message can contribute.

    ``max_token_length``: longer words become one ``skip:<first char>:<length bucket>`` token
    (a 300-character base64 run or URL-encoded blob says "long garbage", not its spelling).
    ``max_tokens``: tokens counted per message, headers first, then body in order; the rest is
    dropped so one huge message cannot dominate the counts or the request time.
    ``max_header_bytes`` and ``max_header_tokens``: what one header field may give (only its
    first characters are read; its further tokens are dropped). ``max_comment_depth``: an
    address header whose ( ) comments nest deeper is read without its comments.
    ``max_html_depth``: HTML elements nested deeper are flattened (see html.bound_depth).
    Past each of these limits a ``meta:limit:<name>`` token records that it was hit: deep
    nesting and giant headers are evidence in themselves.
    """

    max_token_length: int = 40
    min_token_length: int = 2
    max_tokens: int = 5000
    max_header_bytes: int = 16 * 1024
    max_header_tokens: int = 200
    max_comment_depth: int = 8
    max_html_depth: int = 256


# A word: letters/digits with inner apostrophes, dots, dashes, dollar and euro signs.
_WORD = re.compile(r"[^\W_](?:[\w'$€£.-]*[\w$€£])?")
# The words of _WORD two characters long or more, the same matches at the same places: where
# _WORD takes one character, nothing longer starts there, and both go on at the next one.
# The default (min_token_length 2) drops one-character words: about one match in eleven of
# the SpamAssassin corpus's text, found only to be thrown away.
_LONGER_WORD = re.compile(r"[^\W_][\w'$€£.-]*[\w$€£]")
# One capturing group: split() gives the text between URLs and the URLs in turn.
_URL = re.compile(r"(\b(?:https?://|www\.)[^\s<>\"'()\[\]{}]+)", re.IGNORECASE)
_IPV4 = re.compile(r"\b(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\b")
# A run that may be an IPv6 address, optionally written "IPv6:..." as in SMTP address
# literals; ipaddress decides. A following dot means an IPv4-mapped tail, which _IPV4 takes.
_IPV6 = re.compile(r"(?<![\w:.])(?:ipv6:)?([0-9a-f:]{2,39})(?![\w:.])")
# The networks a relay address gives: /24, /16 and /8 as octet counts; /64 (a subnet),
# /48 (a site) and /32 (a provider's allocation) as hextet counts.
_IPV4_NETWORKS = (3, 2, 1)
_IPV6_NETWORKS = (4, 3, 2)
# Runs of host-name characters; each run is split into labels in Python (host_names). A
# pattern that finds host names directly, "(?:[a-z0-9-]+\.)+[a-z]{2,}", backtracks with the
# square of a run's length: a 32 KB Received header of "a.a.a..." took 6 s.
_HOST_RUN = re.compile(r"[a-z0-9_.-]+")
# The last label: letters, ending the label or followed by a dash ("com" of "com-x").
_TLD = re.compile(r"[a-z]{2,}(?![a-z0-9])")
# Scripts written without spaces between words: kana, CJK ideographs (with extension A, the
# compatibility block and the supplementary planes), Hangul syllables, half-width katakana.
_CJK_RUN = re.compile(
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U0002fa1f]+"
)
# Characters that render as nothing: soft hyphen, zero-width space/joiners, word joiner,
# invisible operators, byte-order mark. Dropped before splitting, so "fr\u200bee" is "free".
_INVISIBLE = re.compile("[\u00ad\u034f\u180e\u200b-\u200f\u2060-\u2064\ufeff]")
# Room for a namespace such as "return-path:domain:" on top of the word-length cap.
_NAMESPACE_ALLOWANCE = 40
_HEADERS_AS_WORDS = ("x-mailer", "user-agent", "content-transfer-encoding")


def tokenize(parsed: ParsedMessage, options: TokenizerOptions) -> Counter[str]:
    """Token counts for one message (each occurrence counted, at most ``max_tokens`` in all)."""
    counts: Counter[str] = Counter()
    budget = options.max_tokens
    flags = (["meta:truncated"] if parsed.truncated else []) + [
        f"meta:limit:{name}" for name in sorted(parsed.limits)
    ]
    for flag in flags[:budget]:
        counts[flag] += 1
        budget -= 1
    limit = options.max_token_length + _NAMESPACE_ALLOWANCE
    taken: list[str] = []
    for chunk in _token_chunks(parsed, options):
        taken += chunk
        if len(taken) >= budget:
            del taken[budget:]
            break
    tally = Counter(taken)
    if not counts and max(map(len, tally), default=0) <= limit:
        return tally  # no flag, nothing to fold: what the loop below would build
    # Count first, then fold: fold_long runs once per distinct token, not per occurrence.
    for token, count in tally.items():
        counts[fold_long(token, limit)] += count
    return counts


def token_kind(token: str) -> str:
    """``"word"`` for a bare body word, ``"field"`` for a namespaced token (``subject:``,
    ``received:``, ``url:``, ``mime:``, ``skip:`` …): the two kinds of evidence whose most
    decisive tokens are chosen separately, so that a dozen correlated relay and sender tokens
    cannot crowd the body's words out of the score."""
    return "field" if ":" in token else "word"


def fold_long(token: str, limit: int) -> str:
    """``token``, or ``<namespace>skip:<length bucket>`` when it is longer than ``limit``.

    Applies to every token, so a 5,000-character host name or address cannot become a
    5,000-character token whatever namespace produced it.
    """
    if len(token) <= limit:
        return token
    namespace = token[: token.rfind(":", 0, _NAMESPACE_ALLOWANCE) + 1]
    return f"{namespace}skip:{len(token) // 10 * 10}"


def _token_chunks(parsed: ParsedMessage, options: TokenizerOptions) -> Iterator[list[str]]:
    """Every token of the message in order (headers, MIME structure, then each text part's
    words and links as written), a list at a time: the caller stops at its budget after
    the list that reaches it, so the rest of the message is never read."""
    yield list(header_tokens(parsed.message, options))
    yield list(mime_tokens(parsed.parts))
    for part in text_parts(parsed.parts):
        if part.content_type == "text/html":
            html = html_text_and_urls(part.text, options.max_html_depth)
            yield ["meta:limit:html-depth"] if html.too_deep else []
            yield list(url_tokens(html.urls))
            text = html.text
        else:
            text = part.text
        # A URL is evidence once, as url: tokens; left in the text it would also split into
        # body words (its host, "mailman", "listinfo") that say the same thing again. Words
        # and links come in the order they are written, so a page of links cannot use up the
        # max_tokens budget before the first word is counted.
        for index, piece in enumerate(_URL.split(text)):
            yield list(url_tokens((piece,))) if index % 2 else words(piece, options)


def words(text: str, options: TokenizerOptions, prefix: str = "") -> list[str]:
    """Lower-cased words of ``text``, long ones folded to ``skip:`` tokens.

    Chinese, Japanese and Korean text has no spaces to split on: each run of those scripts gives
    its overlapping character pairs instead, the usual indexing unit for CJK text; taken whole, a
    run is a phrase or a sentence that never recurs. The pairs obey the same length limits as
    words, so a lone character between punctuation is dropped like a one-letter word.
    Characters that render as nothing are dropped first: spam hides words from filters by
    splitting them with soft hyphens or zero-width spaces that the reader never sees.
    A list, built by comprehension: words are most of a message's tokens, and a generator
    yielding them one by one was the tokenizer's largest cost.
    """
    shortest, longest = options.min_token_length, options.max_token_length
    found: list[str] = []
    # Invisible characters and CJK scripts are all outside ASCII: most text needs neither scan.
    if not text.isascii():
        text = _INVISIBLE.sub("", text)
        runs = _CJK_RUN.findall(text)
        if runs:
            found = [
                prefix + pair for pair in cjk_bigrams(runs) if shortest <= len(pair) <= longest
            ]
            text = _CJK_RUN.sub(" ", text)
    pattern = _LONGER_WORD if shortest >= 2 else _WORD
    found += [
        prefix + word if len(word) <= longest else f"{prefix}skip:{word[0]}:{len(word) // 10 * 10}"
        for word in pattern.findall(text.lower())
        if len(word) >= shortest
    ]
    return found


def cjk_bigrams(runs: Iterable[str]) -> Iterator[str]:
    """Overlapping character pairs of each run (a one-character run: itself)."""
    for run in runs:
        if len(run) == 1:
            yield run
        for i in range(len(run) - 1):
            yield run[i : i + 2]


def header_tokens(message: Message, options: TokenizerOptions) -> Iterator[str]:
    """Tokens from the headers that carry evidence: Subject, addresses, relays, mailer.

    Each field gives at most ``max_header_tokens`` tokens from its first ``max_header_bytes``
    characters (see TokenizerOptions).
    """
    cap, most = options.max_header_bytes, options.max_header_tokens

    def field(name: str, tokens: Callable[[str], Iterable[str]]) -> Iterator[str]:
        text, cut = header_field(message, name, cap)
        return _capped(cut, most, tokens(text))

    yield from field("subject", lambda text: words(text, options, "subject:"))
    for name in ("from", "reply-to", "return-path"):
        yield from field(name, partial(address_tokens, name, options=options))
    for name in _HEADERS_AS_WORDS:
        yield from field(name, partial(words, options=options, prefix=f"{name}:"))
    message_id = header_text(message, "message-id", cap)
    if "@" in message_id:
        yield f"message-id:domain:{message_id.rsplit('@', 1)[1].strip('<> ').lower()}"
    for received in header_values(message, "received"):
        yield from _capped(len(received) > cap, most, received_tokens(received[:cap]))


def _capped(cut: bool, limit: int, tokens: Iterable[str]) -> Iterator[str]:
    """At most ``limit`` of ``tokens``, then a ``meta:limit:`` token for each limit hit."""
    if cut:
        yield "meta:limit:header-bytes"
    taken = list(islice(tokens, limit + 1))
    yield from taken[:limit]
    if len(taken) > limit:
        yield "meta:limit:header-tokens"


def address_tokens(field: str, value: str, options: TokenizerOptions) -> Iterator[str]:
    """``field:addr:``, ``field:domain:`` and display-name word tokens of an address header.

    ( ) comments nested deeper than ``max_comment_depth`` (or never closed that deep) are
    removed first, with a ``meta:limit:comment-depth`` token: the stdlib address parser
    recurses once per level, and 500 nested comments overflowed Python's stack.
    """
    value, too_deep = bound_comments(value, options.max_comment_depth)
    if too_deep:
        yield "meta:limit:comment-depth"
    for name, address in getaddresses([value]):
        address = address.lower().strip()
        if "@" in address:
            yield f"{field}:addr:{address}"
            yield f"{field}:domain:{address.rsplit('@', 1)[1]}"
        yield from words(name, options, f"{field}:name:")


def received_tokens(value: str) -> Iterator[str]:
    """Relay evidence from one Received line: host names, the /24, /16 and /8 networks of
    IPv4 addresses (as SpamBayes mines them), and the /64, /48 and /32 networks of IPv6
    addresses: a relay never seen before still says which provider's or region's block it
    sits in."""
    lowered = value.lower()
    for host in host_names(lowered.split(";", 1)[0]):
        yield f"received:host:{host}"
    for octets in _IPV4.findall(lowered):
        for length in _IPV4_NETWORKS:
            yield f"received:ip:{'.'.join(octets[:length])}"
    for candidate in _IPV6.findall(lowered):
        yield from ipv6_networks(candidate)


def ipv6_networks(candidate: str) -> Iterator[str]:
    """``received:ip6:`` tokens for the networks of ``candidate`` when it is an IPv6 address.

    Hextets are written without leading zeros, as in ``2001:db8:0:20`` for a /64; a time of
    day such as ``10:00:00`` or any other run that is not an address gives nothing.
    """
    # Without "::" an address has eight hextets: the times of day a Received line gives
    # ("10:00:00") are turned away here, not by ipaddress's exception.
    colons = candidate.count(":")
    if colons < 2 or (colons != 7 and "::" not in candidate):
        return
    try:
        address = ipaddress.IPv6Address(candidate)
    except ValueError:
        return
    hextets = [group.lstrip("0") or "0" for group in address.exploded.split(":")]
    for length in _IPV6_NETWORKS:
        yield f"received:ip6:{':'.join(hextets[:length])}"


def host_names(text: str) -> Iterator[str]:
    """Dotted host names in lower-cased ``text``: two or more labels of letters, digits and
    dashes, the last of two or more letters (``mx1.example.com``; never ``1.2.3.4``).

    Linear: each run of host-name characters is split into labels once, and in each stretch
    of non-empty labels the longest prefix that ends in such a last label is the name.
    """
    for run in _HOST_RUN.findall(text):
        if "." not in run:
            continue
        labels = run.split(".")
        start = 0
        for end in range(len(labels) + 1):
            # An empty label, or one with "_" (a word character, so never at a name's word
            # boundary), ends a stretch.
            if end < len(labels) and labels[end] and "_" not in labels[end]:
                continue
            yield from _longest_name(labels[start:end])
            start = end + 1


def _longest_name(labels: list[str]) -> Iterator[str]:
    # A name starts at a word boundary: never with the dashes that may begin a run.
    while labels and not labels[0].lstrip("-"):
        labels = labels[1:]
    if labels:
        labels = [labels[0].lstrip("-"), *labels[1:]]
    for last in range(len(labels) - 1, 0, -1):
        top = _TLD.match(labels[last])
        if top:
            yield ".".join([*labels[:last], top.group()])
            return


def bound_comments(value: str, max_depth: int) -> tuple[str, bool]:
    """``value`` without its ( ) comments when they nest deeper than ``max_depth``, and
    whether they did. One pass: quoted strings and backslash escapes are honoured as the
    address parser honours them, and an unclosed comment runs to the end."""
    if value.count("(") <= max_depth:
        return value, False
    depth = deepest = 0
    quoted = escaped = False
    kept: list[str] = []
    for char in value:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"' and not depth:
            quoted = not quoted
        elif char == "(" and not quoted:
            depth += 1
            deepest = max(deepest, depth)
            continue
        elif char == ")" and depth:
            depth -= 1
            continue
        if not depth:
            kept.append(char)
    if deepest <= max_depth:
        return value, False
    return "".join(kept), True


def url_tokens(urls: Iterable[str]) -> Iterator[str]:
    """``url:host:``, ``url:domain:`` (last two labels) and ``url:path:`` tokens."""
    for url in urls:
        rest = re.sub(r"(?i)^[a-z]+://", "", url.strip())
        host, _, path = rest.partition("/")
        host = host.rsplit("@", 1)[-1].split(":", 1)[0].lower().strip(".")
        if not host:
            continue
        yield f"url:host:{host}"
        labels = host.split(".")
        if len(labels) > 2:
            yield f"url:domain:{'.'.join(labels[-2:])}"
        for piece in re.split(r"[/?&=#.]+", path.lower()):
            if 2 <= len(piece) <= 30:
                yield f"url:path:{piece}"


def mime_tokens(parts: Iterable[Part]) -> Iterator[str]:
    """The MIME structure: content types, charsets, attachment file extensions."""
    for part in (p.fields for p in parts):
        yield f"mime:type:{part.get_content_type()}"
        charset = part.get_param("charset")
        if isinstance(charset, str) and charset:
            yield f"mime:charset:{charset.lower().strip()[:30]}"
        filename = part.get_param("filename", header="content-disposition") or part.get_param(
            "name"
        )
        if isinstance(filename, str) and "." in filename:
            yield f"mime:ext:{filename.rsplit('.', 1)[1].lower()[:10]}"
        encoding = field_value(part, "content-transfer-encoding")
        if encoding:
            yield f"mime:encoding:{str(encoding).lower().strip()[:20]}"
