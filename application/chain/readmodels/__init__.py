"""The read-model tables the service answers from, held against the sealed events they were
written from: a row edited, deleted or added behind the service's back is named like a tampered
event. Rows whose events still wait for the sealer are left for the next check."""

from __future__ import annotations

from application.chain.readmodels.changes import check_changes
from application.chain.readmodels.decisions import check_decisions
from application.chain.readmodels.deliveries import check_deliveries
from application.chain.readmodels.rebuilt import check_rebuilt
from application.chain.readmodels.tokens import check_tokens
from application.store.chain import ChainStore


def check_read_models(store: ChainStore, read_state, to_domain_event, workspace: str, checked: int) -> dict | None:
    return (
        check_decisions(store, read_state, workspace, checked)
        or check_deliveries(store, read_state, workspace, checked)
        or check_tokens(store, read_state, workspace, checked)
        or check_changes(store, to_domain_event, workspace, checked)
        or check_rebuilt(store, to_domain_event, read_state, workspace, checked)
    )
