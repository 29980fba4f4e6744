"""Console forms read as they arrive: fields decoded as parse_qs decodes them, and a field
over its cap refused at the chunk that crosses it, on a page that does not repeat it."""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode

import pytest

from app.api.console.forms import FormReader
from app.errors import MessageTooLarge
from tests.console.conftest import MakeConsole

BODIES = [
    b"raw=Subject%3A+x%0A%0Ahello+\xff&action=classify&csrf=abc",
    b"a=1&a=2&b=&c&&d=x%zz%41=%",
    urlencode({"raw": "caf\u00e9 & co = 100%", "upload_b64": "QUJD+/=="}).encode(),
]


@pytest.mark.parametrize("body", BODIES)
def test_fields_are_read_as_parse_qs_reads_them_however_the_body_is_cut(body: bytes) -> None:
    text = body.decode("utf-8", "replace")
    expected = {k: v[0] for k, v in parse_qs(text, keep_blank_values=True).items()}
    for cut in range(len(body) + 1):
        reader = FormReader({}, 1000)
        reader.feed(body[:cut])
        reader.feed(body[cut:])
        assert reader.finish() == expected, cut


def test_a_field_over_its_cap_is_refused_at_the_chunk_that_crosses_it() -> None:
    reader = FormReader({"raw": 100}, 10)
    reader.feed(b"csrf=0123456789&raw=")
    reader.feed(b"%41" * 100)  # 300 bytes that decode to 100: at the cap, not over it
    with pytest.raises(MessageTooLarge, match="'raw'"):
        reader.feed(b"b")
    with pytest.raises(MessageTooLarge, match="'csrf'"):
        FormReader({"raw": 100}, 10).feed(b"csrf=" + b"x" * 11)
    with pytest.raises(MessageTooLarge, match="name"):
        FormReader({}, 10).feed(b"n" * 100)


def test_an_oversized_scan_field_gets_a_page_that_does_not_repeat_it(
    make_console: MakeConsole,
) -> None:
    console = make_console(server={"max_message_bytes": 4096})
    console.login()
    field = "zq" * 3000  # 6,000 bytes: past the message cap, well within the form's
    for name in ("raw", "subject"):
        reply = console.client.post(
            "/ui/scan", data={name: field, "action": "classify", "csrf": console.csrf("/ui/scan")}
        )
        assert reply.status_code == 413
        assert reply.headers["content-type"].startswith("text/html")
        assert "message_too_large" in reply.text and name in reply.text
        assert "zqzq" not in reply.text
