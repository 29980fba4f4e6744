"""The three outcomes of a classification, alone in a module: the pipe filter's client
checks the service's answer against them without importing the decision rules (their
dataclasses cost a filter process 12 ms of start-up; docs/integration/pipe.md)."""

from __future__ import annotations

from enum import StrEnum


class Verdict(StrEnum):
    """The three outcomes of a classification."""

    HAM = "ham"
    UNSURE = "unsure"
    SPAM = "spam"
