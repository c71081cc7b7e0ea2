"""What the app factory built, reached one typed way: `services()` in a request or app context
(or `services(app)`), never by string keys. Governance builds its collaborators once (the
composition root, `Governance.__init__`); a route calls the one that does the work, e.g.
`services().audit.history(...)`, and Governance itself only for what coordinates several
(workspaces, tokens, policy saves). The package index keeps its own upstream clients, pages and
cache beside these (`interface.index.install`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from flask import Flask, current_app

from application import Governance
from interface.settings import Settings

if TYPE_CHECKING:  # the types only: Governance already imported them
    from application.access import Access
    from application.advisories import Advisories
    from application.audit import Audit
    from application.egress import EgressJudge
    from application.evaluation import Evaluation
    from application.impact import Impact
    from application.index import PackageIndex
    from application.overview import Overview
    from application.policies import Policies
    from application.synthesis import Synthesis

KEY = "runcode_policy"


@dataclass(frozen=True)
class Services:
    governance: Governance  # one per process, on the configured store
    settings: Settings

    # Governance's collaborators, each the one that does its work.
    @property
    def policies(self) -> Policies:
        return self.governance.policies

    @property
    def evaluation(self) -> Evaluation:
        return self.governance.evaluation

    @property
    def egress(self) -> EgressJudge:
        return self.governance.egress

    @property
    def audit(self) -> Audit:
        return self.governance.audit

    @property
    def impacts(self) -> Impact:
        return self.governance.impacts

    @property
    def synthesis(self) -> Synthesis:
        return self.governance.synthesis

    @property
    def overview(self) -> Overview:
        return self.governance.facts

    @property
    def access(self) -> Access:
        return self.governance.access

    @property
    def advisories(self) -> Advisories:
        return self.governance.advisories

    @property
    def index(self) -> PackageIndex:
        return self.governance.index


def install(app: Flask, governance: Governance, settings: Settings) -> Services:
    app.extensions[KEY] = built = Services(governance, settings)
    return built


def services(app: Flask | None = None) -> Services:
    return (app or current_app).extensions[KEY]
