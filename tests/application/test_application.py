"""The Governance application on SQLite and PostgreSQL: commands, refusals, evaluation, tokens."""

from __future__ import annotations

import pytest

from application import Governance, store_env
from application.decision_writer import StoreUnavailableError
from domain.errors import ConflictError, InvalidEntriesError, InvalidInputError, NotFoundError

CONTEXT = {"sandbox": "sbx-42", "source": "run-code", "skill": None, "actor": "agent-7"}


def test_a_new_workspace_has_the_default_policy_at_version_zero(app, workspace):
    view = app.policy(workspace)
    assert view["version"] == 0
    assert view["python"] == {"mode": "denylist", "allow": [], "deny": []}
    assert view["changed_at"] is None


def test_a_workspace_slug_is_unique_and_well_formed(app, workspace):
    with pytest.raises(ConflictError):
        app.create_workspace(workspace)
    with pytest.raises(InvalidInputError):
        app.create_workspace("Not A Slug")


def test_save_records_only_the_differences_atomically(app, workspace):
    view = app.save_policy(
        workspace,
        {"python": {"mode": "allowlist", "allow": "pandas==2.1, numpy\nscipy"}},
        by="alice",
        note="data team",
        expected_version=0,
    )
    assert view["version"] == 4
    assert view["python"]["allow"] == ["numpy", "pandas", "scipy"]
    assert view["changed_by"] == "alice" and view["changed_at"].endswith("Z")
    again = app.save_policy(
        workspace, {"python": {"mode": "allowlist", "allow": ["numpy", "pandas", "scipy"]}}, by="bob"
    )
    assert again["version"] == 4
    types = [c["type"] for c in app.audit.history(workspace)["changes"]]
    assert types == ["mode-switched", "entry-added", "entry-added", "entry-added"]


def test_a_stale_expected_version_is_a_conflict_and_saves_nothing(app, workspace):
    app.save_policy(workspace, {"node": {"deny": ["left-pad"]}}, by="alice")
    with pytest.raises(ConflictError):
        app.save_policy(workspace, {"node": {"deny": []}}, by="bob", expected_version=0)
    assert app.policy(workspace)["node"]["deny"] == ["left-pad"]


def test_invalid_entries_save_nothing(app, workspace):
    with pytest.raises(InvalidEntriesError) as refused:
        app.save_policy(workspace, {"python": {"allow": ["pandas", "git+https://x/y.git"]}}, by="alice")
    assert refused.value.errors[0].field == "python.allow[1]"
    assert app.policy(workspace)["version"] == 0


def test_incremental_changes_and_no_ops(app, workspace):
    app.change_policy(
        workspace, [{"action": "add", "language": "node", "list": "deny", "entries": "left-pad"}], by="alice"
    )
    view = app.change_policy(
        workspace,
        [
            {"action": "add", "language": "node", "list": "deny", "entries": ["left-pad"]},
            {"action": "remove", "language": "python", "list": "allow", "entries": ["x"]},
        ],
        by="alice",
    )
    assert view["version"] == 1


def test_evaluate_records_every_decision_durably(open_app, workspace, app):
    app.save_policy(workspace, {"python": {"mode": "allowlist", "allow": ["pandas"]}}, by="alice")
    answer = app.evaluation.evaluate(workspace, "python", ["pandas==2.1", "numpy"], context=CONTEXT)
    assert answer["allowed"] is False and answer["policy_version"] == 2
    first, second = answer["decisions"]
    assert (first["name"], first["allowed"], first["reason"]) == ("pandas", True, "matches-the-allow-list")
    assert (second["allowed"], second["reason"]) == (False, "not-on-the-allow-list")
    assert "message" in second and second["context"]["sandbox"] == "sbx-42"
    reopened = open_app()
    assert reopened.audit.decision(workspace, second["id"]) == second
    assert reopened.audit.decision(workspace, first["id"]) == first
    assert first["at"] == second["at"]  # decided together: one instant, as recorded


