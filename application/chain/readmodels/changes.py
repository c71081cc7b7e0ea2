"""The change index (what `/history` and point-in-time answers read) held against the sealed
Policy events: each expected row is worked out by the projection that wrote it, from the decoded
event, so the check follows the projection wherever it goes."""

from __future__ import annotations

from eventsourcing.persistence import StoredEvent

from application.chain import stored
from application.chain.readmodels.failures import Difference, differs, first_difference, table_failure
from application.chain.readmodels.rows import row_time
from application.store.chain import ChainStore
from application.store.projection import read_model_rows
from domain.policy import policy_id

COLUMNS = ("workspace", "version", "at", "by_actor", "note", "type", "language", "list", "name", "name_key", "mode")


def check_changes(store: ChainStore, to_domain_event, workspace: str, checked: int) -> dict | None:
    expected, by_token = _expected_rows(store, to_domain_event, workspace)
    at = f"a change of workspace {workspace!r}"
    actual = {stored.integer(row["version"], "rcp_changes", at, "version"): row for row in store.change_rows(workspace)}
    tokens = {row["version"]: row["token_id"] for row in store.change_token_rows(workspace)}
    for version, (params, seq) in sorted(expected.items()):
        row = actual.pop(version, None)
        if row is None:
            return _failure(checked, "deleted", workspace, version, seq, "lacks a change the chain seals")
        sealed = dict(zip(COLUMNS, params, strict=True)) | {"by_token": by_token.get(version)}
        shown = {c: row[c] for c in COLUMNS} | {"by_token": tokens.get(version)}  # /history's by_token
        difference = first_difference(_at(store, sealed), _at(store, shown))
        if difference is not None:
            how = differs(difference, "its sealed event", "the event says")
            return _failure(checked, "altered", workspace, version, seq, how, difference)
    position = store.position()
    for version in sorted(actual):
        found = store.stored_position(store.oid(policy_id(workspace)), version + 1)
        if found is None or found <= position:  # pending events are the sealer's, not a tamperer's
            return _failure(checked, "inserted", workspace, version, None, "holds a change no sealed event records")
    return None


def _expected_rows(store: ChainStore, to_domain_event, workspace: str) -> tuple[dict, dict]:
    """{version: (the change row's values, seq)} and {version: the token that made it, if one did}."""
    policy = policy_id(workspace)
    expected, by_token = {}, {}
    for row in store.sealed_events([store.oid(policy)]):
        event = to_domain_event(StoredEvent(policy, row["originator_version"], row["topic"], bytes(row["state"])))
        for kind, params in read_model_rows([event], {policy: workspace}, store.dialect):
            if kind == "change":
                expected[params[1]] = (params, row["seq"])
            elif kind == "change_token":
                by_token[params[1]] = params[2]
    return expected, by_token


def _at(store: ChainStore, values: dict) -> dict:
    return values | {"at": row_time(store, values["at"])}


def _failure(
    checked: int,
    problem: str,
    workspace: str,
    version: int,
    seq: int | None,
    how: str,
    difference: Difference | None = None,
) -> dict:
    record = {"seq": seq, "originator_id": str(policy_id(workspace)), "originator_version": version + 1}
    key = {"workspace": workspace, "version": version}
    return table_failure(checked, problem, "changes", key, f"policy version {version}", how, record, difference)
