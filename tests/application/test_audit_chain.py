"""The audit chain against real stores (SQLite file and PostgreSQL): sealing every recorded fact in
commit order, signed checkpoints, and verification that names what someone with write access to
the database altered, deleted, inserted, reordered or truncated."""

from __future__ import annotations

import itertools
import re
import threading
import time
from uuid import uuid4

import pytest
from eventsourcing.domain import Aggregate, event

from application.chain import AuditKey
from application.chain.audit_chain import SealingStopped
from application.chain.links import link_hash
from application.chain.sealer import BATCH, UNATTRIBUTED
from tests.support.postgres_pool import split_schema
from tests.support.tamper import Tamperer

GENEROUS = 60  # seconds: a bound on "eventually", never a timing claim


@pytest.fixture
def recorded(app):
    """Two workspaces with every kind of fact, sealed, and a checkpoint of acme's head."""
    app.chain.use_key(AuditKey.generate())
    app.create_workspace("acme", by="founder")
    app.create_workspace("other", by="someone")
    app.save_policy("acme", {"python": {"mode": "allowlist", "allow": "pandas"}}, by="alice", note="data team")
    first = app.evaluation.evaluate("acme", "python", ["pandas", "requests", "numpy"], None, {"sandbox": "s1"})
    app.evaluation.evaluate("other", "python", ["left-pad"], None, {})
    token = app.issue_token("acme", "ci", "sandbox", by="alice")
    app.revoke_token("acme", token["id"], by="alice")
    app.evaluation.evaluate("acme", "python", ["scipy"], None, {})
    app.chain.checkpoint("acme")
    app.decision_ids = {d["name"]: d["id"] for d in first["decisions"]}
    return app


@pytest.fixture
def tamper(database_url):
    tamperer = Tamperer(database_url)
    yield tamperer
    tamperer.close()


def chain_rows(app, workspace: str) -> list[dict]:
    return app.chain.store.walk(workspace, 0, 10_000)


def caught_up(app) -> bool:
    return app.chain.store.position() == (app.recorder.max_notification_id() or 0)


def eventually(condition, what: str) -> None:
    deadline = time.monotonic() + GENEROUS
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {GENEROUS} s: {what}")
        time.sleep(0.05)


# -- sealing ---------------------------------------------------------------------------------------
def test_every_recorded_fact_is_sealed_in_its_workspace_chain_in_commit_order(recorded):
    notes = recorded.recorder.select_notifications(start=None, limit=1000)
    sealed = {ws: chain_rows(recorded, ws) for ws in ("acme", "other")}
    assert sum(len(rows) for rows in sealed.values()) == len(notes)  # every event, none twice
    for rows in sealed.values():
        assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
        assert [r["notification_id"] for r in rows] == sorted(r["notification_id"] for r in rows)
    topics = [r["topic"] for r in sealed["acme"]]
    for topic in ("Policy.Created", "Token.Issued", "ModeSwitched", "EntryAdded", "Decision.Recorded", "Token.Revoked"):
        assert any(t.endswith(topic) for t in topics), topic
    assert [r["topic"] for r in sealed["other"]].count("runcode_policy:Decision.Recorded") == 1


class Survey(Aggregate):
    """A kind of event the sealer was never told about."""

    TOPIC = "tests:Survey"

    class Created(Aggregate.Created):
        TOPIC = "tests:Survey.Created"

    @event("Opened", topic="tests:Survey.Opened")
    def __init__(self, workspace: str | None):
        self.workspace = workspace

    @event("Answered", topic="tests:Survey.Answered")
    def answer(self, text: str):
        self.text = text


def test_an_event_kind_added_later_is_sealed_into_its_workspace_chain(recorded):
    survey = Survey(workspace="acme")
    survey.answer("yes")
    recorded.save(survey)
    recorded.chain.seal()
    topics = [r["topic"] for r in chain_rows(recorded, "acme")]
    assert topics[-2:] == ["tests:Survey.Opened", "tests:Survey.Answered"]
    assert recorded.chain.verify("acme")["ok"]


