"""The load figures: the real service's POST /evaluate on PostgreSQL and SQLite, and the two
ceilings (`hello`, `naive_durable_pg`) on the same server configuration, in the same run.

After every evaluate load the store is counted: each answered request must have left its
decisions (recording is never skipped to look fast)."""

from __future__ import annotations

import json

from bench.figures import LoadFigure, register
from bench.load import Request

EVALUATE = "/api/v1/workspaces/bench/evaluate"
ALLOWED = ("pandas", "numpy", "scipy", "requests", "flask")
ONE_SPEC = json.dumps({"language": "python", "specs": ["pandas==2.1"], "context": {"sandbox": "bench"}})
TEN_SPECS = json.dumps(
    {
        "language": "python",
        "context": {"sandbox": "bench"},
        "specs": [f"{n}>=1" for n in ALLOWED] + ["torch", "left-pad", "evil", "x-y", "zzz"],
    }
)
POLICY = {"python": {"mode": "allowlist", "allow": ", ".join(ALLOWED), "deny": ["evil"]}}

register(LoadFigure("hello", "ceiling", lambda run: Request("/hello"), "req/s"))
register(
    LoadFigure(
        "naive_durable_pg", "ceiling", lambda run: Request("/naive", ONE_SPEC), "req/s", ceiling="hello", cpu=True
    )
)


def _evaluate(name: str, server: str, body: str, specs: int, ceiling: str, cpu: bool = False) -> None:
    unit = "req/s" if specs == 1 else "decisions/s"
    request = lambda run: Request(EVALUATE, body, run.token(server))  # noqa: E731 - built once the token exists
    register(LoadFigure(name, server, request, unit, specs, ceiling, recorded_specs=specs, cpu=cpu))


_evaluate("evaluate_1spec_pg", "service-pg", ONE_SPEC, 1, "naive_durable_pg", cpu=True)
_evaluate("evaluate_1spec_sqlite", "service-sqlite", ONE_SPEC, 1, "hello")
_evaluate("evaluate_10spec_pg", "service-pg", TEN_SPECS, 10, "naive_durable_pg", cpu=True)


def prepare_workspace(governance) -> str:
    """The workspace every evaluate figure uses; returns a sandbox token."""
    governance.create_workspace("bench", by="bench")
    governance.save_policy("bench", POLICY, by="bench", note="bench")
    return governance.issue_token("bench", "bench-sandbox", "sandbox", by="bench")["token"]


def count_decisions(governance) -> int:
    readmodel = governance.readmodel
    table = readmodel.dialect.table("decisions")
    return governance.readmodel.recorder.fetch(f"SELECT COUNT(*) AS n FROM {table}")[0]["n"]
