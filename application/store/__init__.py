"""Map the one store setting (`RUNCODE_POLICY_DATABASE_URL`) to the eventsourcing library's own."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from application.store.files import make_private_store
from domain.errors import FieldError, InvalidInputError

DEFAULT_DATA_DIR = "var"
SNAPSHOT_INTERVAL = 50


class ConfigError(InvalidInputError):
    title = "Invalid configuration"


def default_database_url(data_dir: str = DEFAULT_DATA_DIR) -> str:
    return f"sqlite:///{data_dir}/runcode-policy.sqlite"


def sqlite_path(database_url: str) -> Path | None:
    """The file a `sqlite:///` URL names (None for `:memory:` and for other stores)."""
    parts = urlsplit(database_url)
    if parts.scheme != "sqlite":
        return None
    path = unquote(parts.path)
    path = path[1:] if path.startswith("/") else path  # sqlite:///rel, sqlite:////abs
    return None if path == ":memory:" else Path(path)


def store_name(database_url: str) -> str:
    """The store a URL names, in words for a message: its file, or its database and schema."""
    path = sqlite_path(database_url)
    if path is not None:
        return str(path.resolve())
    parts = urlsplit(database_url)
    if parts.scheme not in ("postgresql", "postgres"):
        return "the in-memory store"
    env = _postgres_env(parts)
    return (
        f"PostgreSQL database {env['POSTGRES_DBNAME']} at {env['POSTGRES_HOST']}:{env['POSTGRES_PORT']}, "
        f"schema {env['POSTGRES_SCHEMA']}"
    )


def store_env(database_url: str, *, create_table: bool = True) -> dict[str, str]:
    """Library settings for `sqlite:///path` (or `sqlite:///:memory:`) and `postgresql://...`."""
    parts = urlsplit(database_url)
    common = {
        "IS_SNAPSHOTTING_ENABLED": "y",
        "CREATE_TABLE": "y" if create_table else "n",
        "MAPPER_TOPIC": "application.store.mapper:FastMapper",  # recorded decisions encoded through orjson
    }
    if parts.scheme == "sqlite":
        return common | _sqlite_env(sqlite_path(database_url))
    if parts.scheme in ("postgresql", "postgres"):
        return common | _postgres_env(parts)
    raise ConfigError(
        f"unsupported database URL scheme {parts.scheme!r}",
        [FieldError("RUNCODE_POLICY_DATABASE_URL", "must start with sqlite:/// or postgresql://")],
    )


def _sqlite_env(file: Path | None) -> dict[str, str]:
    if file is not None:
        make_private_store(str(file))
    path = str(file) if file is not None else ":memory:"
    return {
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": path,
        "SQLITE_LOCK_TIMEOUT": "10",
        "APPLICATION_RECORDER_TOPIC": "application.store.sqlite:SQLiteGovernanceRecorder",
    }


def _postgres_env(parts) -> dict[str, str]:
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    return {
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "POSTGRES_DBNAME": unquote(parts.path.lstrip("/")) or "postgres",
        "POSTGRES_HOST": parts.hostname or "127.0.0.1",
        "POSTGRES_PORT": str(parts.port or 5432),
        "POSTGRES_USER": unquote(parts.username or "postgres"),
        "POSTGRES_PASSWORD": unquote(parts.password or ""),
        "POSTGRES_SCHEMA": query.get("schema", "public"),
        "POSTGRES_POOL_SIZE": query.get("pool_size", "8"),
        "POSTGRES_MAX_OVERFLOW": query.get("max_overflow", "8"),
        "POSTGRES_CONNECT_TIMEOUT": query.get("connect_timeout", "5"),
        "POSTGRES_LOCK_TIMEOUT": "5",
        "POSTGRES_ENABLE_DB_FUNCTIONS": "n",  # on, it would skip our read-model writes
        "APPLICATION_RECORDER_TOPIC": "application.store.postgres:PostgresGovernanceRecorder",
    }


def why_unreachable(database_url: str) -> str | None:
    """The server's own words for a PostgreSQL store that cannot be opened (`database "x" does not
    exist`, `password authentication failed`, ...), from one direct connection attempt: the pool
    only says it timed out. None for other stores, or when a connection now succeeds."""
    parts = urlsplit(database_url)
    if parts.scheme not in ("postgresql", "postgres"):
        return None
    import psycopg  # only PostgreSQL deployments need it loaded

    env = _postgres_env(parts)
    try:
        psycopg.connect(
            dbname=env["POSTGRES_DBNAME"],
            host=env["POSTGRES_HOST"],
            port=env["POSTGRES_PORT"],
            user=env["POSTGRES_USER"],
            password=env["POSTGRES_PASSWORD"],
            connect_timeout=min(int(env["POSTGRES_CONNECT_TIMEOUT"]), 5),
        ).close()
    except psycopg.Error as error:
        said = " ".join(str(error).split())
        said = said.rpartition("FATAL:")[2].strip() or said
        return f"{said} (PostgreSQL at {env['POSTGRES_HOST']}:{env['POSTGRES_PORT']})"
    return None
