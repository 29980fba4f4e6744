"""What drives the progress bars of import, export and expire: units, byte and row counts."""

from __future__ import annotations

import io
from types import SimpleNamespace

from rich.progress import Progress
from rich.text import Text

from app.cli.data import _Counted, _read
from app.cli.progress import Bar, _rate_column
from app.service.transfer_format import MAX_LINE


class Steps:
    def __init__(self) -> None:
        self.steps: list[int] = []

    def advance(self, steps: int = 1) -> None:
        self.steps.append(steps)


def test_export_counts_rows_as_they_are_written() -> None:
    out, bar = io.StringIO(), Steps()
    sink = _Counted(out, bar)  # type: ignore[arg-type]
    sink.write("token\t1\t2\n")
    sink.write("a\nb\n")
    assert out.getvalue() == "token\t1\t2\na\nb\n"
    assert sum(bar.steps) == 3


def test_import_counts_the_bytes_of_the_lines_it_reads() -> None:
    bar = Steps()
    lines = ["spamfilter-export\t1\n", "scope\tuser:dörte\n"]
    assert list(_read(io.StringIO("".join(lines)), bar)) == lines  # type: ignore[arg-type]
    assert sum(bar.steps) == len("".join(lines).encode("utf-8"))


def test_import_never_reads_more_of_a_line_than_the_format_allows() -> None:
    huge = "learned\t" + "A" * (MAX_LINE * 3) + "\n"
    first = next(_read(io.StringIO(huge), Steps()))  # type: ignore[arg-type]
    assert len(first) == MAX_LINE + 1  # the reader refuses it; the rest is never read


def test_the_rate_is_shown_in_the_bars_unit() -> None:
    for unit, speed, shown in (("B", 12345.4, "12,345 B/s"), ("rows", None, "")):
        rendered = _rate_column(unit).render(SimpleNamespace(speed=speed))  # type: ignore[arg-type]
        assert isinstance(rendered, Text) and rendered.plain == shown


def test_a_bar_without_an_end_counts_up() -> None:
    progress = Progress(disable=True)
    bar = Bar(progress, None, "export")
    bar.advance(3)
    bar.advance(4)
    assert progress.tasks[0].completed == 7 and progress.tasks[0].total is None
