"""The hot prepared reads on PostgreSQL, straight through libpq instead of psycopg's cursor.

The reads that run before nearly every request (the caller's token, read with its events; the
sealer's next notifications) are server-side prepared statements. Through psycopg's cursor, one
cost about 130 µs of CPU here (its generators, its cache of prepared statements, a Transformer
per cursor) where the same statement costs about 65 µs through `PGconn.exec_prepared`, which
blocks with the GIL released: a tenth of what a package-index page costs its worker. The
parameters are dumped and the rows loaded by psycopg's own Transformer, with the connection's
adapters, so the values are the ones the cursor gives. Each connection prepares a statement the
first time it runs it here, under a name of its own (psycopg's cache never sees it), and again
if it was deallocated behind its back; a connection the pool replaced is a new one and prepares
again. What this path does not take (a connection in a pipeline, a template with anything but
plain `%s` placeholders) goes through the cursor.
"""

from __future__ import annotations

import itertools
import weakref
from functools import lru_cache

from psycopg import errors, pq
from psycopg.adapt import PyFormat, Transformer

from application.store.literals import plain_parts

_ANSWERED = (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK)
_UNKNOWN_STATEMENT = "26000"  # invalid_sql_statement_name: deallocated behind our back


class _Prepared:
    """What one connection prepared here: (template, parameter types) -> (name, column names);
    and the connection's encoding (read once: the service never changes it)."""

    __slots__ = ("statements", "encoding")

    def __init__(self, encoding: str):
        self.statements: dict[tuple, tuple[bytes, list[str] | None]] = {}
        self.encoding = encoding


_ON: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a connection -> _Prepared
_NAMES = itertools.count()  # a statement's name is never used twice in this process


def prepared_rows(conn, template: str, params) -> list[dict] | None:
    """The rows of `template` (psycopg's `%s` placeholders) with `params`, as dicts; None when
    this path does not take it (the caller goes through the cursor then)."""
    query = _numbered(template)
    if query is None or conn.pgconn.pipeline_status != pq.PipelineStatus.OFF:
        return None
    transformer = Transformer(conn)
    values = transformer.dump_sequence(params, [PyFormat.AUTO] * len(params))
    prepared = _ON.get(conn)
    if prepared is None:
        prepared = _ON[conn] = _Prepared(conn.info.encoding)
    key = (template, transformer.types)
    with conn.lock:  # as the cursor takes it: one statement at a time on a connection
        try:
            return _run(conn.pgconn, prepared, key, query, transformer, values)
        except errors.Error as error:
            if error.sqlstate != _UNKNOWN_STATEMENT:
                raise
            prepared.statements.pop(key, None)  # someone deallocated it: prepare it again, once
            return _run(conn.pgconn, prepared, key, query, transformer, values)


def _run(pgconn, prepared: _Prepared, key: tuple, query: bytes, transformer, values) -> list[dict]:
    found = prepared.statements.get(key)
    if found is None:
        name = f"rcp_{next(_NAMES)}".encode()
        _checked(pgconn.prepare(name, query, param_types=transformer.types), prepared.encoding)
        found = prepared.statements[key] = (name, None)
    name, names = found
    result = _checked(pgconn.exec_prepared(name, values, param_formats=transformer.formats), prepared.encoding)
    if names is None:  # from the first result: `describe_prepared` holds the GIL through its round trip
        names = [result.fname(i).decode(prepared.encoding) for i in range(result.nfields)]
        prepared.statements[key] = (name, names)
    transformer.set_pgresult(result)
    return transformer.load_rows(0, result.ntuples, lambda row: dict(zip(names, row, strict=True)))


def _checked(result, encoding: str):
    if result.status in _ANSWERED:
        return result
    error = errors.error_from_result(result, encoding=encoding)
    if error.sqlstate is None:  # libpq's own (the server gone): what psycopg raises for it
        raise errors.OperationalError(str(error))
    raise error


@lru_cache(maxsize=256)
def _numbered(template: str) -> bytes | None:
    """The template with `$1`, `$2`, ... for its `%s` (the binder's reading of a template); None
    when it holds any other `%`."""
    parts = plain_parts(template)
    if parts is None:
        return None
    return "".join([parts[0], *(f"${number}{part}" for number, part in enumerate(parts[1:], start=1))]).encode()