def test_evaluate_parses_a_whole_command_and_judges_its_options(app, workspace):
    answer = app.evaluation.evaluate(
        workspace, command=["pip", "install", "--index-url", "https://evil/simple", "pandas"]
    )
    kinds = sorted(d["kind"] for d in answer["decisions"])
    assert answer["allowed"] is False and "option" in kinds and "registry" in kinds


def test_decisions_filter_and_paginate_newest_first(app, workspace):
    app.save_policy(workspace, {"python": {"deny": ["numpy"]}}, by="alice")
    for i in range(5):
        app.evaluation.evaluate(workspace, "python", ["numpy", f"pkg{i}"], context={"sandbox": f"s{i % 2}"})
    denied = app.audit.decisions(workspace, {"allowed": False})
    assert [d["name"] for d in denied["decisions"]] == ["numpy"] * 5
    page1 = app.audit.decisions(workspace, {"sandbox": "s0"}, limit=3)
    page2 = app.audit.decisions(workspace, {"sandbox": "s0"}, limit=3, cursor=page1["next_cursor"])
    names = [d["name"] for d in page1["decisions"] + page2["decisions"]]
    assert names == ["pkg4", "numpy", "pkg2", "numpy", "pkg0", "numpy"] and page2["next_cursor"] is None
    exported = list(app.audit.export_decisions(workspace, {"language": "python"}))
    assert len(exported) == 10 and exported[0]["at"] >= exported[-1]["at"]


def test_a_bad_cursor_is_refused_not_crashed(app, workspace):
    with pytest.raises(InvalidInputError):
        app.audit.decisions(workspace, cursor="not-a-cursor")
    with pytest.raises(InvalidInputError):
        app.audit.history(workspace, cursor="WzFd")


def test_testing_a_draft_records_nothing(app, workspace):
    answer = app.evaluation.test(
        workspace, "python", ["pandas"], draft={"python": {"mode": "allowlist", "allow": "pandas"}}
    )
    assert answer["allowed"] is True and "id" not in answer["decisions"][0]
    assert app.policy(workspace)["version"] == 0
    assert app.audit.decisions(workspace)["decisions"] == []


def test_a_save_in_another_process_is_in_force_for_the_next_evaluate(open_app, app, workspace):
    assert app.evaluation.evaluate(workspace, "node", ["left-pad"])["allowed"] is True
    other = open_app()
    other.save_policy(workspace, {"node": {"deny": ["left-pad"]}}, by="alice")
    assert app.evaluation.evaluate(workspace, "node", ["LEFT-PAD"])["allowed"] is False


def test_a_policy_reads_back_identically_after_a_restart(open_app, app, workspace):
    for i in range(60):  # past a snapshot interval
        app.change_policy(
            workspace, [{"action": "add", "language": "python", "list": "allow", "entries": [f"p{i}"]}], by="alice"
        )
    before = app.policy(workspace)
    app.close()
    assert open_app().policy(workspace) == before


def test_authenticating_brings_the_workspace_head_version_so_a_save_is_seen_at_once(app, workspace):
    token = app.issue_token(workspace, "ci-sandbox", "sandbox", by="owner")["token"]
    saved = app.save_policy(workspace, {"python": {"mode": "allowlist", "allow": ["pandas"]}}, by="alice")
    assert app.authenticate(token)["head_version"] == saved["version"] == 2
    head = app.authenticate(token)["head_version"]
    assert app.evaluation.evaluate(workspace, "python", ["pandas"], head=head)["policy_version"] == 2


