"""Histories to measure auditor queries and read models against, written through the application's
own paths: policy changes through `change_policy` (snapshots and change rows as production writes
them), decisions through the group-commit writer itself, a batch of DECISIONS_PER_SAVE at a time
(each batch one transaction with its read-model rows), then sealed and counted by the sealer, as
a live service's seals them as they come.

Decisions are spread over the last DAYS UTC days, oldest first (as history is written), over
NAMES and SANDBOXES, both Zipf-distributed as real use is: the decision counts then hold a row
per package and day, and "a month" of one package's decisions spans the whole history. One in
DIRECT_EVERY is a direct reference to its package (`name @ https://...`), as some installs are:
the counts keep a package's kinds apart, and a draft judges each kind.
"""

from __future__ import annotations

import bisect
import itertools
import random
from datetime import UTC, datetime, timedelta

from application.evaluation import decision_records
from application.formats import iso
from domain.decision import Decision, DecisionRecord, judge
from domain.specs import Spec, parse

NAMES = [f"pkg-{i}" for i in range(2000)]
LANGUAGES = ("python", "node")
CHANGES_PER_SAVE = 50
DECISIONS_PER_SAVE = 500  # the most decisions one request may carry
DAYS, SANDBOXES = 30, 50
DIRECT_EVERY = 100


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
    """`count` recorded decisions judged on the workspace's policy, stamped across DAYS days."""
    rng = random.Random(seed)
    version, rules = governance.policies.current(workspace)
    names, sandboxes = _zipf(len(NAMES), 1.1), _zipf(SANDBOXES, 1.0)
    parsed = [parse("python", name) for name in NAMES]  # parsing is measured elsewhere
    direct = [parse("python", f"{name} @ https://files.example/{name}-1.0-py3-none-any.whl") for name in NAMES]
    now = datetime.now(UTC)
    done = 0
    while done < count:
        n = min(DECISIONS_PER_SAVE, count - done)
        specs = [(direct if rng.randrange(DIRECT_EVERY) == 0 else parsed)[_pick(rng, names)] for _ in range(n)]
        records = decision_records(specs, rules, workspace, version, {"source": "bench"})
        stamp = now - timedelta(days=DAYS - 1 - done * DAYS // count, seconds=rng.randint(0, 3600))
        sandboxed = [{**r, "context": {**r["context"], "sandbox": f"sbx-{_pick(rng, sandboxes)}"}} for r in records]
        _record_at(governance, workspace, sandboxed, stamp)
        done += n
        if done % 100_000 == 0:
            say(f"  … {done:,} decisions recorded")
    governance.chain.seal()


RELEASES, RELEASE_DAYS = 20, 5  # per package, one every RELEASE_DAYS days, the newest 2 to 7 days ago


def downloads(governance, workspace: str, count: int, say=print, seed: int = 13) -> None:
    """`count` downloads recorded as the index records them: a wheel of a version the upstream had
    at the fetch's instant (the newest available most often), its facts in the context
    (`version`, `uploaded_at`), stamped across DAYS days and written by the group-commit writer, so
    that the version rollup (`impact_versions`) fills as it does live."""
    rng = random.Random(seed)
    version, rules = governance.policies.current(workspace)
    names, sandboxes, recent = _zipf(len(NAMES), 1.1), _zipf(SANDBOXES, 1.0), _zipf(RELEASES // 2, 1.5)
    now = datetime.now(UTC)
    newest = [now - timedelta(days=2, hours=rng.uniform(0, 24 * RELEASE_DAYS)) for _ in NAMES]
    done = 0
    while done < count:
        n = min(DECISIONS_PER_SAVE, count - done)
        stamp = now - timedelta(days=DAYS - 1 - done * DAYS // count, seconds=rng.randint(0, 3600))
        records = []
        for _ in range(n):
            index = _pick(rng, names)
            name = NAMES[index]
            later = max(0, -(-(newest[index] - stamp) // timedelta(days=RELEASE_DAYS)))  # releases after `stamp`
            k = min(RELEASES - 1, later + _pick(rng, recent))  # k releases before the newest
            number, uploaded = f"1.{RELEASES - 1 - k}.0", newest[index] - timedelta(days=RELEASE_DAYS * k)
            spec = Spec(name, "python", "registry", name)
            context = {"source": "index", "sandbox": f"sbx-{_pick(rng, sandboxes)}", "actor": "bench"}
            context |= {"version": number, "uploaded_at": iso(uploaded)}
            made = DecisionRecord.for_spec(spec, judge(rules["python"], spec, workspace), version, context)
            records.append(made.fetched("download", None, f"{name}-{number}-py3-none-any.whl", number, "bench"))
        _record_at(governance, workspace, [r.to_dict() for r in records], stamp)
        done += n
        if done % 100_000 == 0:
            say(f"  … {done:,} downloads recorded")
    governance.chain.seal()


def _record_at(governance, workspace: str, records: list[dict], stamp: datetime) -> None:
    """One batch of decisions recorded by the group-commit writer as made at `stamp`. Decisions are
    stamped when made: back-date this batch's as it is built (a day of history cannot be waited
    for), and restore the clock before the writer sees them."""
    real = Decision.Recorded.create_timestamp
    Decision.Recorded.create_timestamp = staticmethod(lambda: stamp)
    try:
        batch = [Decision(workspace=workspace, record=r) for r in records]
    finally:
        Decision.Recorded.create_timestamp = real
    governance.writer.record(*batch)


def _zipf(n: int, s: float) -> list[float]:
    """Cumulative weights of ranks 1..n."""
    return list(itertools.accumulate(1 / (i + 1) ** s for i in range(n)))


def _pick(rng: random.Random, cumulative: list[float]) -> int:
    return bisect.bisect(cumulative, rng.random() * cumulative[-1])
