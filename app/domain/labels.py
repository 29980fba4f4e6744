"""The labels the model ships with."""

from enum import StrEnum


class Label(StrEnum):
    """A class a message can be learned as."""

    HAM = "ham"
    SPAM = "spam"


LABELS: tuple[str, ...] = tuple(label.value for label in Label)


def parse_label(value: str) -> Label:
    """The Label for ``value`` (case-insensitive); ValueError for anything else."""
    try:
        return Label(value.strip().lower())
    except ValueError:
        raise ValueError(f"unknown label {value!r}; expected one of {', '.join(LABELS)}") from None
