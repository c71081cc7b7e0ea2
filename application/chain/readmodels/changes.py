"""The change index (what `/history` and point-in-time answers read) held against the sealed
Policy events: each expected row is worked out by the projection that wrote it, from the decoded
event, so the check follows the projection wherever it goes."""

from __future__ import annotations

from eventsourcing.persistence import StoredEvent

from application.chain.readmodels.failures import table_failure
from application.store.chain import ChainStore
from application.store.projection import read_model_rows
from domain.policy import policy_id

COLUMNS = ("workspace", "version", "at", "by_actor", "note", "type", "language", "list", "name", "name_key", "mode")


def check_changes(store: ChainStore, to_domain_event, workspace: str, checked: int) -> dict | None:
    expected, by_token = _expected_rows(store, to_domain_event, workspace)
    actual = {row["version"]: row for row in store.change_rows(workspace)}
    tokens = {row["version"]: row["token_id"] for row in store.change_token_rows(workspace)}  # /history's by_token
    for version, (params, seq) in sorted(expected.items()):
        row = actual.pop(version, None)
        if row is None:
            return _failure(checked, "deleted", workspace, version, seq, "lacks a change the chain seals")
        if _values(store, row) != _values(store, dict(zip(COLUMNS, params, strict=True))):
            return _failure(checked, "altered", workspace, version, seq, "differs from its sealed event")
        if tokens.get(version) != by_token.get(version):
            return _failure(checked, "altered", workspace, version, seq, "names another token than its sealed event")
    position = store.position()
    for version in sorted(actual):
        stored = store.stored_position(store.oid(policy_id(workspace)), version + 1)
        if stored is None or stored <= position:  # pending events are the sealer's, not a tamperer's
            return _failure(checked, "inserted", workspace, version, None, "holds a change no sealed event records")
    return None


def _expected_rows(store: ChainStore, to_domain_event, workspace: str) -> tuple[dict, dict]:
    """{version: (the change row's values, seq)} and {version: the token that made it, if one did}."""
    policy = policy_id(workspace)
    expected, by_token = {}, {}
    for row in store.sealed_events([store.oid(policy)]):
        stored = StoredEvent(policy, row["originator_version"], row["topic"], bytes(row["state"]))
        for kind, params in read_model_rows([to_domain_event(stored)], {policy: workspace}, store.dialect):
            if kind == "change":
                expected[params[1]] = (params, row["seq"])
            elif kind == "change_token":
                by_token[params[1]] = params[2]
    return expected, by_token


def _values(store: ChainStore, row: dict) -> tuple:
    return tuple(store.dialect.from_ts(row[c]) if c == "at" else row[c] for c in COLUMNS)


def _failure(checked: int, problem: str, workspace: str, version: int, seq: int | None, how: str) -> dict:
    record = {"seq": seq, "originator_id": str(policy_id(workspace)), "originator_version": version + 1}
    return table_failure(checked, problem, "changes", f"policy version {version}", how, record)
