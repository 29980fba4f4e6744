"""Tokenizer: golden token files for the hand-written messages in tests/data, plus rules that
must hold however the tokenizer is tuned.

Golden files: ``tests/data/<name>.tokens`` holds the sorted ``token<TAB>count`` lines of
``tokenize(parse(raw, 512 KiB), TokenizerOptions())`` for ``tests/data/<name>.eml``. After a
deliberate tokenizer change, regenerate them and review the diff:

    SPAMFILTER_UPDATE_GOLDEN=1 pytest tests/domain/test_tokenizer.py

With that variable set the golden test rewrites the files instead of comparing.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from app.domain import tokenizer
from app.domain.message import parse
from app.domain.tokenizer import TokenizerOptions, token_kind, tokenize
from app.domain.tokenizer import words as split_words
from tests.domain.builders import DATA_DIR, SCAN_LIMIT, eml_files, message, tokens_of

UPDATE_GOLDEN = os.environ.get("SPAMFILTER_UPDATE_GOLDEN") == "1"


def read(name: str) -> bytes:
    return (DATA_DIR / name).read_bytes()


def render(tokens: Counter[str]) -> str:
    return "".join(f"{token}\t{count}\n" for token, count in sorted(tokens.items()))


# ---- golden files ----------------------------------------------------------------------------


def test_there_are_enough_hand_written_messages() -> None:
    assert len(eml_files()) >= 8


@pytest.mark.parametrize("path", eml_files(), ids=lambda p: p.stem)
def test_golden_tokens(path: Path) -> None:
    golden = path.with_suffix(".tokens")
    actual = render(tokens_of(path.read_bytes()))
    if UPDATE_GOLDEN:
        golden.write_text(actual, encoding="utf-8", newline="\n")
        return
    assert golden.exists(), f"missing {golden.name}: run with SPAMFILTER_UPDATE_GOLDEN=1"
    assert actual == golden.read_text(encoding="utf-8")


def test_every_golden_file_has_its_message() -> None:
    orphans = [p.name for p in DATA_DIR.glob("*.tokens") if not p.with_suffix(".eml").exists()]
    assert orphans == []


# ---- rules that hold whatever the tuning -----------------------------------------------------


@pytest.fixture(scope="module")
def html_tokens() -> Counter[str]:
    return tokens_of(read("multipart_html.eml"))


@pytest.mark.parametrize(
    "hidden",
    [
        # tag and attribute names
        "doctype",
        "div",
        "table",
        "td",
        "href",
        "src",
        "bgcolor",
        "img",
        # script, style, comment and head text
        "trackerscriptword",
        "beaconvalue",
        "javascript",
        "stylesheetfont",
        "bannerclass",
        "ff0000",
        "hiddencommentword",
        "pagetitleword",
        # entity names
        "amp",
        "nbsp",
        "eacute",
    ],
)
def test_html_markup_never_becomes_tokens(html_tokens: Counter[str], hidden: str) -> None:
    assert not [t for t in html_tokens if hidden in re.split(r"[:/.]", t)]


def test_html_text_and_entities_are_decoded(html_tokens: Counter[str]) -> None:
    assert html_tokens["midnight"] == 1  # only in a table cell of the HTML part
    assert "été" in html_tokens  # &eacute;t&eacute;
    assert not [t for t in html_tokens if "<" in t or ">" in t or "&" in t]


def test_html_links_and_images_become_url_tokens(html_tokens: Counter[str]) -> None:
    assert "url:host:claim.mega-deals.example.biz" in html_tokens
    assert "url:host:images.cdn-pixels.example.net" in html_tokens  # <img src>


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("Cheap v\u200biag\u00adra, fr\ufeffee", "text/plain; charset=utf-8"),
        ("<p>Cheap v&#8203;iag&shy;ra, fr&#x2060;ee</p>", "text/html; charset=utf-8"),
    ],
    ids=["plain", "html-entities"],
)
def test_invisible_characters_do_not_split_words(body: str, content_type: str) -> None:
    tokens = tokens_of(message(body, content_type=content_type, subject="fr\u200bee v\u200ciagra"))
    assert {"viagra", "free", "subject:free", "subject:viagra"} <= set(tokens)
    assert not {"iag", "ra", "fr", "ee", "subject:fr", "subject:iagra"} & set(tokens)


def test_html_inline_elements_and_comments_do_not_split_words() -> None:
    body = (
        "<p>Cheap <b>V</b>iag<font color=red>r</font>a, fr<!-- x -->ee"
        " re<a href='http://s.example/r'>mo</a>ve</p>"
        "<p>O<font size=3></font><font size=3>ver d<a href='http://s.example/o'></a>eals"
        " to<?pi?>day</p>"
    )
    tokens = tokens_of(message(body, content_type="text/html", subject="offer"))
    assert {"cheap", "viagra", "free", "remove", "over", "deals", "today"} <= set(tokens)
    assert "url:host:s.example" in tokens
    assert not {"iag", "ra", "fr", "ee", "re", "mo", "ve", "ver", "eals", "day"} & set(tokens)


def test_html_inline_tag_after_a_tag_left_unclosed_ends_that_tag() -> None:
    # "<font face=x <b>" : a browser ends the font tag at the b tag's ">" and shows the text.
    body = '<p><font face="Times" <b>In case you received this, ignore it</b></font></p>'
    tokens = tokens_of(message(body, content_type="text/html", subject="notice"))
    assert {"case", "received", "ignore"} <= set(tokens)


def test_html_deeply_nested_inline_tags_give_their_text() -> None:
    body = (
        "<span>" * 3000 + "deep<b>ly</b> nested" + "</span>" * 3000
        + "<p>" + "<font>tail" * 3000
        + "<a><table><tr><td>" * 300 + "cell"
    )  # fmt: skip
    tokens = tokens_of(message(body, content_type="text/html", subject="nesting"))
    # 3,000 unclosed font tags around "tail" read as one 12,000-letter word, as drawn.
    assert {"deeply", "nested", "skip:t:12000", "cell"} <= set(tokens)
    assert not [t for t in tokens if t.startswith(("span", "font", "tail"))]


@pytest.mark.parametrize(
    "body",
    [
        "<p>first</p><p>second</p>",
        "<div>first</div>second",
        "first<br>second",
        "<table><tr><td>first</td><td>second</td></tr></table>",
        "<ul><li>first</li><li>second</li></ul>",
    ],
)
def test_html_block_elements_and_line_breaks_separate_words(body: str) -> None:
    tokens = tokens_of(message(body, content_type="text/html", subject="layout"))
    assert {"first", "second"} <= set(tokens)
    assert "firstsecond" not in tokens


def test_subject_words_carry_the_subject_prefix() -> None:
    tokens = tokens_of(read("plain_text.eml"))
    assert "subject:tomatoes" in tokens
    assert tokens["tomatoes"] == 3  # the body's own occurrences, counted apart


def test_encoded_subject_is_decoded() -> None:
    tokens = tokens_of(read("rfc2047_subject.eml"))
    assert {"subject:reserva", "subject:confirmada", "subject:málaga"} <= set(tokens)
    assert "from:name:josé" in tokens


def test_sender_domain_token() -> None:
    tokens = tokens_of(read("plain_text.eml"))
    assert "from:domain:allotments.example.org" in tokens


def test_received_lines_give_relay_tokens() -> None:
    tokens = tokens_of(read("plain_text.eml"))
    assert "received:host:relay.allotments.example.org" in tokens
    assert any(t.startswith("received:ip:198.51.100") for t in tokens)
    assert any(t.startswith("received:ip:203.0.113") for t in tokens)


def test_a_relay_address_gives_its_24_16_and_8_networks() -> None:
    raw = (
        b"Received: from mail.example.net (mail.example.net [192.0.2.77])\r\n"
        b"\tby mx.example.org with ESMTP id 1; Mon, 3 Jun 2024 10:00:00 +0000\r\n"
        b"Subject: hi\r\n\r\nbody\r\n"
    )
    relay = {t for t in tokens_of(raw) if t.startswith("received:ip:")}
    assert relay == {"received:ip:192.0.2", "received:ip:192.0", "received:ip:192"}


def test_an_ipv6_relay_gives_its_64_48_and_32_networks() -> None:
    raw = (
        b"Received: from mail.example.net (mail.example.net [IPv6:2001:db8:4864:20::62e])\r\n"
        b"\tby mx.example.org with ESMTP id 1; Mon, 3 Jun 2024 10:00:00 +0000\r\n"
        b"Received: from [2001:0DB8:00AA::1] by mail.example.net; 3 Jun 2024 09:59:58 +0000\r\n"
        b"Subject: hi\r\n\r\nbody\r\n"
    )
    relay = {t for t in tokens_of(raw) if t.startswith("received:ip")}
    assert relay == {
        "received:ip6:2001:db8:4864:20",
        "received:ip6:2001:db8:4864",
        "received:ip6:2001:db8",
        "received:ip6:2001:db8:aa:0",
        "received:ip6:2001:db8:aa",
    }


IPV4_NETWORKS = {"received:ip:192.0.2", "received:ip:192.0", "received:ip:192"}


@pytest.mark.parametrize(
    ("received", "expected"),
    [
        ("from a (a.example.net [192.0.2.1]) by b; Mon, 3 Jun 2024 10:00:00 +0000", IPV4_NETWORKS),
        ("from a ([::ffff:192.0.2.1]) by b; Mon, 3 Jun 2024 10:00:00 +0000", IPV4_NETWORKS),
        ("from a ([1:51144:51751]) by b id 12:34:56:78; Mon, 3 Jun 2024 10:00:00 +0000", set()),
    ],
    ids=["ipv4-and-a-time", "ipv4-mapped", "not-addresses"],
)
def test_times_and_non_addresses_give_no_ipv6_tokens(received: str, expected: set[str]) -> None:
    raw = f"Received: {received}\r\nSubject: hi\r\n\r\nbody\r\n".encode()
    assert {t for t in tokens_of(raw) if t.startswith("received:ip")} == expected


def test_base64_body_is_decoded() -> None:
    raw = read("base64_text.eml")
    assert b"xylophone" not in raw
    assert tokens_of(raw)["xylophone"] == 1


def test_quoted_printable_body_is_decoded() -> None:
    raw = read("quoted_printable.eml")
    tokens = tokens_of(raw)
    # "séance" is split by a soft line break and "réconciliation" has an encoded é.
    assert b"s=C3=A9anc=\ne" in raw
    assert {"séance", "réconciliation", "café"} <= set(tokens)
    assert not [t for t in tokens if "=c3" in t or "=a9" in t]


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("iso_8859_1.eml", {"grüße", "münchen", "straße"}),
        ("koi8_r.eml", {"привет", "поезд", "subject:расписание"}),
        ("gb2312.eml", {"bookshop", "subject:新书", "subject:通知", "您好", "到货"}),
        ("unknown_charset.eml", {"café", "naïve", "marmalade"}),
    ],
)
def test_declared_and_unknown_charsets_are_decoded(name: str, words: set[str]) -> None:
    tokens = tokens_of(read(name))
    assert words <= set(tokens)
    assert "\ufffd" not in "".join(tokens)


def test_attachment_gives_mime_tokens_and_no_body_words() -> None:
    tokens = tokens_of(read("attachment.eml"))
    assert "mime:ext:pdf" in tokens
    assert "mime:type:application/pdf" in tokens
    assert "invoice" in tokens  # the text part
    assert "catalog" not in tokens  # inside the PDF


def test_a_very_long_word_becomes_a_skip_token() -> None:
    word = "q" * 1000
    tokens = tokens_of(message(f"short {word} words\n", subject="long"))
    assert word not in tokens
    skips = [t for t in tokens if t.startswith("skip:")]
    assert len(skips) == 1
    assert len(skips[0]) < 20
    assert {"short", "words"} <= set(tokens)


@pytest.mark.parametrize("limit", [1, 5, 20, 100])
def test_max_tokens_caps_the_total(limit: int) -> None:
    raw = read("plain_text.eml")
    tokens = tokens_of(raw, TokenizerOptions(max_tokens=limit))
    assert sum(tokens.values()) == min(limit, sum(tokens_of(raw).values()))


def test_max_tokens_keeps_headers_before_the_body() -> None:
    raw = message(" ".join(["body"] * 500), subject="cheap watches")
    tokens = tokens_of(raw, TokenizerOptions(max_tokens=10))
    assert {"subject:cheap", "subject:watches"} <= set(tokens)
    assert sum(tokens.values()) == 10


def test_max_tokens_counts_words_and_links_in_the_order_they_are_written() -> None:
    # A digest of links: under the cap, the opening words still count.
    links = "".join(f"http://site{i}.example/page/{i}\n" for i in range(500))
    raw = message("updated weblogs today\n" + links + "closing remarks\n", subject="digest")
    tokens = tokens_of(raw, TokenizerOptions(max_tokens=100))
    assert {"updated", "weblogs", "today", "url:host:site0.example"} <= set(tokens)
    assert "closing" not in tokens
    assert sum(tokens.values()) == 100


def test_max_tokens_caps_the_total_of_a_truncated_message() -> None:
    raw = message("word " * 5000, subject="big")
    parsed = parse(raw, scan_limit=2048)
    assert parsed.truncated
    tokens = tokenize(parsed, TokenizerOptions(max_tokens=50))
    assert sum(tokens.values()) <= 50
    assert "meta:truncated" in tokens


@pytest.mark.parametrize(
    "raw",
    [
        message("visit http://" + "a" * 5000 + ".com/x today\n", subject="link"),
        message("hello\n", from_="x@" + "b" * 5000 + ".example"),
        message("hello\n", received="from " + "c" * 5000 + ".example by mx.example.org"),
    ],
    ids=["url-host", "from-domain", "received-host"],
)
def test_every_token_is_bounded_in_length(raw: bytes) -> None:
    # DNS names stop at 253 characters; allow an address local part and a namespace.
    tokens = tokens_of(raw)
    assert max(len(t) for t in tokens) <= 400


def test_raw_utf8_subject_keeps_its_words() -> None:
    raw = "Subject: Grüße aus Köln\nFrom: Jürgen <j@example.de>\n\nhallo\n".encode()
    tokens = tokens_of(raw)
    assert {"subject:grüße", "subject:köln", "from:name:jürgen"} <= set(tokens)


@pytest.mark.parametrize("path", eml_files(), ids=lambda p: p.stem)
def test_tokenizing_is_deterministic(path: Path) -> None:
    raw = path.read_bytes()
    assert tokens_of(raw) == tokens_of(raw)
    assert list(tokens_of(raw).items()) == list(tokens_of(raw).items())


@pytest.mark.parametrize("path", eml_files(), ids=lambda p: p.stem)
def test_crlf_and_lf_give_the_same_tokens_and_digest(path: Path) -> None:
    lf = path.read_bytes()
    assert b"\r" not in lf
    crlf = lf.replace(b"\n", b"\r\n")
    assert tokens_of(crlf) == tokens_of(lf)
    assert parse(crlf, SCAN_LIMIT).digest == parse(lf, SCAN_LIMIT).digest


@pytest.mark.parametrize("path", eml_files(), ids=lambda p: p.stem)
def test_mbox_from_line_changes_neither_digest_nor_tokens(path: Path) -> None:
    raw = path.read_bytes()
    mbox = b"From sender@example.org Tue May 14 08:12:44 2024\n" + raw
    assert parse(mbox, SCAN_LIMIT).digest == parse(raw, SCAN_LIMIT).digest
    assert tokens_of(mbox) == tokens_of(raw)


def test_min_token_length_drops_short_words() -> None:
    tokens = tokens_of(message("a an ant ants\n", subject="x"))
    assert "a" not in tokens
    assert {"an", "ant", "ants"} <= set(tokens)
    longer = tokens_of(
        message("a an ant ants\n", subject="x"), TokenizerOptions(min_token_length=4)
    )
    assert "ant" not in longer
    assert "ants" in longer


def test_every_token_is_a_body_word_or_a_namespaced_field() -> None:
    tokens = tokenize(parse(read("multipart_html.eml"), SCAN_LIMIT), TokenizerOptions())
    kinds = {token: token_kind(token) for token in tokens}
    assert set(kinds.values()) == {"word", "field"}
    for token, kind in kinds.items():
        assert (kind == "field") == (":" in token), token
    assert token_kind("viagra") == "word"
    assert token_kind("subject:viagra") == "field"
    assert token_kind("skip:x:50") == "field"


def test_a_url_in_the_text_counts_as_url_tokens_not_as_body_words() -> None:
    raw = message(
        "Unsubscribe at http://lists.example.org/mailman/listinfo/talk today\n", subject="hi"
    )
    tokens = tokens_of(raw)
    assert {"url:host:lists.example.org", "url:path:mailman", "url:path:listinfo"} <= set(tokens)
    assert {"unsubscribe", "at", "today"} <= set(tokens)
    assert not {"http", "lists.example.org", "mailman", "listinfo", "talk"} & set(tokens)


def test_cjk_text_becomes_overlapping_character_pairs() -> None:
    text = "本周新书已经到货，您好！"
    assert list(split_words(text, TokenizerOptions())) == [
        "本周",
        "周新",
        "新书",
        "书已",
        "已经",
        "经到",
        "到货",
        "您好",
    ]


def test_cjk_pairs_sit_beside_the_latin_words_of_the_same_text() -> None:
    # A lone character ("中") is dropped like a one-letter word: shorter than min_token_length.
    tokens = list(
        split_words("Order 日本語のテスト now, 한국어 단어 and 中 alone", TokenizerOptions())
    )
    assert tokens == [
        "日本",
        "本語",
        "語の",
        "のテ",
        "テス",
        "スト",
        "한국",
        "국어",
        "단어",
        "order",
        "now",
        "and",
        "alone",
    ]
    assert {token_kind(token) for token in tokens} == {"word"}


def test_cjk_subject_pairs_keep_the_subject_prefix() -> None:
    assert list(split_words("免费发票", TokenizerOptions(), "subject:")) == [
        "subject:免费",
        "subject:费发",
        "subject:发票",
    ]


def test_a_long_cjk_run_is_never_one_skip_token() -> None:
    run = "这是一个很长的句子没有任何空格" * 5
    tokens = list(split_words(run, TokenizerOptions()))
    assert len(tokens) == len(run) - 1
    assert not [t for t in tokens if "skip:" in t]


def test_cjk_characters_obey_the_length_limits() -> None:
    assert list(split_words("中 文字", TokenizerOptions(min_token_length=1))) == ["中", "文字"]
    assert list(split_words("中 文字", TokenizerOptions(min_token_length=3))) == []


@given(
    st.text(
        alphabet=st.sampled_from([*"ab1Z_'.-$€£ \n\t中", "\u00e9", "\u0301", "\u00b2"]),
        max_size=60,
    )
)
def test_the_longer_words_pattern_finds_the_words_two_characters_long(text: str) -> None:
    """``words`` finds words of two characters or more with a pattern of its own: the same
    matches, in the same places, as the word pattern's matches of that length."""
    assert tokenizer._LONGER_WORD.findall(text) == [
        word for word in tokenizer._WORD.findall(text) if len(word) >= 2
    ]


