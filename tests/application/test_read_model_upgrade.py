"""A store whose read models are older than the code is rebuilt from its events when opened:
on SQLite and PostgreSQL, rows a newer projection writes are there again, and the chain's check
of the read models holds; a store already at the code's version is left alone."""

from __future__ import annotations

from application import Governance, store_env
from application.store.upgrade import READ_MODEL_VERSION, upgrade_read_models


def _counts(app: Governance) -> list[dict]:
    rows = app.recorder.fetch(app.recorder.dialect.sql("SELECT * FROM {decision_counts} ORDER BY name"))
    return [{k: r[k] for k in ("workspace", "language", "name", "installs")} for r in rows]


def test_read_models_of_an_older_version_are_rebuilt_from_the_events(database_url):
    app = Governance(env=store_env(database_url))
    app.create_workspace("acme", by="alice")
    app.change_policy("acme", [{"action": "add", "language": "python", "list": "deny", "entries": ["evil"]}], "alice")
    app.evaluation.evaluate("acme", "python", ["numpy", "evil", "numpy==2"])
    app.chain.seal()  # the sealer counts the decisions it seals
    counts = _counts(app)
    assert [(c["name"], c["installs"]) for c in counts] == [("evil", 1), ("numpy", 2)]
    app.evaluation.evaluate("acme", "python", ["numpy"])  # committed, not sealed
    # As a store of the previous version looks: no version, a table the projection fills empty.
    for statement in ("DELETE FROM {read_model}", "DELETE FROM {decision_counts}"):
        app.recorder.execute(app.recorder.dialect.sql(statement))
    app.close()

    reopened = Governance(env=store_env(database_url))
    try:
        assert _counts(reopened) == counts  # the sealed decisions; the sealer counts the last one
        version = reopened.recorder.fetch(reopened.recorder.dialect.sql("SELECT version FROM {read_model}"))
        assert [r["version"] for r in version] == [READ_MODEL_VERSION]
        reopened.chain.seal()
        assert [(c["name"], c["installs"]) for c in _counts(reopened)] == [("evil", 1), ("numpy", 3)]
        assert reopened.chain.verify("acme")["ok"]
        assert upgrade_read_models(reopened.recorder, reopened.mapper) is False  # at its version: untouched
    finally:
        reopened.close()


def test_a_new_store_starts_at_the_current_version(database_url):
    app = Governance(env=store_env(database_url))
    try:
        version = app.recorder.fetch(app.recorder.dialect.sql("SELECT version FROM {read_model}"))
        assert [r["version"] for r in version] == [READ_MODEL_VERSION]
    finally:
        app.close()


def test_an_older_store_without_events_gets_the_tables_of_this_version(database_url):
    """A table whose columns changed is made again even with no events to replay: its DDL would
    leave the old one in place."""
    app = Governance(env=store_env(database_url))
    sql = app.recorder.dialect.sql
    for statement in (
        "DROP TABLE {impact_versions}",
        # version 4's, without `allowed`
        "CREATE TABLE {impact_versions} (workspace TEXT NOT NULL, day TEXT NOT NULL, language TEXT NOT NULL, "
        "name TEXT NOT NULL, version TEXT NOT NULL, sdist BOOLEAN NOT NULL, sandbox TEXT NOT NULL, "
        "uploaded_at TEXT NOT NULL, install_scripts TEXT NOT NULL, first_at TEXT NOT NULL, "
        "installs INTEGER NOT NULL, PRIMARY KEY (workspace, day, language, name, version, sdist, sandbox))",
        "UPDATE {read_model} SET version = 4",
    ):
        app.recorder.execute(sql(statement))
    app.close()

    reopened = Governance(env=store_env(database_url))
    try:
        assert reopened.recorder.fetch(sql("SELECT allowed, installs FROM {impact_versions}")) == []
    finally:
        reopened.close()


