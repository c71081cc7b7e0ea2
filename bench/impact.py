"""Benchmark of POST /impact's work (Governance.impact) at a million recorded decisions.

Loads the decisions through the application's own batched path (the group-commit writer, in
batches of MAX_BATCH, each one transaction that also upserts the decision counts), spread over
30 UTC days, 2,000 packages and 50 sandboxes (both Zipf-distributed, as real use is), then times
impact for a draft that switches Python to Allowlist (most packages change outcome: the worst
case for the answer's size). Prints the median against the 50 ms budget and against a ceiling
measured in the same run: one indexed read of the store (the head version), since these
machines are noisy and only ratios are comparable across runs.

    .venv/bin/python bench/impact.py [--store sqlite|postgres] [--decisions 1000000]
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from application.decision_writer import MAX_BATCH  # noqa: E402
from application.evaluation import decision_record  # noqa: E402
from application.governance import Governance  # noqa: E402
from application.store import store_env  # noqa: E402
from domain.decision import Decision  # noqa: E402
from domain.specs import parse  # noqa: E402

BUDGET_MS = 50.0
DAYS, PACKAGES, SANDBOXES = 30, 2000, 50


def zipf(n: int, s: float) -> list[float]:
    return list(itertools.accumulate(1 / (i + 1) ** s for i in range(n)))


def load(app: Governance, total: int, rng: random.Random) -> None:
    """Decisions as evaluate would record them, stamped across the last DAYS days."""
    names, sandboxes = zipf(PACKAGES, 1.1), zipf(SANDBOXES, 1.0)
    version, rules = app.policies.current("bench")

    @cache
    def judged(n: int) -> dict:  # parsed and judged once per package: the loader's CPU goes to saving
        language = "node" if n % 3 == 0 else "python"
        return decision_record(parse(language, f"pkg-{n}"), rules[language], "bench", version, {})

    now = datetime.now(UTC)
    real = Decision.Recorded.create_timestamp
    started = time.perf_counter()
    for batch_start in range(0, total, MAX_BATCH):
        day = batch_start * DAYS // total  # oldest first, as history is written
        stamp = now - timedelta(days=DAYS - 1 - day, seconds=rng.randint(0, 3600))
        Decision.Recorded.create_timestamp = staticmethod(lambda stamp=stamp: stamp)
        batch = []
        for _ in range(min(MAX_BATCH, total - batch_start)):
            record = dict(judged(bisect.bisect(names, rng.random() * names[-1])))
            record["context"] = {"sandbox": f"sbx-{bisect.bisect(sandboxes, rng.random() * sandboxes[-1])}"}
            batch.append(Decision(workspace="bench", record=record))
        Decision.Recorded.create_timestamp = real
        app.writer.record(*batch)
        if batch_start and batch_start % 100_000 == 0:
            rate = batch_start / (time.perf_counter() - started)
            print(f"  loaded {batch_start:,} decisions ({rate:,.0f}/s)", file=sys.stderr, flush=True)


def timed(call, repeat: int) -> float:
    """Median milliseconds of `repeat` calls after one warm-up."""
    call()
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        runs.append((time.perf_counter() - started) * 1000)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--postgres-url", default="postgresql://postgres@127.0.0.1:5432/runcode_policy_bench")
    parser.add_argument("--decisions", type=int, default=1_000_000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.sqlite" if options.store == "sqlite" else options.postgres_url
        app = Governance(env=store_env(url))
        try:
            app.create_workspace("bench", by="bench")
            app.save_policy("bench", {"python": {"deny": "pkg-7, pkg-70"}}, by="bench")
            load(app, options.decisions, random.Random(1))
            draft = {"python": {"mode": "allowlist", "allow": ", ".join(f"pkg-{i}" for i in range(1, 60))}}
            answer = app.impact("bench", draft, DAYS)
            impact_ms = timed(lambda: app.impact("bench", draft, DAYS), 15)
            ceiling_ms = timed(lambda: app.readmodel.head_version("bench"), 200)
            changed = len(answer["would_deny"]) + len(answer["would_allow"])
            print(
                f"impact: {impact_ms:.1f} ms (ratio to the {BUDGET_MS:.0f} ms budget: {impact_ms / BUDGET_MS:.2f}; "
                f"ratio to one indexed read, {ceiling_ms:.2f} ms: {impact_ms / ceiling_ms:.0f}) "
                f"at {options.decisions:,} decisions, {options.store}; {changed} packages change outcome, "
                f"{answer['unchanged']:,} installs unchanged"
            )
        finally:
            app.close()


if __name__ == "__main__":
    main()
