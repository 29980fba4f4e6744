"""A throw-away PostgreSQL schema for ``spamfilter bench speed``, and its size.

The benchmark must never touch what a database already holds, so on PostgreSQL it works in a
schema of its own: ``spamfilter_bench_<pid>_<random>``, created here, reached through a URL
whose connections set ``search_path`` to it (the migrations then create every table there),
and dropped afterwards, after ending any connection still on it. Only a schema this module
created is ever dropped.

This is the benchmark's administration of its scratch space, not the service's data; it lives
in ``app.storage`` because only storage speaks SQL. psycopg (the driver the storage layer
uses) is imported only when a PostgreSQL run is asked for.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

PREFIX = "spamfilter_bench_"
SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")


def is_postgres(url: str) -> bool:
    """True for a ``postgresql://`` (or ``postgres://``, ``postgresql+psycopg://``) URL."""
    return urlsplit(url).scheme in SCHEMES


def conninfo(url: str) -> str:
    """The URL as psycopg reads it (``postgresql://``, no SQLAlchemy driver suffix)."""
    return urlunsplit(urlsplit(url)._replace(scheme="postgresql"))


def in_schema(url: str, schema: str) -> str:
    """``url`` whose connections use ``schema`` (search_path) and name themselves after it
    (application_name), so the schema's connections can be found and ended."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k not in ("options", "application_name")]
    query += [("options", f"-csearch_path={schema}"), ("application_name", schema)]
    return urlunsplit(parts._replace(query=urlencode(query)))


@contextmanager
def scratch_schema(url: str) -> Iterator[str]:
    """A new empty schema in the database ``url`` names; yields the URL that uses it, and
    drops the schema (and only it) afterwards."""
    from psycopg import sql

    schema = f"{PREFIX}{os.getpid()}_{secrets.token_hex(4)}"
    with _admin(url) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        yield in_schema(url, schema)
    finally:
        with _admin(url) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s AND pid <> pg_backend_pid()",
                (schema,),
            )
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def schema_bytes(url: str) -> int:
    """pg_total_relation_size (table, indexes, TOAST) summed over the tables of the schema
    that ``url``'s search_path names."""
    with _admin(url) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')"
        ).fetchone()
    return int(row[0]) if row else 0


@contextmanager
def _admin(url: str) -> Iterator[Any]:
    import psycopg

    with psycopg.connect(conninfo(url), autocommit=True) as conn:
        yield conn
