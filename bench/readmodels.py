"""The read models' figures over the run's decision history (bench.auditor.decision_history, 1M
decisions, smaller under --quick): `impact` (Impact.impact, what POST /impact answers) and
`overview` (Overview.overview, the console's landing page), each p50 ms and divided by
`indexed_read`, one indexed read of the same store in the same run (the workspace's head version),
since these machines are noisy and only ratios compare across runs.

Impact's draft switches Python to an allowlist of 59 names: most packages change outcome, the
worst case for the answer's size.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bench.auditor import decision_history, history_size, latency, samples_for, timed
from bench.figures import Result, figure

DRAFT = {"python": {"mode": "allowlist", "allow": ", ".join(f"pkg-{i}" for i in range(1, 60))}}
DAYS = 30  # impact's period and the overview's chart, as the console asks
TOP_DAYS = 7


def _samples(run, call) -> list[float]:
    call()  # a warm-up: the first call fills the per-process caches every later request finds
    return [timed(call) for _ in range(samples_for(run))]


@figure("indexed_read")
def indexed_read(run) -> Result:
    governance = decision_history(run)
    samples = _samples(run, lambda: governance.readmodel.head_version("bench"))
    return latency(samples, f"ms p50 (the head version's indexed read, {history_size(run)}-decision store)")


@figure("impact", ceiling="indexed_read")
def impact(run) -> Result:
    governance = decision_history(run)
    samples = _samples(run, lambda: governance.impacts.impact("bench", DRAFT, DAYS))
    return latency(samples, f"ms p50 (a {DAYS}-day impact of an allowlist draft, {history_size(run)} decisions)")


@figure("overview", ceiling="indexed_read")
def overview(run) -> Result:
    governance = decision_history(run)
    today = datetime.now(UTC).date()
    first, week = today - timedelta(days=DAYS - 1), today - timedelta(days=TOP_DAYS - 1)
    samples = _samples(run, lambda: governance.facts.overview("bench", first, today, week))
    return latency(samples, f"ms p50 (the console overview's {DAYS} days, {history_size(run)} decisions)")
