"""Small hand-written messages for the HTTP tests."""

from __future__ import annotations


def message(subject: str, body: str, sender: str = "friend@example.org", extra: str = "") -> bytes:
    """A minimal plain-text RFC 822 message."""
    return (
        f"From: {sender}\nTo: me@example.net\nSubject: {subject}\n{extra}"
        f"Content-Type: text/plain; charset=utf-8\n\n{body}\n"
    ).encode()


HAM = [
    message("Lunch on Friday?", "Shall we meet at the station cafe at noon? Bring the notes."),
    message("Minutes of the meeting", "Attached are the notes from the project meeting today."),
    message("Re: garden plans", "The tomatoes are doing well; see you at the allotment on Sunday."),
]

SPAM = [
    message(
        "WIN A FREE PRIZE NOW", "Click here to claim your free prize money!!! Act now.", "x@win.biz"
    ),
    message(
        "Cheap pills online", "Buy cheap pills online, no prescription, free shipping.", "p@rx.biz"
    ),
    message("You are a WINNER", "Claim your free casino bonus money now, click here!", "c@win.biz"),
]

SPAMMY = message("Free money prize", "Click here now to claim free prize money!", "z@win.biz")
HAMMY = message("Meeting notes", "See you at the station on Friday; I will bring the notes.")

TRUNCATED_MULTIPART = (
    b"From: a@example.org\nSubject: parts\nMIME-Version: 1.0\n"
    b'Content-Type: multipart/alternative; boundary="XYZ"\n\n'
    b"--XYZ\nContent-Type: text/plain\n\nfirst part, then the message stops mid-"
)

BAD_BASE64 = (
    b"From: a@example.org\nSubject: b64\nMIME-Version: 1.0\n"
    b"Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n"
    b"SGVsbG8gd29y!!!bGQ=*not base64 at all==\n"
)

UNKNOWN_CHARSET = (
    b"From: a@example.org\nSubject: =?x-nonsense?q?caf=E9?=\n"
    b"Content-Type: text/plain; charset=x-nonsense\n\ncaf\xe9 cr\xe8me\n"
)

# A NUL byte in the raw bytes, and one that only appears once RFC 2231 %-decoding has run.
NUL_IN_CHARSET = (
    b"From: a@example.org\nSubject: nul\n"
    b'Content-Type: text/plain; charset="utf\x00-8"\n\nhello there\n'
)
NUL_IN_CHARSET_2231 = (
    b"From: a@example.org\nSubject: nul\n"
    b"Content-Type: text/plain; charset*=''utf%00-8\n\nhello there\n"
)
