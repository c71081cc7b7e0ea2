"""PostgreSQL schemas with the store's tables made, reused from test to test within a worker.

Making a new store's tables, types and functions costs PostgreSQL about a second of work, and
hundreds of tests run on PostgreSQL: most of the suite's PostgreSQL time was spent making them.
So a schema is made and primed once (the store opened on it, which makes its tables), and after
each test it is emptied (every row deleted but the read models' version, sequences restarted, the
rows the store's opening wrote written again) and handed to the next test of the same worker,
which finds what a new store holds. A test that
changed the schema itself (dropped, renamed or altered a table, or left another version of the
read models) leaves a shape that differs from the primed one: that schema is dropped instead.
A test that needs a schema with nothing in it (`fresh`) gets a new one, dropped afterwards.
"""

from __future__ import annotations

import uuid

import psycopg
from psycopg import sql

from application import Governance, store_env

KEEP = "rcp_read_model"  # its one row says which version of the read models the tables are
# A test's store opens 2 connections, not the production 8 (the most it may hold is unchanged):
# each connection a store opens costs PostgreSQL a backend's start, ~3 ms of CPU, and most
# tests use one or two; the pool opens more when the test's threads ask for them.
POOL = "pool_size=2&max_overflow=14"

# The tables' shape: the columns (type, nullability, whether they have a default) of the tables a
# primed schema has, and which of its indexes are there. Each is found by name (the catalog's
# name indexes), not by a scan of the catalog: on a server that never vacuums, a catalog scan
# reads every dead row the tests' schemas left.
SHAPE = """
SELECT md5(string_agg(part, ';' ORDER BY part)) FROM (
    SELECT concat_ws(' ', t.name, a.attname, a.atttypid, a.atttypmod, a.attnotnull, a.atthasdef) AS part
    FROM unnest(%(tables)s::text[]) AS t(name)
    JOIN pg_attribute a ON a.attrelid = to_regclass(format('%%I.%%I', %(schema)s::text, t.name))
    WHERE a.attnum > 0 AND NOT a.attisdropped
    UNION ALL
    SELECT i.name FROM unnest(%(indexes)s::text[]) AS i(name)
    WHERE to_regclass(format('%%I.%%I', %(schema)s::text, i.name)) IS NOT NULL
) parts
"""
# What a primed schema holds, read once per worker (a scan of the catalog).
RELATIONS = "SELECT relkind, relname FROM pg_class WHERE relnamespace = %s::regnamespace AND relkind IN ('r', 'i', 'S')"


class SchemaPool:
    def __init__(self, database_url: str):
        self.database_url = database_url
        self._idle: list[str] = []
        self._shape: str | None = None  # the primed schema's, taken from the first one made
        self._relations: dict[str, list[str]] = {}  # and its tables, indexes and sequences, by kind
        self._seeds: list[str] = []  # the rows a new store's tables hold, as INSERTs ({schema} left open)
        self._conn: psycopg.Connection | None = None

    def take(self) -> str:
        """A URL whose schema is private to the caller until it is given back."""
        return self._idle.pop() if self._idle else self._primed()

    def fresh(self) -> str:
        """A URL whose schema is new and empty (`drop` it afterwards)."""
        schema = f"t_{uuid.uuid4().hex[:12]}"
        self._connection().execute(f'CREATE SCHEMA "{schema}"')
        return f"{self.database_url}?{POOL}&schema={schema}"

    def drop(self, url: str) -> None:
        self._connection().execute(f'DROP SCHEMA "{schema_of(url)}" CASCADE')

    def give_back(self, url: str) -> None:
        schema, conn = schema_of(url), self._connection()
        try:
            if self._shape_of(conn, schema) == self._shape and self._version(conn, schema):
                conn.execute(self._emptying(schema))  # one message, one transaction
                self._idle.append(url)
                return
        except psycopg.Error:
            pass
        self.drop(url)

    def close(self) -> None:
        for url in self._idle:
            self.drop(url)
        self._idle.clear()
        self._connection().close()

    def _connection(self):
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.database_url, autocommit=True)
        return self._conn

    def _primed(self) -> str:
        url = self.fresh()
        Governance(env=store_env(url)).close()  # makes the store's tables
        if self._shape is None:
            schema, conn = schema_of(url), self._connection()
            relations = conn.execute(RELATIONS, (schema,)).fetchall()
            self._relations = {kind: sorted(name for k, name in relations if k == kind) for kind in ("r", "i", "S")}
            self._shape = self._shape_of(conn, schema)
            self._seeds = self._seeded(conn, schema)
        return url

    def _seeded(self, conn, schema: str) -> list[str]:
        """What the store's own opening wrote (the sealer's position at 0), to be written again
        after emptying: tests open the store as `serve`'s workers do, without its DDL."""
        inserts = []
        for table in self._relations["r"]:
            if table == KEEP:
                continue
            for row in conn.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall():
                values = sql.SQL(", ").join(sql.Literal(value) for value in row).as_string(conn)
                inserts.append(f'INSERT INTO "{{schema}}"."{table}" VALUES ({values})')
        return inserts

    def _shape_of(self, conn, schema: str) -> str:
        found = {"schema": schema, "tables": self._relations["r"], "indexes": self._relations["i"]}
        return conn.execute(SHAPE, found).fetchone()[0]

    @staticmethod
    def _version(conn, schema: str) -> bool:
        from application.store.upgrade import READ_MODEL_VERSION

        rows = conn.execute(f'SELECT version FROM "{schema}".{KEEP}').fetchall()
        return [r[0] for r in rows] == [READ_MODEL_VERSION]

    def _emptying(self, schema: str) -> str:
        """Every row deleted but the version's, the sequences restarted, what opening the store
        wrote written again: one simple-query message."""
        deletes = [f'DELETE FROM "{schema}"."{table}"' for table in self._relations["r"] if table != KEEP]
        restarts = [f'SELECT setval(\'"{schema}"."{sequence}"\', 1, false)' for sequence in self._relations["S"]]
        seeds = [insert.replace("{schema}", schema) for insert in self._seeds]
        return "BEGIN; " + "; ".join(deletes + restarts + seeds) + "; COMMIT"


def schema_of(url: str) -> str:
    """The schema a pool's URL names."""
    return split_schema(url)[1]


def split_schema(url: str) -> tuple[str, str]:
    """(the database's URL, the schema) of a pool's URL."""
    database, query = url.split("?", 1)
    return database, query.rsplit("schema=", 1)[1]


def with_production_pool(url: str) -> str:
    """A pool's URL for the same schema, with the service's own pool (8 connections, not `POOL`'s 2)."""
    database, schema = split_schema(url)
    return f"{database}?schema={schema}"
