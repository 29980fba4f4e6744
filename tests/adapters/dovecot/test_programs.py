"""The programs Dovecot runs: ``spamfilter learn --label LABEL -`` through spamfilter-learn,
and the pipe filter through the spamfilter-filter wrapper.

Learning reads one message on stdin; exit status 0 learned (or already known), 1 not a
message, 2 usage, 75 database unavailable. Both wrappers take their settings from the
spamfilter.env beside them, since Dovecot gives them an almost empty environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from app.bootstrap import build_service
from app.settings.schema import Settings
from tests.adapters.dovecot.instance import FILES, FILTER, LEARNER, spamfilter_program
from tests.builders import make_message

SPAMFILTER = Path(sys.executable).with_name("spamfilter")
MESSAGE = make_message("Claim your prize", "You are the winner of our lottery.\n")
UNAVAILABLE = "sqlite:////dev/null/not-a-folder/spamfilter.db"
Run = Callable[..., subprocess.CompletedProcess[str]]


def environment(extra: dict[str, str]) -> dict[str, str]:
    """os.environ without SPAMFILTER_* settings, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPAMFILTER_")}
    return {**env, **extra}


def learned(url: str, user: str | None = None) -> dict[str, int]:
    """Learned messages per label in the database at ``url`` (``user``'s own model, or the
    site-wide one)."""
    service = build_service(Settings(_env_file=None, database_url=url), migrate=False)
    try:
        return {label: s.messages for label, s in service.stats(user).labels.items()}
    finally:
        service.close()


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A SQLite database of the test (created by the first learn)."""
    return f"sqlite:///{tmp_path / 'learn.db'}"


@pytest.fixture
def learn(tmp_path: Path, url: str) -> Run:
    """Run ``spamfilter learn --quiet --label LABEL -`` on ``url`` with ``raw`` on stdin."""

    def run(raw: bytes, label: str, database: str = url) -> subprocess.CompletedProcess[str]:
        command = [str(SPAMFILTER), "learn", "--quiet", "--label", label, "-"]
        env = environment({"SPAMFILTER_DATABASE_URL": database})
        result = subprocess.run(
            command, input=raw, capture_output=True, env=env, cwd=tmp_path, timeout=60
        )
        return subprocess.CompletedProcess(
            result.args, result.returncode, result.stdout.decode(), result.stderr.decode()
        )

    return run


def test_learn_from_stdin(learn: Run, url: str) -> None:
    first = learn(MESSAGE, "spam")
    assert (first.returncode, first.stderr) == (0, "")
    assert first.stdout.startswith("learned 1, relabelled 0, unchanged 0")
    again = learn(MESSAGE, "spam")
    assert again.returncode == 0
    assert again.stdout.startswith("learned 0, relabelled 0, unchanged 1")
    moved = learn(MESSAGE, "ham")
    assert moved.stdout.startswith("learned 0, relabelled 1, unchanged 0")
    assert learned(url) == {"ham": 1, "spam": 0}


def test_learn_exit_codes(learn: Run) -> None:
    not_mail = learn(b"\x00 not a message\n", "spam")
    assert not_mail.returncode == 1
    assert "-: invalid_message: input does not start with an RFC 822 header" in not_mail.stderr
    bad_label = learn(MESSAGE, "eggs")
    assert bad_label.returncode == 2
    assert "Invalid value for '--label'" in bad_label.stderr
    down = learn(MESSAGE, "spam", UNAVAILABLE)
    assert down.returncode == 75
    assert down.stderr.startswith("spamfilter: storage_unavailable: ")


Wrapper = Callable[..., subprocess.CompletedProcess[bytes]]


@pytest.fixture
def wrapper(tmp_path: Path) -> Wrapper:
    """The project's spamfilter-learn, installed in a folder with its spamfilter.env."""
    folder = tmp_path / "sieve-pipe"
    folder.mkdir()
    for program in (LEARNER, FILTER):
        shutil.copy(FILES / program, folder / program)

    def run(
        raw: bytes, *args: str, settings: dict[str, str] | None = None, program: str = LEARNER
    ) -> subprocess.CompletedProcess[bytes]:
        if settings is not None:
            text = "".join(f"{name}={value}\n" for name, value in settings.items())
            (folder / "spamfilter.env").write_text(text)
        # Dovecot runs it with a nearly empty environment: give it nothing of ours.
        return subprocess.run(
            [str(folder / program), *args],
            input=raw,
            capture_output=True,
            env={"PATH": "/usr/bin:/bin"},
            cwd=tmp_path,
            timeout=60,
        )

    return run


@pytest.fixture
def program(tmp_path: Path) -> str:
    """SPAMFILTER_BIN for the wrappers: ``spamfilter`` running this checkout's code."""
    return str(spamfilter_program(tmp_path / "spamfilter"))


