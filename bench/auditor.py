"""Auditor queries at size, in-process on PostgreSQL with the statistics a fresh deployment has
(nothing here runs ANALYZE): "was X allowed at T" and "the policy at T" over a long policy
history, and one package's month of decisions among many."""

from __future__ import annotations

import random
import statistics
import time
from datetime import UTC, datetime, timedelta

from bench import history
from bench.figures import Result, figure

SAMPLES = 200
DENIED = {"python": {"deny": "pkg-7, pkg-70"}}  # so that the overview's top lists have rows


def _sizes(run) -> tuple[int, int]:
    """(policy events, decisions): the issue's sizes, or smaller ones in --quick (said in the unit)."""
    return (10_000, 50_000) if run.quick else (100_000, 1_000_000)


def _point_in_time(run, events: int) -> Result:
    governance = run.governance(run.postgres(f"pit{events}"))
    try:
        governance.create_workspace("bench", by="bench")
        first = datetime.now(UTC)
        run.say(f"  writing {events:,} policy events …")
        history.policy_history(governance, "bench", events)
        last = datetime.now(UTC)
        # The history sealed first: written in one burst, it would still be sealed by this
        # process's own sealer while the samples are taken (10k events: 4.5 ms p50 then, 1.6 ms
        # once sealed, measured here in one run), and the figure would be that catching up, not
        # an auditor's answers (a live store's sealer stays within a second of the log).
        governance.chain.seal()
        rng = random.Random(7)
        samples, reads = [], []
        for _ in range(samples_for(run)):
            at = first + (last - first) * rng.random()
            name = rng.choice(history.NAMES)
            samples.append(timed(governance.audit.package_at, "bench", "python", name, at))
            samples.append(timed(governance.policy, "bench", at))
            # The target's yardstick, one indexed read of this same store, taken between the
            # answers so that both meet the same moment of the machine (`indexed_read` is
            # another store's, minutes apart).
            reads.append(timed(governance.readmodel.head_version, "bench"))
    finally:
        governance.close()
    p50, read = statistics.median(samples), statistics.median(reads)
    return latency(
        samples,
        f"ms p50 (package at T and policy at T, {_size(events)} policy events; "
        f"{p50 / read:.2f}× this store's indexed read, {read:.3f} ms p50)",
    )


@figure("point_in_time", ceiling="point_in_time_1k")
def point_in_time(run) -> Result:
    return _point_in_time(run, _sizes(run)[0])


@figure("point_in_time_1k")
def point_in_time_1k(run) -> Result:
    return _point_in_time(run, 1_000)


def kept_history(run, key: str, what: str, write, policy: dict | None = None):
    """The Governance over a history of the run's size (`write(governance, workspace, count, say=)`
    records `what`), in its own PostgreSQL schema, written once per run and shared under `key`."""

    def build():
        count = _sizes(run)[1]
        governance = run.governance(run.postgres(key))
        try:
            governance.create_workspace("bench", by="bench")
            if policy is not None:
                governance.save_policy("bench", policy, by="bench", note="bench")
            run.say(f"  recording {count:,} {what} through the batched save …")
            started = time.perf_counter()
            write(governance, "bench", count, say=run.say)
            run.say(f"  … in {time.perf_counter() - started:.0f} s")
        except BaseException:
            governance.close()
            raise
        return governance

    return run.keep(key, build)


def decision_history(run):
    """The Governance over the run's decision history, written once and shared by every figure
    that reads decisions (decisions_query, impact, overview); its size is in `history_size`."""
    return kept_history(run, "decisions", "decisions", history.decisions, DENIED)


def history_size(run) -> str:
    return _size(_sizes(run)[1])


@figure("decisions_query")
def decisions_query(run) -> Result:
    governance = decision_history(run)
    end = datetime.now(UTC) + timedelta(seconds=1)
    start = end - timedelta(days=30)
    rng = random.Random(7)
    samples = [
        timed(
            lambda: governance.audit.decisions(
                "bench", {"language": "python", "name": rng.choice(history.NAMES)}, start, end, limit=100
            )
        )
        for _ in range(samples_for(run))
    ]
    return latency(samples, f"ms p50 (first page of one package's month among {history_size(run)} decisions)")


def samples_for(run) -> int:
    return SAMPLES // 4 if run.quick else SAMPLES


def _size(n: int) -> str:
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k"


def timed(call, *args, **kwargs) -> float:
    started = time.perf_counter()
    call(*args, **kwargs)
    return (time.perf_counter() - started) * 1e3


def latency(samples: list[float], unit: str) -> Result:
    p50 = statistics.median(samples)
    p99 = statistics.quantiles(samples, n=100)[98]
    return Result(round(p50, 3), unit, round(p50, 3), round(p99, 3))