def test_tokens_are_issued_listed_and_revoked_at_once(app, workspace):
    issued = app.issue_token(workspace, "ci-sandbox", "sandbox", by="owner")
    assert app.authenticate(issued["token"]) == {
        "id": issued["id"],
        "workspace": workspace,
        "role": "sandbox",
        "name": "ci-sandbox",
        "head_version": 0,
        "remembered": False,
    }
    assert app.authenticate(issued["token"] + "x") is None
    listed = {t["name"]: t for t in app.list_tokens(workspace)}
    assert listed["ci-sandbox"]["revoked_at"] is None and "token" not in listed["ci-sandbox"]
    app.revoke_token(workspace, issued["id"], by="owner")
    assert app.authenticate(issued["token"]) is None
    assert {t["name"]: t for t in app.list_tokens(workspace)}["ci-sandbox"]["revoked_by"] == "owner"


def test_a_token_of_another_workspace_cannot_be_revoked_here(app, workspace):
    app.create_workspace("other")
    theirs = app.issue_token("other", "x", "admin", by="o")
    with pytest.raises(NotFoundError):
        app.revoke_token(workspace, theirs["id"], by="me")


def test_when_decisions_cannot_be_recorded_the_answer_is_unavailable(app, workspace):
    table = app.readmodel.dialect.table("decisions")
    with app.recorder.datastore.transaction(commit=True) as c:
        c.execute(f"ALTER TABLE {table} RENAME TO rcp_gone")
    with pytest.raises(StoreUnavailableError):
        app.evaluation.evaluate(workspace, "python", ["pandas"])


def test_concurrent_writers_without_expected_version_all_land(open_app, workspace):
    from concurrent.futures import ThreadPoolExecutor

    writers = [open_app() for _ in range(4)]

    def add(i):
        change = {"action": "add", "language": "python", "list": "deny", "entries": [f"pkg{i}"]}
        return writers[i % 4].change_policy(workspace, [change], by=f"w{i}")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(add, range(16)))
    view = writers[0].policy(workspace)
    assert view["version"] == 16 and len(view["python"]["deny"]) == 16


def test_concurrent_writers_with_a_stale_expected_version_conflict(open_app, workspace):
    from concurrent.futures import ThreadPoolExecutor

    writers = [open_app() for _ in range(4)]

    def add(i):
        change = {"action": "add", "language": "node", "list": "deny", "entries": [f"n{i}"]}
        try:
            writers[i].change_policy(workspace, [change], by="w", expected_version=0)
            return "saved"
        except ConflictError:
            return "conflict"

    with ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(add, range(4)))
    assert outcomes.count("saved") == 1 and writers[0].policy(workspace)["version"] == 1


def test_the_last_owner_token_cannot_be_revoked(app):
    owner = app.create_workspace("solo")
    with pytest.raises(ConflictError):
        app.revoke_token("solo", owner["id"], by="owner")
    second = app.issue_token("solo", "second owner", "owner", by="owner")
    app.revoke_token("solo", owner["id"], by="owner")
    assert app.authenticate(owner["token"]) is None and app.authenticate(second["token"])["role"] == "owner"


def test_a_request_too_long_to_judge_is_refused_before_parsing(app, workspace):
    with pytest.raises(InvalidInputError) as refused:
        app.evaluation.evaluate(workspace, "node", ["lodash@" + "1 || " * 800] * 20)
    assert refused.value.errors[0].field == "specs"
    assert app.audit.decisions(workspace)["decisions"] == []


def test_token_names_are_unique_so_the_audit_trail_names_one_holder(app, workspace):
    first = app.issue_token(workspace, "alice", "admin", by="owner")
    with pytest.raises(ConflictError):
        app.issue_token(workspace, "alice", "auditor", by="owner")
    app.revoke_token(workspace, first["id"], by="owner")
    with pytest.raises(ConflictError):  # not even after revocation
        app.issue_token(workspace, "alice", "admin", by="owner")


def test_two_owners_revoking_each_other_at_once_leave_one_owner(open_app):
    from concurrent.futures import ThreadPoolExecutor

    first = open_app()
    a = first.create_workspace("pair")
    b = first.issue_token("pair", "second", "owner", by="a")
    other = open_app()

    def revoke(job):
        app, token = job
        try:
            app.revoke_token("pair", token["id"], by="x")
            return "revoked"
        except ConflictError:
            return "conflict"

    with ThreadPoolExecutor(2) as pool:
        outcomes = sorted(pool.map(revoke, [(first, a), (other, b)]))
    assert outcomes == ["conflict", "revoked"]
    assert len([t for t in first.list_tokens("pair") if t["role"] == "owner" and not t["revoked_at"]]) == 1