def test_the_wrapper_learns_with_its_settings_file(
    wrapper: Wrapper, url: str, program: str
) -> None:
    settings = {"SPAMFILTER_DATABASE_URL": url, "SPAMFILTER_BIN": program}
    result = wrapper(MESSAGE, "spam", "alice", settings=settings)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert learned(url) == {"ham": 0, "spam": 1}
    assert learned(url, "alice") == {"ham": 0, "spam": 1}  # the mailbox owner's model
    assert wrapper(b"not a message\n", "ham", settings=settings).returncode == 1
    down = {"SPAMFILTER_DATABASE_URL": UNAVAILABLE, "SPAMFILTER_BIN": program}
    assert wrapper(MESSAGE, "ham", settings=down).returncode == 75


# "eggs" is a class name in form since any declared class is learned: it is refused by
# spamfilter learn (test_the_wrapper_refuses_an_undeclared_class) instead.
@pytest.mark.parametrize("args", [(), ("SPAM",), ("news-letter",), ("9lives",), ("",), ("a" * 32,)])
def test_the_wrapper_wants_a_label(wrapper: Wrapper, args: tuple[str, ...]) -> None:
    result = wrapper(MESSAGE, *args)
    assert result.returncode == 2
    assert (
        result.stderr == b"usage: spamfilter-learn CLASS [user]  (spam, ham or a declared class)\n"
    )


def test_the_wrapper_learns_a_declared_class(wrapper: Wrapper, url: str, program: str) -> None:
    settings = {
        "SPAMFILTER_DATABASE_URL": url,
        "SPAMFILTER_BIN": program,
        "SPAMFILTER_MODEL__CLASSES": "ham,spam,newsletter",
    }
    result = wrapper(MESSAGE, "newsletter", "alice", settings=settings)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    declared = Settings(_env_file=None, database_url=url, model={"classes": "ham,spam,newsletter"})
    service = build_service(declared, migrate=False)
    try:
        for user in (None, "alice"):
            by_class = {c: s.messages for c, s in service.stats(user).labels.items()}
            assert by_class == {"ham": 0, "spam": 0, "newsletter": 1}
    finally:
        service.close()


@pytest.mark.parametrize("classes", [None, "ham,spam,newsletter"])
def test_the_wrapper_refuses_an_undeclared_class(
    wrapper: Wrapper, url: str, program: str, classes: str | None
) -> None:
    settings = {"SPAMFILTER_DATABASE_URL": url, "SPAMFILTER_BIN": program}
    if classes is not None:
        settings["SPAMFILTER_MODEL__CLASSES"] = classes
    result = wrapper(MESSAGE, "eggs", "alice", settings=settings)
    assert result.returncode == 2
    assert b"eggs" in result.stderr and b"ham" in result.stderr and b"spam" in result.stderr
    if classes is not None:
        assert b"newsletter" in result.stderr


def test_the_filter_wrapper_passes_its_options_on(
    wrapper: Wrapper, url: str, tmp_path: Path
) -> None:
    build_service(Settings(_env_file=None, database_url=url)).close()  # migrated, untrained
    program = tmp_path / "filter-bin"
    program.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m app.adapters.pipe "$@"\n')
    program.chmod(0o755)
    settings = {"SPAMFILTER_DATABASE_URL": url, "SPAMFILTER_FILTER_BIN": str(program)}
    unsure = wrapper(MESSAGE, settings=settings, program=FILTER)
    assert unsure.returncode == 2
    assert unsure.stdout.startswith(b"X-Spam-Status: No, score=0.0 ")
    assert unsure.stdout.endswith(MESSAGE)
    assert wrapper(MESSAGE, "--exit-zero", settings=settings, program=FILTER).returncode == 0
    missing = {"SPAMFILTER_FILTER_BIN": str(tmp_path / "nowhere")}
    assert wrapper(MESSAGE, "--exit-zero", settings=missing, program=FILTER).returncode != 0


def test_the_wrapper_trains_the_mailbox_owners_model(
    wrapper: Wrapper, url: str, program: str
) -> None:
    settings = {"SPAMFILTER_DATABASE_URL": url, "SPAMFILTER_BIN": program}
    other = make_message("Quarterly figures", "The report is attached.\n")
    assert wrapper(other, "ham", settings=settings).returncode == 0  # no user: site only
    assert wrapper(MESSAGE, "spam", "Bob Smith", settings=settings).returncode == 64
    assert wrapper(MESSAGE, "spam", "bob@example.org", settings=settings).returncode == 0
    moved = wrapper(MESSAGE, "ham", "bob@example.org", settings=settings)
    assert (moved.returncode, moved.stderr) == (0, b"")
    assert learned(url, "bob@example.org") == {"ham": 1, "spam": 0}
    assert learned(url, "alice") == {"ham": 0, "spam": 0}
    assert learned(url) == {"ham": 2, "spam": 0}
