"""The request and exception tables (rows written by `application.store.access_projection`)."""

from __future__ import annotations

ACCESS_TABLES = ("requests", "request_askers", "exceptions")

ACCESS_DDL = (
    "CREATE TABLE IF NOT EXISTS {requests} (id TEXT PRIMARY KEY, workspace TEXT NOT NULL, "
    "language TEXT NOT NULL, name TEXT NOT NULL, status TEXT NOT NULL, filed_at {ts} NOT NULL, "
    "filed_by TEXT NOT NULL, justification TEXT NOT NULL, context TEXT NOT NULL, "
    "last_asked_at {ts} NOT NULL, decided_at {ts}, decided_by TEXT, note TEXT, exception_id TEXT, "
    "expires_at {ts}, lift_deny {bool}, revoked_at {ts})",
    # At most one open request per package: a second filer's insert fails in the database, and
    # the application joins the request that won instead.
    "CREATE UNIQUE INDEX IF NOT EXISTS rcp_requests_open ON {requests} (workspace, language, name) "
    "WHERE status = 'open'",
    "CREATE INDEX IF NOT EXISTS rcp_requests_by_status ON {requests} (workspace, status, filed_at)",
    "CREATE TABLE IF NOT EXISTS {request_askers} (request_id TEXT NOT NULL, token_id TEXT NOT NULL, "
    "workspace TEXT NOT NULL, first_at {ts} NOT NULL, last_at {ts} NOT NULL, asks INTEGER NOT NULL, "
    "by_actor TEXT NOT NULL, justification TEXT NOT NULL, context TEXT NOT NULL, "
    "PRIMARY KEY (request_id, token_id))",
    "CREATE INDEX IF NOT EXISTS rcp_request_askers_by_token ON {request_askers} (workspace, token_id)",
    "CREATE TABLE IF NOT EXISTS {exceptions} (id TEXT PRIMARY KEY, workspace TEXT NOT NULL, "
    "language TEXT NOT NULL, name TEXT NOT NULL, granted_version INTEGER NOT NULL, "
    "granted_at {ts} NOT NULL, granted_by TEXT NOT NULL, note TEXT NOT NULL, expires_at {ts}, "
    "request_id TEXT, revoked_version INTEGER, revoked_at {ts}, revoked_by TEXT, lifts_deny {bool} NOT NULL)",
    "CREATE INDEX IF NOT EXISTS rcp_exceptions_by_name ON {exceptions} (workspace, language, name, granted_version)",
    "CREATE INDEX IF NOT EXISTS rcp_exceptions_by_version ON {exceptions} (workspace, granted_version)",
)