def test_flags_and_folded_tokens_add_to_the_same_counts() -> None:
    """A message's counts come straight from its tokens when there is no flag to add and no
    token to fold; otherwise each flag and each folded token adds to what is there."""
    plain = tokenize(
        parse(message("words words here\n", subject="hi"), SCAN_LIMIT), TokenizerOptions()
    )
    assert plain == Counter({"subject:hi": 1, "mime:type:text/plain": 1, "words": 2, "here": 1})
    # Two hosts too long to keep, of one length: one folded token, counted twice.
    hosts = ["a" * 90 + ".example", "b" * 90 + ".example"]
    raw = message("words words here\n", subject="x", from_=f"x@{hosts[0]}, y@{hosts[1]}")
    tokens = tokenize(parse(raw, SCAN_LIMIT), TokenizerOptions())
    assert tokens["words"] == 2 and tokens["from:domain:skip:110"] == 2
    assert not [t for t in tokens if hosts[0] in t or hosts[1] in t]
    truncated = parse(raw + b"more words\n" * 50, 64)
    assert truncated.truncated
    flagged = tokenize(truncated, TokenizerOptions())
    assert next(iter(flagged)) == "meta:truncated" and flagged["meta:truncated"] == 1


def reference_words(text: str, options: TokenizerOptions, prefix: str = "") -> list[str]:
    """``words`` as its docstring states it, every step on every text: invisible characters
    dropped, CJK runs as character pairs, then the words of what is left."""
    text = tokenizer._INVISIBLE.sub("", text)
    runs = tokenizer._CJK_RUN.findall(text)
    shortest, longest = options.min_token_length, options.max_token_length
    found = [prefix + p for p in tokenizer.cjk_bigrams(runs) if shortest <= len(p) <= longest]
    for word in tokenizer._WORD.findall(tokenizer._CJK_RUN.sub(" ", text).lower()):
        if len(word) >= shortest:
            folded = f"skip:{word[0]}:{len(word) // 10 * 10}" if len(word) > longest else word
            found.append(prefix + folded)
    return found


