"""What the audit sealer costs the evaluate path, in process: blocks of evaluates with the background
sealer running and stopped, alternated (ABAB...) so the machine's drift falls on both sides alike.

    .venv/bin/python bench/sealing.py [--store sqlite|postgres] [--rounds 6] [--evaluates 200] [--threads 8]

Prints the median evaluate time with and without the sealer, their ratio, and the sealer's lag
once the last block ends; then the CPU this process spends per evaluate and per evaluate's events
sealed, which the machine's noise does not blur.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from application.governance import Governance  # noqa: E402
from application.store import store_env  # noqa: E402
from bench.run import Run  # noqa: E402


def block(app: Governance, evaluates: int, threads: int) -> float:
    """Seconds per evaluate (2 specs each), `threads` sandboxes at once."""

    def work(n: int) -> None:
        for i in range(evaluates // threads):
            app.evaluation.evaluate("bench", "python", [f"p{n}-{i}", "pandas"], None, {"sandbox": "bench"})

    workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    began = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return (time.perf_counter() - began) / (evaluates // threads * threads)


def lag(app: Governance) -> float:
    began = time.monotonic()
    while app.chain.store.position() < (app.recorder.max_notification_id() or 0):
        time.sleep(0.005)
    return time.monotonic() - began


def seal_cpu(app: Governance) -> float:
    """CPU seconds this process spends per event sealed (a backlog sealed at once), which the
    machine's noise does not blur: what sealing takes from the evaluate path's cores."""
    backlog = (app.recorder.max_notification_id() or 0) - app.chain.store.position()
    began = time.process_time()
    app.chain.seal()
    return (time.process_time() - began) / max(backlog, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--postgres-url", default="postgresql://postgres@127.0.0.1:5432/runcode_policy_bench")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--evaluates", type=int, default=200)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    run = Run(args.postgres_url, quick=False, seconds=0, rounds=args.rounds)
    app = Governance(env=store_env(run.postgres("sealing") if args.store == "postgres" else run.sqlite("sealing")))
    app.create_workspace("bench", by="bench")
    times: dict[bool, list[float]] = {True: [], False: []}
    try:
        for n in range(2 * args.rounds):
            sealing = n % 2 == 1  # off, on, off, on, ...: the last block runs with the sealer
            if sealing:
                app.chain.start()
            else:
                app.chain.stop()
            times[sealing].append(block(app, args.evaluates, args.threads))
        behind = lag(app)  # how far the sealer is behind when the load stops
        app.chain.stop()
        began = time.process_time()
        block(app, args.evaluates, args.threads)
        evaluate_cpu = (time.process_time() - began) / (args.evaluates // args.threads * args.threads)
        seal_cpu_per_event = seal_cpu(app)
    finally:
        app.close()
    on, off = statistics.median(times[True]), statistics.median(times[False])
    print(
        f"{args.store}: evaluate {on * 1e3:.2f} ms with the sealer, {off * 1e3:.2f} ms without | "
        f"ratio with/without {on / off:.2f} | sealed {behind:.2f} s after the last evaluate"
    )
    print(
        f"{args.store}: CPU per evaluate {evaluate_cpu * 1e6:.0f} us; sealing its 2 events "
        f"{2 * seal_cpu_per_event * 1e6:.0f} us ({2 * seal_cpu_per_event / evaluate_cpu:.1%} more)"
    )


if __name__ == "__main__":
    main()
