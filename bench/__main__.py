"""`python -m bench [--quick] [--json PATH] [--only a,b]`: every figure of the performance issue,
each with its ratio to a ceiling measured in the same run on the same server configuration.

Prints one line per figure, `name: value unit (ratio to ceiling)`, and writes them to --json as
one object: name -> {"value", "unit", "ratio", "p50_ms", "p99_ms"} (and "cpu_ms_per_decision"
for the figures that measure it: bench.cpu). Figures whose feature is not in this tree are
reported as skipped, with the reason."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time

from bench.figures import REGISTRY, Figure, LoadFigure, Result, pending, ratios
from bench.load import require_wrk

# Modules that register figures. A feature built elsewhere adds its own module here; until then
# `PENDING` names its figures (name -> why), reported as skipped with the reason.
MODULES = (
    "bench.service",
    "bench.auditor",
    "bench.readmodels",
    "bench.cooldown",
    "bench.index",
    "bench.index_memory",
    "bench.index_large",
    "bench.parse",
    "bench.startup",
)
PENDING: dict[str, str] = {}
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/runcode_policy_bench"


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    for module in MODULES:
        importlib.import_module(module)
    for name, why in PENDING.items():
        pending(name, why)
    wanted = [n for n in REGISTRY if not args.only or n in args.only.split(",")]
    require_wrk()
    from bench.run import Run

    run = Run(
        args.postgres_url,
        args.quick,
        seconds=3 if args.quick else args.seconds,
        rounds=1 if args.quick else args.rounds,
        say=lambda s: print(s, file=sys.stderr, flush=True),
    )
    started = time.monotonic()
    try:
        results = measure(run, wanted)
    finally:
        run.close()
    ratios(results)
    for name in wanted:
        print(line(name, results.get(name)), flush=True)
    print(f"({time.monotonic() - started:.0f} s{', --quick' if args.quick else ''})", file=sys.stderr)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({n: r.as_json() for n, r in results.items()}, out, indent=2)
    return 0


def measure(run, wanted: list[str]) -> dict[str, Result]:
    """Ceilings first among the load figures (they are interleaved in rounds), then the rest.
    A wanted figure's ceiling is measured too (a ceiling not in the registry is the figure's own)."""
    wanted = list(dict.fromkeys(wanted + [c for n in wanted for c in [REGISTRY[n].ceiling] if c in REGISTRY]))
    loads = [REGISTRY[n] for n in wanted if isinstance(REGISTRY[n], LoadFigure)]
    results: dict[str, Result] = {}
    if loads:
        run.say(f"load figures: {', '.join(f.name for f in loads)} ({run.rounds} round(s) of {run.seconds:g} s)")
        results.update(run.load_rounds(loads))
    for name in wanted:
        item = REGISTRY[name]
        if isinstance(item, Figure) and item.skip() is None:
            run.say(f"{name} …")
            results[name] = item.measure(run)
    return results


def line(name: str, result: Result | None) -> str:
    if result is None:
        return f"{name}: skipped ({REGISTRY[name].skip()})"
    ceiling = REGISTRY[name].ceiling
    ratio = f"{result.ratio:.2f}× {ceiling}" if result.ratio is not None else "no ceiling"
    latency = f", p50 {result.p50_ms} ms, p99 {result.p99_ms} ms" if result.p99_ms is not None else ""
    cpu = ""
    if result.cpu is not None:
        server, postgres = result.cpu
        cpu = f"; cpu {result.cpu_ms_per_decision} ms/decision = server {server} + postgres {postgres}"
    return f"{name}: {result.value:g} {result.unit} ({ratio}{latency}{cpu})"


def _arguments(argv):
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="about 3 minutes: shorter loads, smaller histories")
    parser.add_argument("--json", metavar="PATH", help="write the figures to PATH as one JSON object")
    parser.add_argument("--only", metavar="NAMES", help="comma-separated figure names")
    parser.add_argument("--seconds", type=float, default=8, help="seconds per load (default 8)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of load figures, median kept (default 3)")
    parser.add_argument(
        "--postgres-url",
        default=DEFAULT_POSTGRES,
        help=f"database for the PostgreSQL figures, created if missing (default {DEFAULT_POSTGRES})",
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
