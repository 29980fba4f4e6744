"""The filter's command line: the quick reader agrees with argparse wherever it answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.adapters.pipe.main import Options, UsageError, _plain_options, parser, read_options

WORDS = st.sampled_from(
    ["-e", "--exit-zero", "-u", "--user", "--config", "--user=bob", "--config=/etc/x.toml",
     "--user=", "alice", "-", "--", "-x", "--exit", "--us", "-uBob", "-5", "", "a=b", "-h"]
)  # fmt: skip


def _argparse(argv: list[str]) -> Options | None:
    try:
        args = parser().parse_args(argv)
    except (UsageError, SystemExit):
        return None
    return Options(args.exit_zero, args.user, args.config)


@given(st.lists(WORDS, max_size=5))
def test_the_quick_reader_reads_as_argparse_does(argv: list[str]) -> None:
    quick = _plain_options(argv)
    if quick is not None:
        assert quick == _argparse(argv)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], Options()),
        (["-e"], Options(exit_zero=True)),
        (["-u", "bob@example.org"], Options(user="bob@example.org")),
        (["--user=bob", "--exit-zero"], Options(True, "bob")),
        (["--config", "/s.toml", "-u", "a", "-u", "b"], Options(False, "b", Path("/s.toml"))),
    ],
)  # fmt: skip
def test_the_usual_command_lines_need_no_argparse(argv: list[str], expected: Options) -> None:
    assert _plain_options(argv) == expected
    assert read_options(argv) == expected


@pytest.mark.parametrize("argv", [["--exit"], ["-uBob"], ["-u", "-5"], ["-e", "--us", "bob"]])
def test_the_rest_goes_to_argparse(argv: list[str]) -> None:
    assert _plain_options(argv) is None
    read = read_options(argv)
    assert read == _argparse(argv)
    assert read != Options()


@pytest.mark.parametrize("argv", [["-u"], ["--exit-zero=1"], ["extra"], ["--user", "-x"]])
def test_a_bad_command_line_is_a_usage_error(argv: list[str]) -> None:
    with pytest.raises(UsageError):
        read_options(argv)
