"""The eventsourcing application of runcode-policy: commands, evaluation, read models, queries.

This package's names are the interface's one way in: `Governance` and what comes with it (the
store settings, the egress configuration, the parsing of instants, the store-outage refusal).
"""

from __future__ import annotations

from application.decision_writer import StoreUnavailableError
from application.egress import EgressConfig, checked_config
from application.formats import (
    not_future,
    optional_bound,
    optional_instant,
    parse_bound,
    parse_day,
    parse_instant,
    until_now,
)
from application.governance import Governance
from application.store import default_database_url, store_env
from application.store.guards import StaleCaller

__all__ = [
    "EgressConfig",
    "Governance",
    "StaleCaller",
    "StoreUnavailableError",
    "checked_config",
    "default_database_url",
    "not_future",
    "optional_bound",
    "optional_instant",
    "parse_bound",
    "parse_day",
    "parse_instant",
    "store_env",
    "until_now",
]
