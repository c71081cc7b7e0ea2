"""PostgreSQL schemas with the store's tables made, reused from test to test within a worker.

Making a new store's tables, types and functions costs PostgreSQL about a second of work, and
hundreds of tests run on PostgreSQL: most of the suite's PostgreSQL time was spent making them.
So a schema is made and primed once (the store opened on it, which makes its tables), and after
each test it is emptied (every row deleted but the read models' version, sequences restarted) and
handed to the next test of the same worker, which finds what a new store holds. A test that
changed the schema itself (dropped, renamed or altered a table, or left another version of the
read models) leaves a shape that differs from the primed one: that schema is dropped instead.
"""

from __future__ import annotations

import uuid

import psycopg

from application import Governance, store_env

KEEP = "rcp_read_model"  # its one row says which version of the read models the tables are
LOCK_TIMEOUT = "10s"  # a test left something holding a table: drop the schema rather than wait

# The tables' shape, named without the schema: columns (type, default), indexes and the version row.
SHAPE = """
SELECT md5(string_agg(part, ';' ORDER BY part)) FROM (
    SELECT replace(table_name || '.' || column_name || ' ' || data_type || ' ' || coalesce(column_default, ''),
                   %(schema)s, '') AS part
    FROM information_schema.columns WHERE table_schema = %(schema)s
    UNION ALL
    SELECT replace(indexdef, %(schema)s, '') FROM pg_indexes WHERE schemaname = %(schema)s
) parts
"""


class SchemaPool:
    def __init__(self, database_url: str):
        self.database_url = database_url
        self._idle: list[str] = []
        self._shape: str | None = None  # the primed schema's, taken from the first one made

    def take(self) -> str:
        """A URL whose schema is private to the caller until it is given back."""
        schema = self._idle.pop() if self._idle else self._primed()
        return self.url(schema)

    def url(self, schema: str) -> str:
        return f"{self.database_url}?schema={schema}"

    def give_back(self, url: str) -> None:
        schema = url.rsplit("schema=", 1)[1]
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            conn.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
            try:
                if self._shape_of(conn, schema) == self._shape and self._version(conn, schema):
                    self._empty(conn, schema)
                    self._idle.append(schema)
                    return
            except psycopg.Error:
                pass
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')

    def close(self) -> None:
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            for schema in self._idle:
                conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        self._idle.clear()

    def _primed(self) -> str:
        schema = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        Governance(env=store_env(self.url(schema))).close()  # makes the store's tables
        if self._shape is None:
            with psycopg.connect(self.database_url, autocommit=True) as conn:
                self._shape = self._shape_of(conn, schema)
        return schema

    @staticmethod
    def _shape_of(conn, schema: str) -> str:
        return conn.execute(SHAPE, {"schema": schema}).fetchone()[0]

    @staticmethod
    def _version(conn, schema: str) -> bool:
        from application.store.upgrade import READ_MODEL_VERSION

        rows = conn.execute(f'SELECT version FROM "{schema}".{KEEP}').fetchall()
        return [r[0] for r in rows] == [READ_MODEL_VERSION]

    @staticmethod
    def _empty(conn, schema: str) -> None:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename <> %s", (schema, KEEP)
        ).fetchall()
        sequences = conn.execute(
            "SELECT sequence_name FROM information_schema.sequences WHERE sequence_schema = %s", (schema,)
        ).fetchall()
        with conn.transaction():
            for (table,) in tables:
                conn.execute(f'DELETE FROM "{schema}"."{table}"')
            for (sequence,) in sequences:
                conn.execute("SELECT setval(%s, 1, false)", (f'"{schema}"."{sequence}"',))
