"""What the filter needs from a classification, whoever made it: verdict and header fields."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class ExitCode(IntEnum):
    """The filter's exit status, as bogofilter's."""

    SPAM = 0
    HAM = 1
    UNSURE = 2
    ERROR = 3


@dataclass(frozen=True, slots=True)
class FilterReport:
    """A verdict (``ham``, ``unsure`` or ``spam``) and the X-Spam fields to add, in order."""

    verdict: str
    headers: list[tuple[str, str]]

    @property
    def exit_code(self) -> ExitCode:
        """The exit status for this verdict."""
        return ExitCode[self.verdict.upper()]
