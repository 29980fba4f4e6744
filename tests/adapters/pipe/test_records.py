"""The filter's records: ``records.NamedTuple`` makes the class ``typing.NamedTuple`` makes."""

from __future__ import annotations

import pickle
import typing
from typing import Any

import pytest

from app.adapters.pipe import records


def record_class(base: Any, name: str) -> Any:
    """The same class statement over ``base``."""

    class Record(base):  # type: ignore[misc]
        """A record."""

        host: str
        port: int = 80
        path: str = ""

        @property
        def where(self) -> str:
            return f"{self.host}:{self.port}{self.path}"

        @classmethod
        def local(cls) -> Any:
            return cls("127.0.0.1")

        def twice(self) -> int:
            return 2 * self.port

    Record.__name__ = Record.__qualname__ = name
    return Record


Mine = record_class(records.NamedTuple, "Mine")
Theirs = record_class(typing.NamedTuple, "Theirs")


def test_the_class_behaves_as_typing_makes_it() -> None:
    assert Mine._fields == Theirs._fields == ("host", "port", "path")
    assert Mine._field_defaults == Theirs._field_defaults == {"port": 80, "path": ""}
    assert Mine.__doc__ == Theirs.__doc__ == "A record."
    assert Mine.__module__ == Theirs.__module__ == __name__
    assert issubclass(Mine, tuple) and not isinstance(Mine, records._RecordMaker)
    for args in (("a",), ("a", 25), ("b", 1, "/x")):
        mine, theirs = Mine(*args), Theirs(*args)
        assert mine == theirs and tuple(mine) == tuple(theirs)
        assert repr(mine) == repr(theirs).replace("Theirs", "Mine")
        assert mine.where == theirs.where and mine.twice() == theirs.twice()
        assert mine._replace(port=9) == theirs._replace(port=9)
        assert mine._asdict() == theirs._asdict()
    assert Mine.local() == Theirs.local() and type(Mine.local()) is Mine
    assert Mine(host="h", path="/p") == ("h", 80, "/p")
    assert pickle.loads(pickle.dumps(Mine("h"))) == Mine("h")
    assert Mine("h").__slots__ == () and not hasattr(Mine("h"), "__dict__")


def test_a_field_without_a_default_after_one_with_is_refused() -> None:
    with pytest.raises(TypeError, match="without a default follows"):

        class Bad(records.NamedTuple):
            first: int = 1
            second: int  # type: ignore[misc]


def test_a_record_derives_from_named_tuple_alone() -> None:
    with pytest.raises(TypeError, match="from NamedTuple alone"):

        class Mixed(records.NamedTuple, Exception):  # type: ignore[misc]
            field: int