@given(
    st.text(
        alphabet=st.sampled_from([*"Free ab1'.-$\n\u200b\u00ad中文\u00e9Ä"]),
        max_size=50,
    ),
    st.integers(1, 3),
)
def test_words_are_the_documented_steps_for_any_text(text: str, shortest: int) -> None:
    options = TokenizerOptions(min_token_length=shortest, max_token_length=6)
    assert split_words(text, options, "p:") == reference_words(text, options, "p:")


@given(st.text(alphabet=st.sampled_from([*"0123456789abcdef:"]), min_size=2, max_size=39))
@example("2001:db8:0:0:1:0:0:1")  # eight hextets, no "::"
@example("2001:db8:0:1:0:0:1")  # seven
@example("10:00:00")  # a time of day
@example("1::")
def test_a_run_is_an_ipv6_address_exactly_when_ipaddress_says_so(run: str) -> None:
    try:
        address = ipaddress.IPv6Address(run)
    except ValueError:
        expected = []
    else:
        hextets = [group.lstrip("0") or "0" for group in address.exploded.split(":")]
        expected = [f"received:ip6:{':'.join(hextets[:n])}" for n in (4, 3, 2)]
    assert list(tokenizer.ipv6_networks(run)) == (expected if run.count(":") >= 2 else [])
