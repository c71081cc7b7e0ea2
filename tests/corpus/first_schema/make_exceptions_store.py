"""Writes exceptions_schema.sqlite with the code of the commit that brought exceptions (4705383),
before their events named the token that made them (see README.md beside it)."""

from __future__ import annotations

import sys
from pathlib import Path

from application.governance import Governance
from application.store import store_env

path = Path(sys.argv[1]).resolve()
path.unlink(missing_ok=True)
gov = Governance(env=store_env(f"sqlite:///{path}"))
owner = gov.create_workspace("acme", by="alice")
gov.change_policy(
    "acme",
    [
        {"action": "switch-mode", "language": "python", "mode": "allowlist"},
        {"action": "add", "language": "python", "list": "allow", "entries": ["numpy"]},
    ],
    by="alice",
    note="allowlist",
)
asked = gov.access.file_request("acme", "python", "leftpad", "needed for the build", {}, "agent", owner["id"])
gov.access.approve_request("acme", asked["id"], by="alice", duration="P30D", note="for the build")
gov.access.grant_exception("acme", "python", "six", by="alice", note="for good")
attrs = gov.access.grant_exception("acme", "python", "attrs", by="bob", duration="P7D")
gov.access.revoke_exception("acme", attrs["id"], by="bob", note="not needed")
gov.evaluate("acme", "python", ["six", "leftpad", "attrs"])
# Past the snapshot interval (50): a snapshot with exceptions and without an egress allowlist.
gov.create_workspace("bulk", by="carol")
gov.access.grant_exception("bulk", "python", "six", by="carol")
names = [f"pkg-{i:02d}" for i in range(55)]
gov.change_policy("bulk", [{"action": "add", "language": "python", "list": "allow", "entries": names}], by="carol")
gov.close()
