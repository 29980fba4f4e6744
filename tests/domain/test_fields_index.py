"""The header fields of a parsed part answer as the stdlib's compat32 ``Message`` does.

``read_fields`` builds a ``Message`` subclass that looks fields up in an index and parses a
field's parameters once. Every answer is checked against a plain compat32 ``Message`` parsed
from the same header block, before and after each way a message's fields can be changed.
"""

from __future__ import annotations

from email import policy
from email.header import Header
from email.message import Message
from email.parser import Parser
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.message import read_fields

_PLAIN = Parser(Message, policy=policy.compat32)
NAMES = ("Content-Type", "Content-Disposition", "Received", "Subject", "X-Tag", "From")
PARAMS = ("charset", "name", "filename", "boundary", "format", "missing")

values = st.one_of(
    st.sampled_from(
        [
            'text/plain; charset="UTF-8"; format=flowed',
            "multipart/mixed; boundary=----=_Part_1",
            "text/html; charset=iso-8859-1; name=x.htm",
            "attachment; filename*=utf-8''%E2%82%AC.pdf",
            'inline; filename*0="a"; filename*1="b.txt"',
            "text/plain; charset",
            'text/plain;; charset="unclosed',
            "from mx.example by mail.example; Mon, 1 Jan 2024 10:00:00 +0000",
            "=?utf-8?q?caf=C3=A9?=",
            "caf\udcc3\udca9",
            "",
        ]
    ),
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
)
fields = st.lists(
    st.tuples(st.sampled_from(NAMES), st.sampled_from(("lower", "upper", "keep")), values),
    max_size=8,
)
# A change to a message's fields and its arguments, applied to both messages alike.
changes = st.lists(
    st.one_of(
        st.tuples(st.just("set"), st.sampled_from(NAMES), values),
        st.tuples(st.just("delete"), st.sampled_from(NAMES), st.just("")),
        st.tuples(st.just("replace"), st.sampled_from(NAMES), values),
        st.tuples(st.just("add"), st.sampled_from(NAMES), values),
        st.tuples(st.just("boundary"), st.just("Content-Type"), st.just("b-2")),
        st.tuples(st.just("param"), st.sampled_from(PARAMS), st.just("v")),
        st.tuples(st.just("unparam"), st.sampled_from(PARAMS), st.just("")),
        st.tuples(st.just("type"), st.just("Content-Type"), st.just("text/html")),
        st.tuples(st.just("raw"), st.sampled_from(NAMES), values),
    ),
    max_size=6,
)


def _cased(name: str, case: str) -> str:
    return name.lower() if case == "lower" else name.upper() if case == "upper" else name


def _shown(value: Any) -> Any:
    """A value as compared: a Header by its type and text (each lookup makes a new one)."""
    if isinstance(value, Header):
        return ("Header", str(value))
    if isinstance(value, list):
        return [_shown(item) for item in value]
    return value


def _called(call: Any, *args: Any, **kwargs: Any) -> Any:
    """What ``call(*args, **kwargs)`` returns, or the type of what it raises."""
    try:
        return _shown(call(*args, **kwargs))
    except Exception as error:
        return type(error)


def _answers(message: Message) -> list[Any]:
    """Everything the tokenizer and the MIME walk ask of a part's fields, and more."""
    answers: list[Any] = [_called(message.items), _called(message.keys)]
    for name in NAMES:
        for asked in (name, name.lower(), name.upper()):
            answers.append(_called(message.get, asked))
            answers.append(_called(message.get, asked, "absent"))
            answers.append(_called(message.__getitem__, asked))
            answers.append(_called(message.get_all, asked))
            answers.append(_called(message.get_all, asked, []))
            answers.append(asked in message)
    for header in ("content-type", "Content-Disposition", "X-Tag"):
        answers.append(_called(message.get_params, header=header))
        answers.append(_called(message.get_params, header=header, unquote=False))
        for param in PARAMS:
            answers.append(_called(message.get_param, param, header=header))
            answers.append(_called(message.get_param, param, "none", header, False))
    answers.append(_called(message.get_content_type))
    answers.append(_called(message.get_content_charset))
    answers.append(_called(message.get_boundary))
    answers.append(_called(message.get_filename))
    return answers


def _change(message: Message, change: tuple[str, str, str]) -> Any:
    """Apply one change to ``message``; what it returned, or the type of what it raised."""
    kind, name, value = change
    calls = {
        "set": (message.__setitem__, name, value),
        "delete": (message.__delitem__, name),
        "replace": (message.replace_header, name, value),
        "add": (message.add_header, name, value),
        "boundary": (message.set_boundary, value),
        "param": (message.set_param, name, value),
        "unparam": (message.del_param, name),
        "type": (message.set_type, value),
        "raw": (message.set_raw, name, value),
    }
    return _called(*calls[kind])


@settings(max_examples=300, deadline=None)
@given(block=fields, changed=changes)
def test_fields_answer_as_a_plain_message_before_and_after_changes(
    block: list[tuple[str, str, str]], changed: list[tuple[str, str, str]]
) -> None:
    head = "".join(f"{_cased(name, case)}: {value}\n" for name, case, value in block)
    ours = read_fields(head + "\nbody\n")
    plain = _PLAIN.parsestr(head + "\n\n", headersonly=True)
    assert _answers(ours) == _answers(plain)
    for change in changed:
        assert _change(ours, change) == _change(plain, change)
        assert _answers(ours) == _answers(plain)


def test_parameters_are_a_new_list_each_time() -> None:
    """A caller that changes the list it was given changes nothing held."""
    ours = read_fields('Content-Type: text/plain; charset="utf-8"\n\nbody\n')
    ours.get_params(unquote=False).clear()
    assert ours.get_param("charset") == "utf-8"
    assert ours.get_content_charset() == "utf-8"
