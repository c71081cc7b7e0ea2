"""Histories to measure auditor queries against, written through the application's own paths:
policy changes through `change_policy` (snapshots and change rows as production writes them),
decisions through the group-commit writer itself, a batch of DECISIONS_PER_SAVE at a time.

Timestamps are the real ones (now): the history is a few minutes long, so "a month" of one
package's decisions holds all of that package's decisions in it."""

from __future__ import annotations

import random

from application.evaluation import decision_records
from domain.decision import Decision
from domain.specs import parse

NAMES = [f"pkg-{i}" for i in range(2000)]
LANGUAGES = ("python", "node")
CHANGES_PER_SAVE = 50
DECISIONS_PER_SAVE = 500  # the most decisions one request may carry


def policy_history(governance, workspace: str, events: int, seed: int = 13) -> None:
    """`events` policy changes: entries added and removed at random, ~2% mode switches."""
    rng = random.Random(seed)
    lists = {(lang, lst): set() for lang in LANGUAGES for lst in ("allow", "deny")}
    modes = dict.fromkeys(LANGUAGES, "denylist")
    version = 0
    while version < events:
        changes = [_one_change(rng, lists, modes) for _ in range(min(CHANGES_PER_SAVE, events - version))]
        version = governance.change_policy(workspace, changes, by="bench")["version"]


def _one_change(rng, lists: dict, modes: dict) -> dict:
    language = rng.choice(LANGUAGES)
    if rng.random() < 0.02:
        modes[language] = "allowlist" if modes[language] == "denylist" else "denylist"
        return {"action": "switch-mode", "language": language, "mode": modes[language]}
    list_name, name = rng.choice(("allow", "deny")), rng.choice(NAMES)
    entries = lists[(language, list_name)]
    action = "remove" if name in entries else "add"
    entries.symmetric_difference_update({name})
    return {"action": action, "language": language, "list": list_name, "entries": [name]}


def decisions(governance, workspace: str, count: int, say=print, seed: int = 13) -> None:
    """`count` recorded decisions over NAMES, judged on the workspace's policy."""
    rng = random.Random(seed)
    version, rules = governance.policies.current(workspace)
    context = {"sandbox": "bench", "source": "bench"}
    parsed = [parse("python", name) for name in NAMES]  # parsing is measured elsewhere
    done = 0
    while done < count:
        n = min(DECISIONS_PER_SAVE, count - done)
        specs = [parsed[rng.randrange(len(NAMES))] for _ in range(n)]
        records = decision_records(specs, rules, workspace, version, context)
        governance.writer.record(*(Decision(workspace=workspace, record=r) for r in records))
        done += n
        if done % 100_000 == 0:
            say(f"  … {done:,} decisions recorded")