def test_counts_of_a_store_before_kinds_were_kept_are_rebuilt_with_each_decisions_kind(database_url):
    """Version 8's rollups counted a name's direct references with its registry installs: reopened,
    they are counted again from the sealed decisions, kind by kind, and the impact preview judges a
    direct reference as one (never reading the old rows as if they said which kind they were)."""
    app = Governance(env=store_env(database_url))
    app.create_workspace("acme", by="alice")
    url = "urlpkg @ https://x.example/urlpkg-1.0-py3-none-any.whl"
    app.evaluation.evaluate("acme", "python", [url, "urlpkg", "pandas"], context={"sandbox": "s1"})
    app.chain.seal()
    sql = app.recorder.dialect.sql
    for statement in (
        "DROP TABLE {impact_names}",
        "DROP TABLE {impact_sandboxes}",
        "DROP TABLE {decision_counts}",
        # version 8's, without `kind`, as its sealer filled them
        "CREATE TABLE {impact_names} (workspace TEXT NOT NULL, day TEXT NOT NULL, language TEXT NOT NULL, "
        "name TEXT NOT NULL, installs INTEGER NOT NULL, PRIMARY KEY (workspace, day, language, name))",
        "CREATE TABLE {impact_sandboxes} (workspace TEXT NOT NULL, language TEXT NOT NULL, name TEXT NOT NULL, "
        "sandbox TEXT NOT NULL, last_day TEXT NOT NULL, prev_day TEXT, "
        "PRIMARY KEY (workspace, language, name, sandbox))",
        "CREATE TABLE {decision_counts} (workspace TEXT NOT NULL, day TEXT NOT NULL, language TEXT NOT NULL, "
        "name TEXT NOT NULL, allowed BOOLEAN NOT NULL, sandbox TEXT NOT NULL, installs INTEGER NOT NULL, "
        "PRIMARY KEY (workspace, day, language, name, allowed, sandbox))",
        "INSERT INTO {impact_names} SELECT 'acme', '2026-03-03', 'python', 'urlpkg', 2",
        "INSERT INTO {impact_names} SELECT 'acme', '2026-03-03', 'python', 'pandas', 1",
        "UPDATE {read_model} SET version = 8",
    ):
        app.recorder.execute(sql(statement))
    app.close()

    reopened = Governance(env=store_env(database_url))
    try:
        kinds = reopened.recorder.fetch(sql("SELECT name, kind, installs FROM {impact_names} ORDER BY name, kind"))
        assert [(r["name"], r["kind"], r["installs"]) for r in kinds] == [
            ("pandas", "registry", 1),
            ("urlpkg", "registry", 1),
            ("urlpkg", "url", 1),
        ]
        draft = {"python": {"mode": "allowlist", "allow": ["urlpkg", "pandas"]}}
        answer = reopened.impacts.impact("acme", draft, 30)
        assert answer["would_deny"] == [{"language": "python", "name": "urlpkg", "installs": 1, "sandboxes": 1}]
        assert answer["unchanged"] == 2
        assert reopened.chain.verify("acme")["ok"]
    finally:
        reopened.close()


def test_a_store_of_a_newer_version_is_refused_and_left_as_it_is(database_url):
    """Older code opening a store newer code had upgraded rebuilt it back to its own shape, and
    the newer servers on it could seal nothing more (a reviewer's): it is refused, untouched."""
    import pytest

    from application.store.upgrade import OtherReadModels

    app = Governance(env=store_env(database_url))
    app.create_workspace("acme", by="alice")
    app.evaluation.evaluate("acme", "python", ["numpy"])
    app.chain.seal()
    counts = _counts(app)
    sql = app.recorder.dialect.sql
    app.recorder.execute(sql("UPDATE {read_model} SET version = %s"), (READ_MODEL_VERSION + 1,))
    with pytest.raises(OtherReadModels, match=f"version {READ_MODEL_VERSION + 1}, newer than this code's"):
        upgrade_read_models(app.recorder, app.mapper)
    version = app.recorder.fetch(sql("SELECT version FROM {read_model}"))
    assert [r["version"] for r in version] == [READ_MODEL_VERSION + 1] and _counts(app) == counts
    app.close()


def test_a_long_history_of_decisions_is_rebuilt_a_run_at_a_time_as_one_at_a_time(database_url):
    """Runs of decisions are replayed as the live projection writes a batch (a statement per
    decision took minutes on PostgreSQL): the rows are those one at a time would write."""
    app = Governance(env=store_env(database_url))
    app.create_workspace("acme", by="alice")
    for round_ in range(3):
        app.evaluation.evaluate(
            "acme", "python", [f"p{round_}-{i}" for i in range(40)] + ["x @ https://h/x-1.0.tar.gz"]
        )
        app.change_policy(
            "acme", [{"action": "add", "language": "python", "list": "deny", "entries": [f"p{round_}-0"]}], "alice"
        )
    app.evaluation.evaluate("acme", "node", ["left-pad", "@s/x"])
    app.chain.seal()
    sql = app.recorder.dialect.sql
    tables = ("decisions", "changes", "decision_counts", "impact_names", "impact_sandboxes")
    before = {t: sorted(map(repr, app.recorder.fetch(sql(f"SELECT * FROM {{{t}}}")))) for t in tables}
    app.recorder.execute(sql("DELETE FROM {read_model}"))
    app.close()
    reopened = Governance(env=store_env(database_url))
    try:
        after = {t: sorted(map(repr, reopened.recorder.fetch(sql(f"SELECT * FROM {{{t}}}")))) for t in tables}
        assert after == before and len(before["decisions"]) == 3 * 41 + 2
        assert reopened.chain.verify("acme")["ok"]
    finally:
        reopened.close()
