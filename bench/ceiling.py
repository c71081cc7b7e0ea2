"""The ceilings, served by the production server runner with the production defaults.

- `GET /hello`: a trivial Flask view (no store, no auth): what the server and Flask cost.
- `POST /naive`: the naive durable design a careful engineer builds in an afternoon. It
  validates the evaluate body with the same schema, INSERTs one decision row into a table
  shaped like the decisions read model (same columns, same indexes) and COMMITs, per request,
  through a pool of the same size as the service's. No events, no auth, no group commit.

    python -m bench.ceiling --port 0      # BENCH_CEILING_DATABASE_URL=postgresql://...?schema=...
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime

import click
from flask import Flask, request
from psycopg.conninfo import make_conninfo
from psycopg_pool import ConnectionPool

from application.store import store_env
from application.store.schema import DDL, postgres_dialect
from interface.api.schemas import EvaluateBody
from interface.serve import run_server, server_options

ENV = "BENCH_CEILING_DATABASE_URL"


def create_tables(database_url: str) -> None:
    """The decisions table (and its indexes) of the read model, in the ceiling's own schema."""
    with _pool(database_url, 1) as pool, pool.connection() as conn:
        dialect = postgres_dialect(store_env(database_url)["POSTGRES_SCHEMA"])
        for statement in DDL:
            conn.execute(dialect.sql(statement))


def create_app() -> Flask:
    database_url = os.environ[ENV]
    settings = store_env(database_url)
    pool = _pool(database_url, int(settings["POSTGRES_POOL_SIZE"]), int(settings["POSTGRES_MAX_OVERFLOW"]))
    insert = postgres_dialect(settings["POSTGRES_SCHEMA"]).sql(
        "INSERT INTO {decisions} VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
    )
    app = Flask(__name__)

    @app.get("/hello")
    @app.get("/healthz")
    def hello():
        return "hello"

    @app.post("/naive")
    def naive():
        body = EvaluateBody.model_validate(request.get_json())
        spec = body.specs[0]
        row = (
            str(uuid.uuid4()),
            "bench",
            datetime.now(UTC),
            body.language,
            spec,
            "registry",
            True,
            "not-on-the-deny-list",
            None,
            body.context.sandbox if body.context else None,
            json.dumps(body.model_dump(), sort_keys=True),
        )
        with pool.connection() as conn:  # commits when the block ends
            conn.execute(insert, row)
        return {"recorded": row[0]}

    return app


def _pool(database_url: str, size: int, overflow: int = 0) -> ConnectionPool:
    s = store_env(database_url)
    conninfo = make_conninfo(
        dbname=s["POSTGRES_DBNAME"],
        host=s["POSTGRES_HOST"],
        port=s["POSTGRES_PORT"],
        user=s["POSTGRES_USER"],
        password=s["POSTGRES_PASSWORD"],
    )
    return ConnectionPool(
        conninfo, min_size=size, max_size=size + overflow, open=True, kwargs={"prepare_threshold": None}
    )


@click.command()
@server_options
def main(host: str, port: int, workers: int, threads: int) -> None:
    run_server("bench.ceiling:create_app", host, port, workers, threads)


if __name__ == "__main__":
    main()