def test_the_store_itself_refuses_to_revoke_the_last_owner_token(app):
    from uuid import UUID

    from eventsourcing.persistence import IntegrityError

    owner = app.create_workspace("solo")
    token = app.repository.get(UUID(owner["id"]))
    token.revoke("bypassing the command's own check")
    with pytest.raises(IntegrityError):
        app.save(token)
    assert app.authenticate(owner["token"])["role"] == "owner"


def test_saves_racing_evaluates_never_break_the_store_connection(app, workspace):
    """On PostgreSQL, a failed pipelined save used to leave psycopg believing in prepared
    statements the server never made ('prepared statement "_pg3_N" does not exist')."""
    import random
    import threading

    failures: list[str] = []

    def save(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(60):
            try:
                app.save_policy(
                    workspace,
                    {"python": {"mode": rng.choice(["allowlist", "denylist"]), "allow": [f"p{rng.randint(0, 9)}"]}},
                    by="racer",
                )
            except Exception as error:
                failures.append(repr(error))

    def evaluate() -> None:
        for _ in range(100):
            try:
                app.evaluation.evaluate(workspace, "python", ["p1", "requests"])
            except Exception as error:
                failures.append(repr(error))

    threads = [threading.Thread(target=save, args=(i,)) for i in range(4)]
    threads += [threading.Thread(target=evaluate) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert failures == []
    if app.readmodel.dialect.schema:  # nothing is prepared unasked; what a read asks for is (planned once)
        with app.recorder.datastore.get_connection() as conn:
            conn.execute("DEALLOCATE ALL")
            conn.execute("SELECT 1 AS one")
            conn.execute("SELECT 2 AS two", prepare=True)
            rows = conn.execute("SELECT statement FROM pg_prepared_statements").fetchall()
            assert [row["statement"] for row in rows] == ["SELECT 2 AS two"]


@pytest.mark.postgres
def test_a_read_planned_once_for_every_value_is_never_planned_again_and_leaves_no_setting(primed_schema_url):
    """`generic` reads (the point-in-time answers) run with one plan from their first execution
    on each connection, where PostgreSQL would plan the first five again (SQLite plans each
    statement once anyway); the setting that asks for it never outlives the read, even a failed
    one, so no other statement is planned that way."""
    app = Governance(env=store_env(primed_schema_url))
    try:
        _planned_once(app)
    finally:
        app.close()


def _planned_once(app) -> None:
    from eventsourcing.persistence import PersistenceError

    recorder, connections = app.recorder, 2 * app.recorder.datastore.pool.max_size
    read = app.readmodel.dialect.sql("SELECT version FROM {changes} WHERE workspace = %s")
    for _ in range(3 * connections):  # every connection, each more than once
        assert recorder.fetch(read, ("acme",), generic=True) == []
    with pytest.raises(PersistenceError):
        recorder.fetch("SELECT 1 / (%s - 1) AS one", (1,), generic=True)  # fails after it was parsed
    for _ in range(connections):  # and that connection still knows what it prepared
        assert recorder.fetch("SELECT 1 / (%s - 1) AS one", (2,), generic=True) == [{"one": 1}]
    for _ in range(connections):
        with recorder.datastore.get_connection() as conn:
            assert conn.execute("SHOW plan_cache_mode").fetchone()["plan_cache_mode"] == "auto"
            plans = conn.execute(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = %s",
                (read.replace("%s", "$1"),),
            ).fetchall()
            assert len(plans) == 1 and plans[0]["generic_plans"] > 0 and plans[0]["custom_plans"] == 0, plans
