"""Writes first_schema.sqlite with the code of the first commit that has a store (fa02500).

Run it from a checkout of that commit (see README.md beside it); today's code never imports it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from application.config import store_env

from application.governance import Governance

path = Path(sys.argv[1]).resolve()
path.unlink(missing_ok=True)
gov = Governance(env=store_env(f"sqlite:///{path}"))
gov.create_workspace("acme", by="alice")
gov.change_policy(
    "acme",
    [
        {"action": "add", "language": "python", "list": "allow", "entries": ["numpy", "requests"]},
        {"action": "add", "language": "node", "list": "deny", "entries": ["left-pad"]},
    ],
    by="alice",
    note="first lists",
)
gov.evaluate("acme", "python", ["numpy==1.26", "evil-pkg"], context={"sandbox": "sb-1"})
gov.change_policy(
    "acme", [{"action": "switch-mode", "language": "python", "mode": "allowlist"}], by="bob", note="lock down"
)
gov.evaluate("acme", "python", ["numpy==1.26", "evil-pkg", "git+https://example.org/x.git"])
gov.evaluate("acme", "node", ["left-pad@1", "react"])
gov.change_policy(
    "acme",
    [{"action": "remove", "language": "python", "list": "allow", "entries": ["requests"]}],
    by="alice",
    note="drop",
)
gov.evaluate("acme", "python", ["requests"])
gov.evaluate_egress("acme", "https://pypi.org/simple/", resolved=["151.101.0.223"])
token = gov.issue_token("acme", "ci", "sandbox", by="alice")
gov.revoke_token("acme", token["id"], by="alice")
# A policy past the snapshot interval (50): its snapshot is of the first aggregate shape.
gov.create_workspace("bulk", by="carol")
for start in (0, 30):
    names = [f"pkg-{i:02d}" for i in range(start, start + 30)]
    gov.change_policy("bulk", [{"action": "add", "language": "python", "list": "allow", "entries": names}], by="carol")
gov.close()
