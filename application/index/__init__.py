"""The package index's application side: who may read it, what it judges and records, and runs.

`PackageIndex` is the collaborator Governance composes; the HTTP proxies in `interface.index`
are thin views over it.
"""

from __future__ import annotations

from collections.abc import Callable

from application.advisories import Advisories
from application.chain.checked import CheckedReads
from application.decision_writer import DecisionWriter
from application.index.deliveries import Deliveries
from application.index.gate import REQUESTS, IndexGate, Principal, registry_spec
from application.index.runs import DEFAULT_RUN_SECONDS, MAX_RUN_SECONDS, Runs
from application.policies import Policies
from application.store.reads import ReadModel
from domain.run import RUN_SECRET_PREFIX

__all__ = [
    "DEFAULT_RUN_SECONDS",
    "INDEX_ROLES",
    "MAX_RUN_SECONDS",
    "REQUESTS",
    "PackageIndex",
    "Principal",
    "may_read",
    "registry_spec",
]

# Roles whose tokens may read the index: those that may evaluate. An auditor's token never adds
# to the record, and reading the index records decisions.
INDEX_ROLES = ("sandbox", "admin", "owner")


class PackageIndex:
    def __init__(
        self,
        policies: Policies,
        writer: DecisionWriter,
        readmodel: ReadModel,
        save,
        get,
        authenticate_token: Callable[..., dict | None],
        checked: CheckedReads,
        advisories: Advisories,
    ):
        self.gate = IndexGate(policies, writer, readmodel, advisories)
        self.runs = Runs(save, get, readmodel, checked)
        self.deliveries = Deliveries(writer)
        self._authenticate_token = authenticate_token

    def authenticate(self, secret: str) -> Principal | None:
        """A run's token or an API token; None when unknown, revoked or expired. Whether it may
        read the index is `may_read`: the interface answers 401 and 403 differently."""
        if secret.startswith(RUN_SECRET_PREFIX):
            return self.runs.authenticate(secret, self.gate.denials)
        # The same read says whether the token, reading without a run, was refused a project.
        caller = self._authenticate_token(secret, denials=lambda token: self.gate.denials(None, token))
        if caller is None:
            return None
        return Principal(
            workspace=caller["workspace"],
            token=caller["id"],
            name=caller["name"],
            role=caller["role"],
            head=caller["head_version"],
            denied=caller.get("denied"),
        )


def may_read(principal: Principal) -> bool:
    return principal.role == "run" or principal.role in INDEX_ROLES
