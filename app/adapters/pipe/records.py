"""``NamedTuple`` class syntax for the filter's records, without importing ``typing``.

Importing ``typing`` costs a filter process ~4 ms of its start-up, and the pipe filter's
client path needs nothing else of it (docs/integration/pipe.md). Type checkers see
``typing.NamedTuple`` itself (below, under ``TYPE_CHECKING``); at run time a class written

    class Daemon(NamedTuple):
        host: str
        port: int = 80

becomes ``collections.namedtuple("Daemon", ["host", "port"], defaults=[80])`` (imported by
the interpreter's own start-up already) with the class body's methods, properties,
class methods and docstring: the class ``typing.NamedTuple`` makes, fields, defaults,
equality, ``repr`` and ``_replace`` alike (tests/adapters/pipe/test_records.py holds the two
side by side).
"""

from __future__ import annotations

from collections import namedtuple

# Not typing.TYPE_CHECKING: importing typing is what this module saves. Type checkers treat
# any name TYPE_CHECKING as true.
TYPE_CHECKING = False

# What namedtuple makes itself, or what the class statement adds, never copied from the body.
_OWN = frozenset({"__module__", "__qualname__", "__annotations__", "__dict__", "__weakref__"})


class _RecordMaker(type):
    """Turns a class statement over ``NamedTuple`` into a namedtuple class."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, object]) -> type:
        if not bases:  # NamedTuple itself
            return super().__new__(mcs, name, bases, namespace)
        if bases != (NamedTuple,):
            raise TypeError("a record derives from NamedTuple alone")
        fields = list(namespace.get("__annotations__", {}))  # type: ignore[call-overload]
        defaults = [namespace[field] for field in fields if field in namespace]
        if any(field in namespace for field in fields[: len(fields) - len(defaults)]):
            raise TypeError(f"{name}: a field without a default follows one with a default")
        module = str(namespace["__module__"])
        record = namedtuple(name, fields, defaults=defaults, module=module)  # type: ignore[misc]
        for key, value in namespace.items():
            if key not in _OWN and key not in fields:
                setattr(record, key, value)
        record.__qualname__ = str(namespace.get("__qualname__", name))
        return record


if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:

    class NamedTuple(metaclass=_RecordMaker):
        """Derive a record from this as from ``typing.NamedTuple``."""