def test_the_background_sealer_keeps_up_with_concurrent_evaluates(app):
    app.create_workspace("acme", by="founder")
    app.chain.start(poll=0.02)
    threads = [
        threading.Thread(target=app.evaluation.evaluate, args=("acme", "python", [f"pkg{i}", "numpy"], None, {}))
        for i in range(16)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    eventually(lambda: caught_up(app), "the sealer reaches the last committed event")
    assert len(chain_rows(app, "acme")) == 2 + 16 * 2


def test_two_applications_on_one_store_seal_one_chain_without_forks_or_duplicates(open_app):
    first, second = open_app(), open_app()
    first.create_workspace("acme", by="founder")
    for app in (first, second):
        app.chain.start(poll=0.005)

    def work(app, n):
        for i in range(10):
            app.evaluation.evaluate("acme", "python", [f"p{n}-{i}"], None, {})

    threads = [threading.Thread(target=work, args=(app, n)) for n, app in enumerate((first, second, first, second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    eventually(lambda: caught_up(first), "the two sealers reach the last committed event")
    rows = chain_rows(first, "acme")
    assert [r["seq"] for r in rows] == list(range(1, 2 + 40 + 1))
    assert len({(r["originator_id"], r["originator_version"]) for r in rows}) == len(rows)
    counts = first.chain.store.table_rows("decision_counts", "workspace = %s", "acme")
    assert sum(r["installs"] for r in counts) == 40  # each decision counted once, by whichever sealed it
    first.chain.use_key(AuditKey.generate())
    first.chain.checkpoint("acme")
    assert second.chain.verify("acme", keys=first.chain.trusted_keys())["ok"]


@pytest.mark.postgres
def test_a_background_round_leaves_the_sealing_to_the_process_holding_the_lock(postgres_schema_url):
    import psycopg

    from application import Governance, store_env

    app = Governance(env=store_env(postgres_schema_url))
    try:
        app.create_workspace("acme", by="founder")
        url, schema = split_schema(postgres_schema_url)
        with psycopg.connect(url) as other:  # another process's sealer, in its sealing transaction
            other.execute(f'SELECT * FROM "{schema}".rcp_chain_position FOR UPDATE')
            done: list[int] = []
            background = threading.Thread(target=lambda: done.append(app.chain.seal(wait=False)))
            background.start()
            background.join(timeout=GENEROUS)
            assert done == [0], "a background round waited for the lock instead of leaving at once"
            assert chain_rows(app, "acme") == []
        assert app.chain.seal() == 2 and caught_up(app)  # on demand, it seals (waiting if it must)
    finally:
        app.close()


def _record_during_the_first_round(app) -> list[int]:
    """The sealer's rollup runs between a round's read and its sealing: a decision recorded
    there is committed after the round looked. Returns the rounds' sizes as they happen."""
    rollup, rounds = app.chain.sealer.rollup, []

    def rolled(notes, states):
        rounds.append(len(notes))
        if len(rounds) == 1:
            app.evaluation.evaluate("acme", "python", ["late"], None, {})
        return rollup(notes, states)

    app.chain.sealer.rollup = rolled
    return rounds


def test_a_background_round_leaves_what_came_during_it_to_the_next_poll(app):
    app.create_workspace("acme", by="founder")
    app.evaluation.evaluate("acme", "python", ["pandas"], None, {})
    rounds = _record_during_the_first_round(app)
    sealed = app.chain.seal(wait=False)
    assert rounds == [sealed] and not caught_up(app), "a partial round went on to seal what came after it"
    assert app.chain.seal() == 1 and caught_up(app)  # the next round (a poll, or on demand) takes it


def test_sealing_on_demand_goes_on_until_everything_committed_is_sealed(app):
    app.create_workspace("acme", by="founder")
    rounds = _record_during_the_first_round(app)
    app.chain.seal()
    assert len(rounds) == 2 and caught_up(app)


def test_a_background_round_that_finds_a_backlog_goes_on_until_it_is_sealed(app):
    app.create_workspace("acme", by="founder")
    for _ in range(3):  # more than a round holds
        app.evaluation.evaluate("acme", "python", [f"p{i}" for i in range(BATCH // 2)], None, {})
    app.chain.seal(wait=False)
    assert caught_up(app)


def test_checkpoints_are_signed_by_themselves_while_the_chain_moves(app):
    app.chain.use_key(AuditKey.generate())
    app.create_workspace("acme", by="founder")
    app.chain.start(poll=0.01, checkpoint_every=0.05)
    app.evaluation.evaluate("acme", "python", ["pandas"], None, {})
    eventually(
        lambda: (
            (head := app.chain.store.head_and_last("acme")[0]) is not None
            and app.chain.store.checkpoint("acme", head["seq"]) is not None
        ),
        "a checkpoint of the moved head",
    )
    assert app.chain.verify("acme")["ok"]


# -- verification ----------------------------------------------------------------------------------
def test_an_untouched_store_verifies(recorded):
    result = recorded.chain.verify("acme")
    assert result["ok"], result
    assert result["checked"] == len(chain_rows(recorded, "acme")) and result["checkpoints"] == 1
    assert recorded.chain.verify("other")["ok"]


def test_a_decision_whose_outcome_was_changed_in_the_store_is_named(recorded, tamper):
    denied = recorded.decision_ids["requests"]
    tamper.replace_in_state(denied, '"allowed":false', '"allowed":true')
    result = recorded.chain.verify("acme")
    assert (result["ok"], result["problem"], result["record"]["originator_id"]) == (False, "altered", denied)
    assert recorded.chain.verify("other")["ok"]  # the other workspace's chain is untouched


def test_a_deleted_decision_is_named(recorded, tamper):
    gone = recorded.decision_ids["numpy"]
    tamper.delete_event(gone)
    result = recorded.chain.verify("acme")
    assert (result["problem"], result["record"]["originator_id"]) == ("deleted", gone)


def test_a_forged_decision_slipped_in_between_is_named(recorded, tamper):
    forged = tamper.insert_forged_copy(recorded.decision_ids["pandas"], '"name":"pandas"', '"name":"evil"')
    result = recorded.chain.verify("acme")
    assert (result["problem"], result["record"]["originator_id"]) == ("inserted", forged)


def test_two_swapped_records_are_named(recorded, tamper):
    tamper.swap(recorded.decision_ids["pandas"], recorded.decision_ids["numpy"])
    result = recorded.chain.verify("acme")
    assert result["problem"] == "reordered"
    assert result["record"]["originator_id"] in (recorded.decision_ids["pandas"], recorded.decision_ids["numpy"])


def test_a_tail_truncated_after_a_checkpoint_is_named(recorded, tamper):
    length = len(chain_rows(recorded, "acme"))
    tamper.truncate_chain("acme", keep=length - 2)
    result = recorded.chain.verify("acme")
    assert (result["problem"], result["record"]["seq"]) == ("truncated", length - 1)


def test_a_chain_rewritten_to_hide_an_alteration_fails_at_the_signed_checkpoint(recorded, tamper):
    denied = recorded.decision_ids["requests"]
    tamper.replace_in_state(denied, '"allowed":false', '"allowed":true')
    rewrite_chain(recorded, tamper, "acme")
    result = recorded.chain.verify("acme")
    assert result["problem"] == "checkpoint-mismatch", result


def rewrite_chain(app, tamper, workspace: str) -> None:
    """What an attacker who knows the chain's rules does: recompute every hash and link."""
    from application.chain.links import GENESIS, event_hash

    previous = GENESIS
    for row in chain_rows(app, workspace):
        digest = event_hash(row["originator_id"], row["originator_version"], row["topic"], row["state"])
        previous = link_hash(workspace, row["seq"], previous, digest)
        tamper.sql(
            "UPDATE rcp_chain SET event_hash = %s, link = %s WHERE workspace = %s AND seq = %s",
            (digest, previous, workspace, row["seq"]),
        )


def test_a_forged_checkpoint_signature_is_refused(recorded, tamper):
    tamper.sql("UPDATE rcp_checkpoints SET head = %s WHERE workspace = 'acme'", ("0" * 64,))
    result = recorded.chain.verify("acme")
    assert result["problem"] == "signature" and "does not verify" in result["detail"]


def test_a_checkpoint_edited_in_the_store_is_refused_even_beside_its_intact_copy(recorded, tamper):
    copied = recorded.chain.all_checkpoints("acme")  # copied out before the edit
    tamper.sql("UPDATE rcp_checkpoints SET at = %s WHERE workspace = 'acme'", ("2025-01-01T00:00:00.000000Z",))
    result = recorded.chain.verify("acme", copied)
    assert result["problem"] == "signature" and "does not verify" in result["detail"]


def test_a_node_gone_from_the_stored_tree_is_named_not_a_crash(recorded, tamper):
    # the largest perfect subtree: every root of the checkpoint's size is folded from it
    top = "(SELECT max(level) FROM rcp_merkle_nodes WHERE workspace = 'acme')"
    tamper.sql(f"DELETE FROM rcp_merkle_nodes WHERE workspace = 'acme' AND level = {top} AND idx = 0")
    result = recorded.chain.verify("acme")
    assert result["problem"] == "tree" and "no node at level" in result["detail"]


def test_a_checkpoint_signed_by_a_key_nobody_trusts_is_refused(recorded):
    impostor = recorded.chain.key
    recorded.chain.use_key(AuditKey.generate())
    result = recorded.chain.verify("acme")
    assert result["problem"] == "signature" and impostor.key_id in result["detail"]
    recorded.chain.use_key(AuditKey.generate(), previous=[impostor.public])  # a rotated-out key still verifies
    assert recorded.chain.verify("acme")["ok"]


@pytest.mark.parametrize("note", ["hello", " ", ""])
def test_a_store_note_garbled_or_blanked_is_named_altered_not_another_log(recorded, tamper, note):
    """Held against a copy, it had been `another-log` (its first line taken for an origin), and a
    note emptied was taken for one signed before notes were: ok."""
    copied = recorded.chain.all_checkpoints("acme")
    seq = copied[0]["seq"]
    tamper.sql("UPDATE rcp_checkpoint_notes SET note = %s WHERE workspace = 'acme'", (note,))
    for result in (recorded.chain.verify("acme", copied), recorded.chain.verify("acme")):
        assert (result["problem"], result["record"]) == ("altered", {"seq": seq}), result
        assert result["detail"].startswith(f"the signed note of checkpoint {seq} is not a signed checkpoint (")
        assert result["detail"].endswith("): it was altered")


def test_a_chain_rows_notification_moved_past_the_position_names_that_row_not_the_position(recorded, tamper):
    """It had been "the sealer's position (rcp_chain_position) … was moved back", which was not."""
    row = chain_rows(recorded, "acme")[2]
    tamper.sql("UPDATE rcp_chain SET notification_id = notification_id + 1000 WHERE workspace = 'acme' AND seq = 3")
    result = recorded.chain.verify("acme")
    assert result["detail"].startswith(f"chain record 3 of 'acme' ({row['topic']} "), result
    assert (result["problem"], result["record"]["seq"]) == ("altered", 3)
    moved = row["notification_id"] + 1000
    assert result["detail"].endswith(
        f"says it sealed notification {moved}, past the sealer's position {recorded.chain.store.position()}, but its "
        f"event is stored at notification {row['notification_id']}: the chain table (rcp_chain) was edited"
    )
    assert recorded.chain.check_sealing() == result["detail"]  # as /readyz names it


# -- the decisions table, which /decisions answers from ----------------------------------------------
def test_a_decision_edited_in_the_decisions_table_is_named(recorded, tamper):
    denied = recorded.decision_ids["requests"]
    tamper.sql(
        "UPDATE rcp_decisions SET allowed = %s, record = replace(record, '\"allowed\":false', '\"allowed\":true') "
        "WHERE id = %s",
        (True, denied),
    )
    assert recorded.audit.decision("acme", denied)["allowed"] is True  # what an auditor would now read
    result = recorded.chain.verify("acme")
    assert (result["problem"], result["record"]["originator_id"]) == ("altered", denied)


@pytest.mark.parametrize(
    "column, value",
    [
        ("name", "requests "),
        ("kind", "egress"),
        ("reason", "matches-the-allow-list"),
        ("sandbox", "elsewhere"),
        ("source", "index"),
        ("language", "node"),
    ],
)
def test_a_column_the_decisions_filters_read_edited_alone_is_named(recorded, tamper, column, value):
    denied = recorded.decision_ids["requests"]
    tamper.sql(f"UPDATE rcp_decisions SET {column} = %s WHERE id = %s", (value, denied))
    result = recorded.chain.verify("acme")
    assert (result["problem"], result["record"]["originator_id"]) == ("altered", denied)


def test_a_decision_moved_to_another_workspace_is_named_in_both(recorded, tamper):
    moved = recorded.decision_ids["requests"]
    tamper.sql("UPDATE rcp_decisions SET workspace = 'other' WHERE id = %s", (moved,))
    here, there = recorded.chain.verify("acme"), recorded.chain.verify("other")
    assert (here["problem"], here["record"]["originator_id"]) == ("deleted", moved)
    assert (there["problem"], there["record"]["originator_id"]) == ("inserted", moved)


def test_a_decision_removed_from_the_decisions_table_is_named(recorded, tamper):
    gone = recorded.decision_ids["numpy"]
    tamper.sql("DELETE FROM rcp_decisions WHERE id = %s", (gone,))
    result = recorded.chain.verify("acme")
    assert (result["problem"], result["record"]["originator_id"]) == ("deleted", gone)


def test_a_decision_added_to_the_decisions_table_alone_is_named(recorded, tamper):
    forged = "00000000-0000-4000-8000-000000000001"
    tamper.sql(
        "INSERT INTO rcp_decisions (id, workspace, at, language, name, kind, allowed, reason, source, sandbox, "
        "record) SELECT %s, workspace, at, language, name, kind, allowed, reason, source, sandbox, record "
        "FROM rcp_decisions WHERE id = %s",
        (forged, recorded.decision_ids["pandas"]),
    )
    result = recorded.chain.verify("acme")
    assert (result["problem"], result["record"]["originator_id"]) == ("inserted", forged)


def test_an_event_of_no_workspace_is_still_sealed_in_the_unattributed_chain(recorded):
    recorded.save(Survey(workspace=None))
    recorded.chain.seal()
    assert [r["topic"] for r in chain_rows(recorded, UNATTRIBUTED)] == ["tests:Survey.Opened"]
    assert caught_up(recorded) and recorded.chain.verify("acme")["ok"]


# -- the tokens table (what authentication reads) and the change index (/history, point in time) --------
ROW_TAMPERING = [
    ("tokens", "UPDATE rcp_tokens SET role = 'owner' WHERE name = 'ci'", "altered"),  # a role raised
    ("tokens", "UPDATE rcp_tokens SET revoked_at = NULL, revoked_by = NULL WHERE name = 'ci'", "altered"),
    ("tokens", "DELETE FROM rcp_tokens WHERE name = 'ci'", "deleted"),
    (
        "tokens",
        "INSERT INTO rcp_tokens (id, workspace, name, role, issued_at, issued_by, secret_digest) "
        "SELECT '00000000-0000-4000-8000-000000000002', workspace, 'backdoor', 'owner', issued_at, issued_by, "
        "'00' FROM rcp_tokens WHERE name = 'ci'",
        "inserted",
    ),
    ("changes", "UPDATE rcp_changes SET name = 'evil', name_key = 'evil' WHERE type = 'entry-added'", "altered"),
    ("changes", "UPDATE rcp_changes SET by_actor = 'mallory' WHERE type = 'mode-switched'", "altered"),
    ("tokens", "UPDATE rcp_tokens SET revoked_by = 'mallory' WHERE revoked_at IS NULL", "altered"),
    ("changes", "DELETE FROM rcp_changes WHERE type = 'entry-added'", "deleted"),
    (  # who made a change, as /history says: a token that did not
        "changes",
        "INSERT INTO rcp_change_tokens SELECT 'acme', 1, id FROM rcp_tokens WHERE name = 'ci'",
        "altered",
    ),
    (
        "changes",
        "INSERT INTO rcp_changes SELECT workspace, 99, at, by_actor, note, type, language, list, 'evil', 'evil', "
        "mode FROM rcp_changes WHERE type = 'entry-added'",
        "inserted",
    ),
]


@pytest.mark.parametrize(("table", "statement", "problem"), ROW_TAMPERING)
def test_a_row_changed_in_a_read_model_alone_is_named(recorded, tamper, table, statement, problem):
    tamper.sql(statement)
    result = recorded.chain.verify("acme")
    assert result["problem"] == problem and result["detail"].startswith(f"the {table} table"), result


INSTANT = "an instant"  # stands for the sealed event's time, as the API writes it
COLUMN_EDITS = [
    ("UPDATE rcp_decisions SET allowed = %s WHERE name = 'scipy'", (True,), "decisions", "allowed", False, True),
    (
        'UPDATE rcp_decisions SET record = replace(record, \'"sandbox":"s1"\', \'"sandbox":"s2"\') '
        "WHERE name = 'requests'",
        (),
        "decisions",
        "record.context.sandbox",
        "s1",
        "s2",
    ),
    ("UPDATE rcp_tokens SET role = 'owner' WHERE name = 'ci'", (), "tokens", "role", "sandbox", "owner"),
    ("UPDATE rcp_tokens SET revoked_at = NULL WHERE name = 'ci'", (), "tokens", "revoked_at", INSTANT, None),
    (
        "UPDATE rcp_changes SET by_actor = 'mallory' WHERE type = 'mode-switched'",
        (),
        "changes",
        "by_actor",
        "alice",
        "mallory",
    ),
]


@pytest.mark.parametrize(("statement", "params", "table", "column", "expected", "found"), COLUMN_EDITS)
def test_a_column_edited_in_a_table_checked_row_by_row_is_named_with_both_values(
    recorded, tamper, statement, params, table, column, expected, found
):
    """As the rebuilt tables' are: the decisions and tokens tables had said only "differs from its
    sealed event(s)", leaving the auditor to find what."""
    tamper.sql(statement, params)
    result = recorded.chain.verify("acme")
    row = result["row"]
    assert (result["problem"], row["table"], row["column"], row["found"]) == ("altered", table, column, found), result
    if expected is INSTANT:
        assert row["expected"].endswith("Z")
    else:
        assert row["expected"] == expected
    assert f"in {column}: found {found!r}, the event" in result["detail"]
    assert f" say{'s' if table != 'tokens' else ''} {row['expected']!r}: " in result["detail"]


# -- the chain's own tables, which every sealing round builds on ----------------------------------------
def sealing_stops_named(app, said: str) -> dict:
    """The sealer refuses to go on (an on-demand checkpoint with it), an integrity alarm and what
    /readyz asks name `said`; so does verification, whose answer is returned."""
    with pytest.raises(SealingStopped, match=re.escape(said)):
        app.chain.checkpoint("acme")
    assert app.integrity.first.startswith(said), app.integrity.first
    result = app.chain.verify("acme")
    assert (result["ok"], result["problem"]) == (False, "altered") and said in result["detail"], result
    return result


@pytest.mark.parametrize("ahead", [1, 1000])
def test_a_position_moved_forward_stops_sealing_and_is_named_whatever_it_was_moved_to(recorded, tamper, ahead):
    """Moved past every event, the sealer found nothing after it to seal and checkpoints were
    still signed: decisions committed meanwhile were in none of them, could be rewritten at leisure
    and were sealed as rewritten once the position was put back. Moved one past the newest event,
    the next decision landed on it, the one after was sealed, and the position was again the
    chain's newest notification: nothing showed at all."""
    sealed, signed = chain_rows(recorded, "acme"), recorded.chain.store.checkpoints("acme", 0, 10)
    moved = recorded.recorder.max_notification_id() + ahead
    tamper.sql("UPDATE rcp_chain_position SET notification_id = %s", (moved,))
    for name in ("scipy", "six"):  # one of them after the forged position, when it is one ahead
        recorded.evaluation.evaluate("acme", "python", [name], None, {})
    said = f"the sealer's position (rcp_chain_position) is notification {moved}, ahead of notification "
    sealing_stops_named(recorded, said)
    assert recorded.chain.check_sealing().startswith(said)  # what /readyz reports, from any process
    assert chain_rows(recorded, "acme") == sealed and recorded.chain.store.checkpoints("acme", 0, 10) == signed


def test_a_position_whose_row_was_deleted_stops_sealing_and_is_named(recorded, tamper):
    """The sealer read it as 0 outside its transaction and as missing inside, and went round forever."""
    tamper.sql("DELETE FROM rcp_chain_position")
    recorded.evaluation.evaluate("acme", "python", ["scipy"], None, {})
    sealing_stops_named(recorded, "the sealer's position (rcp_chain_position) has no row: it was deleted")


@pytest.mark.parametrize(
    "edit",
    [
        "SET seq = seq - 5",  # the next round collided with the chain: sealing stopped without a word
        "SET seq = seq + 5",  # the next round left a gap in the chain
        f"SET link = '{'0' * 64}'",  # the next record was linked to a link the chain does not hold
    ],
)
def test_a_head_edited_stops_sealing_and_is_named_by_table(recorded, tamper, edit):
    tamper.sql(f"UPDATE rcp_chain_heads {edit} WHERE workspace = 'acme'")
    recorded.evaluation.evaluate("acme", "python", ["scipy"], None, {})
    said = "the chain head of 'acme' (rcp_chain_heads) says record "
    sealing_stops_named(recorded, said)
    assert recorded.chain.check_sealing().startswith(said)  # what /readyz reports, from any process


def test_a_head_whose_row_was_deleted_stops_sealing_and_is_named(recorded, tamper):
    tamper.sql("DELETE FROM rcp_chain_heads WHERE workspace = 'acme'")
    recorded.evaluation.evaluate("acme", "python", ["scipy"], None, {})
    sealing_stops_named(recorded, "the chain head of 'acme' (rcp_chain_heads) has no row, but its chain ends at")


def test_an_edited_head_is_never_signed_even_with_nothing_to_seal(recorded, tamper):
    """The checkpoint signed what the heads table said: a head wound back was signed as the chain's."""
    tamper.sql("UPDATE rcp_chain_heads SET seq = seq - 1 WHERE workspace = 'acme'")
    with pytest.raises(SealingStopped, match=re.escape("the chain head of 'acme' (rcp_chain_heads) says record")):
        recorded.chain.checkpoint("acme")


def test_an_event_stored_again_after_the_position_stops_sealing_and_is_named(recorded, tamper):
    """Sealing it again failed on the chain's unique key, round after round, with no alarm."""
    moved = tamper.notification_of(recorded.decision_ids["pandas"])
    tamper.sql(
        "UPDATE stored_events SET {nid} = %s WHERE {nid} = %s", (recorded.recorder.max_notification_id() + 1, moved)
    )
    with pytest.raises(SealingStopped, match="after the sealer's position, is already sealed as record"):
        recorded.chain.checkpoint("acme")


# -- stored values that cannot be read: findings, never a crash ---------------------------------------
def test_a_sealed_events_topic_made_null_is_named_altered(recorded, tamper):
    """`AttributeError: 'NoneType' object has no attribute 'encode'` (a 500 from the API)."""
    edited = recorded.decision_ids["requests"]
    tamper.sql("UPDATE stored_events SET topic = NULL WHERE {nid} = %s", (tamper.notification_of(edited),))
    result = recorded.chain.verify("acme")
    assert (result["problem"], result["record"]["originator_id"]) == ("altered", edited), result
    assert result["detail"].endswith(f"was altered: its stored topic is NULL in {tamper.events}, not text")


def test_a_merkle_node_that_is_no_hash_is_named_altered(recorded, tamper):
    """`ValueError: non-hexadecimal number found in fromhex()` (a 500 from the API)."""
    tamper.sql("UPDATE rcp_merkle_nodes SET hash = '@@' WHERE workspace = 'acme' AND level = 0 AND idx = 1")
    result = recorded.chain.verify("acme")
    assert result["problem"] == "altered", result
    assert result["detail"].startswith(
        "the rcp_merkle_nodes table's hash of the node at level 0, index 1 of 'acme' is '@@', not a SHA-256 digest"
    )


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # PostgreSQL's uuid column holds no such text
def test_a_chain_records_originator_that_is_no_uuid_is_named_altered(recorded, tamper):
    """`ValueError: badly formed hexadecimal UUID string` (a traceback from the CLI)."""
    tamper.sql("UPDATE rcp_chain SET originator_id = 'not-a-uuid' WHERE workspace = 'acme' AND seq = 5")
    result = recorded.chain.verify("acme")
    assert (result["problem"], result["record"]["seq"], result["record"]["originator_id"]) == ("altered", 5, None)
    assert result["detail"] == (
        "the rcp_chain table's originator_id of record 5 of 'acme' is 'not-a-uuid', not a UUID: it was altered"
    )


@pytest.mark.parametrize("column", ["topic", "state"])
def test_an_event_the_sealer_cannot_read_stops_it_and_is_named(recorded, tamper, column):
    """Not sealed yet, it failed every sealing round in the library's read or the counts, with no
    alarm, and verify said ok with one unsealed."""
    [decision] = recorded.evaluation.evaluate("acme", "python", ["six"], None, {})["decisions"]
    at = tamper.notification_of(decision["id"])
    if column == "topic":
        tamper.sql("UPDATE stored_events SET topic = NULL WHERE {nid} = %s", (at,))
    else:  # a decision the counts cannot read: every record this code writes has a kind
        tamper.replace_in_state(decision["id"], '"kind":', '"kinds":')
    said = f"the {tamper.events} table's {column} of notification {at} is "
    sealing_stops_named(recorded, said)
    assert recorded.chain.check_sealing().startswith(said)


@pytest.mark.postgres
def test_a_sealing_round_writes_its_links_in_one_statement_on_postgresql(primed_schema_url):
    """executemany would send (and the server parse and plan) one INSERT per link; a statement of
    a placeholder per value psycopg would parse again on every round: the rows go bound, one
    statement per table."""
    import psycopg

    from application.store.chain import _Transaction
    from application.store.schema import postgres_dialect

    sent: list[tuple] = []

    class Recording(psycopg.Cursor):
        def execute(self, query, params=None, **kwargs):
            sent.append((query, params))
            return super().execute(query, params, **kwargs)

    url, schema = split_schema(primed_schema_url)
    rows = [("ws", 1, 10, uuid4(), 1, "h1", "l1"), ("ws", 2, 11, uuid4(), 1, "it's", "l2")]
    with psycopg.connect(url) as conn:
        _Transaction(Recording(conn), postgres_dialect(schema), "events").seal(rows, {"ws": (2, "l2")}, 11)
        links, heads, position = sent
        assert links[1] is None and links[0].count("'ws', ") == 2 and "'it''s'" in links[0]
        assert heads[1] is None and heads[0].endswith("DO UPDATE SET seq = excluded.seq, link = excluded.link")
        assert position[1] == (11,)
        stored = conn.execute(f'SELECT * FROM "{schema}".rcp_chain ORDER BY seq').fetchall()
        assert stored == [tuple(row) for row in rows]
        assert conn.execute(f'SELECT * FROM "{schema}".rcp_chain_heads').fetchall() == [("ws", 2, "l2")]


# -- verification while the store is written: one snapshot ----------------------------------------
def _committing_before_reads_of(app, table: str, commit, times: int = 2) -> list[str]:
    """Before each of the first `times` reads `app` makes of `table`, `commit` runs: another
    application, on connections of its own, records and seals (what the service's traffic and its
    sealer do between two reads of a verification). Returns the statements it ran before."""
    fetch, before = app.recorder.fetch, []

    def reading(statement, *args, **kwargs):
        if len(before) < times and f"{table} " in statement.replace('"', "") + " ":
            before.append(statement)
            commit()
        return fetch(statement, *args, **kwargs)

    app.recorder.fetch = reading
    return before


def _traffic(app, n: int) -> None:
    """A Save and an evaluate, as a busy service's."""
    app.save_policy("acme", {"python": {"mode": "allowlist", "allow": [f"p{n}"]}}, by="alice")
    app.evaluation.evaluate("acme", "python", [f"p{n}", "numpy"], None, {"sandbox": "s1"})


def _save_and_seal(writer, numbers) -> None:
    _traffic(writer, next(numbers))
    writer.chain.seal()


@pytest.mark.parametrize("table", ["rcp_changes", "rcp_decision_counts"])
def test_what_is_recorded_and_sealed_between_two_reads_of_a_verification_is_not_seen_by_it(open_app, table):
    """A Save and an evaluate, sealed, committed after the verification read the sealed events and
    before it read a table were once named on an untouched store: `inserted` (a change row whose
    event it had not seen, sealed by the time it read the position), `altered` (the decision
    counts of a round it had not seen)."""
    reader, writer = open_app(), open_app()
    reader.create_workspace("acme", by="founder")
    numbers = itertools.count(1)
    _save_and_seal(writer, numbers)
    before = _committing_before_reads_of(reader, table, lambda: _save_and_seal(writer, numbers))
    result = reader.chain.verify("acme")
    assert before, f"the verification read no {table}"
    assert result["ok"], result
    assert result["checked"] < len(chain_rows(writer, "acme")) and result["unsealed"] == 0  # it saw none of them
    assert writer.chain.verify("acme")["ok"]


@pytest.mark.postgres
def test_a_store_under_traffic_verifies_every_time(primed_schema_url):
    """Saves and evaluates from another application, its sealer polling, while this one verifies
    again and again (as `audit verify` beside a busy service): never a finding on an untouched
    store (2 runs of 30 had named an inserted change or altered counts)."""
    from application import Governance, store_env

    reader, writer = (Governance(env=store_env(primed_schema_url)) for _ in range(2))
    stop = threading.Event()

    def traffic() -> None:
        for n in itertools.count(1):
            if stop.is_set():
                return
            _traffic(writer, n)

    busy = threading.Thread(target=traffic)
    try:
        reader.create_workspace("acme", by="founder")
        writer.chain.start(poll=0.001)
        busy.start()
        results = [reader.chain.verify("acme") for _ in range(15)]
        failures = [r for r in results if not r["ok"]]
        assert not failures, failures[0]
        assert results[-1]["checked"] > results[0]["checked"], "no traffic was sealed while it verified"
    finally:
        stop.set()
        if busy.ident is not None:
            busy.join(timeout=GENEROUS)
        for app in (writer, reader):
            app.close()
