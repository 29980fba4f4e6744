"""What ``analyse`` keeps of a message's Message-ID, sender and subject for the history."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from app.service.reading import _printable, _shown

# ASCII, controls and DEL among it, and beyond: Latin-1, a no-break space, a line separator,
# a zero-width space, an unpaired surrogate (8-bit header bytes read as surrogate escapes).
texts = st.text(
    st.characters(min_codepoint=0, max_codepoint=0x7F)
    | st.sampled_from(["é", "\xa0", "\u2028", "\u200b", "\udcc3", "\x85", "\x9f", "ü"])
)


@given(texts)
@example("<a b@example.com>\t\x7f")
@example("caf\udcc3\udca9 <x@y>")
@example("<caf\xe9@example.com>")
def test_a_message_id_keeps_its_printable_ascii_but_space(text: str) -> None:
    assert _printable(text) == "".join(c for c in text if " " < c < "\x7f")


@given(texts)
@example("Re:\tyour  order\r\n")
@example("  ")
@example("Gr\xfc\xdfe\xa0aus\u2028Berlin")
def test_a_shown_value_has_controls_as_spaces_and_runs_of_spaces_as_one(text: str) -> None:
    expected = " ".join("".join(c if c.isprintable() else " " for c in text).split()) or None
    assert _shown(text) == expected
