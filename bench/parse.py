"""`parse`: the cost of parsing one spec, averaged over the spec corpus (pip and npm forms,
valid and invalid alike), in-process, without the per-process memo (`domain.specs.parse` answers a
repeated spec from it; this is the parser's own cost, paid once per distinct spec)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from bench.figures import Result, figure
from domain.specs import parse_uncached as parse_spec

ROOT = Path(__file__).resolve().parents[1]
CORPORA = (ROOT / "tests" / "corpus" / "specs.jsonl", ROOT.parent / "shared" / "corpus" / "specs.jsonl")
REPEAT = 20


def corpus() -> list[tuple[str, str]]:
    path = next((p for p in CORPORA if p.exists()), None)
    if path is None:
        raise FileNotFoundError(f"no spec corpus at {' or '.join(map(str, CORPORA))}")
    cases = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [(c["ecosystem"], c["spec"]) for c in cases if c.get("ecosystem") in ("python", "node")]


@figure("parse")
def parse(run) -> Result:
    cases = corpus()
    best = float("inf")
    for _ in range(3 if run.quick else 5):  # the best of several passes: the least disturbed
        started = time.perf_counter()
        for _ in range(REPEAT):
            for language, text in cases:
                parse_spec(language, text)
        best = min(best, (time.perf_counter() - started) / (REPEAT * len(cases)))
    return Result(round(best * 1e6, 2), f"µs/spec (parser alone, {len(cases)} corpus specs)")
