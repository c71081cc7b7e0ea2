"""Benchmark of the hot path, POST /evaluate, as ratios against a ceiling measured in the same run.

The ceiling is what the same server, on the same machine, in the same minute, answers for
GET /healthz (no store, no auth): these machines are noisy, so only ratios are comparable across
runs. For each WSGI server it prints evaluate req/s, the ceiling, and evaluate/ceiling; it also
checks that every answered evaluate left its decisions in the store (recording is not skipped),
and how far the audit sealer fell behind under the load. `--sealing compare` measures each server
again without the sealer and prints the ratio of the two evaluate ratios.

    .venv/bin/python bench/evaluate.py [--store sqlite|postgres] [--seconds 8] [--connections 16]
        [--sealing on|compare]

Needs `wrk` (Debian package) for load generation: a C client leaves the 2 cores to the server.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from application import Governance, store_env  # noqa: E402

SERVERS = {
    "waitress": ["-m", "waitress", "--threads=16", "--listen=127.0.0.1:{port}", "--call", "interface:create_app"],
    "gunicorn-2w": [
        "-m",
        "gunicorn",
        "-w",
        "2",
        "-k",
        "gthread",
        "--threads",
        "8",
        "-b",
        "127.0.0.1:{port}",
        "interface:create_app()",
    ],
}
LUA = """wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer {token}"
wrk.body = '{body}'
"""


def prepare(database_url: str) -> str:
    app = Governance(env=store_env(database_url))
    app.create_workspace("bench", by="bench")
    app.save_policy("bench", {"python": {"mode": "allowlist", "allow": "pandas, numpy, scipy"}}, by="bench")
    token = app.issue_token("bench", "bench", "sandbox", by="bench")["token"]
    app.close()
    return token


def count_decisions(database_url: str) -> int:
    app = Governance(env=store_env(database_url, create_table=False))
    try:
        return sum(1 for _ in app.export_decisions("bench"))
    finally:
        app.close()


class SealingWatch:
    """The audit sealer's backlog (events committed but not sealed yet), sampled while the load runs."""

    def __init__(self, database_url: str):
        self.app = Governance(env=store_env(database_url, create_table=False))
        self.worst, self._stop = 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def backlog(self) -> int:
        return (self.app.recorder.max_notification_id() or 0) - self.app.chain.store.position()

    def _sample(self) -> None:
        while not self._stop.wait(0.25):
            self.worst = max(self.worst, self.backlog())

    def caught_up_after(self, limit: float = 60.0) -> float:
        """Seconds from the end of the load until the last event is sealed."""
        self._stop.set()
        began = time.monotonic()
        while self.backlog() > 0 and time.monotonic() - began < limit:
            time.sleep(0.01)
        self.app.close()
        return time.monotonic() - began


def start(server: str, port: int, database_url: str, sealing: bool = True) -> subprocess.Popen:
    if shutil.which("gunicorn", path=str(Path(sys.executable).parent)) is None and server.startswith("gunicorn"):
        raise SystemExit("gunicorn is not installed in this environment")
    args = [a.format(port=port) for a in SERVERS[server]]
    env = os.environ | {
        "RUNCODE_POLICY_DATABASE_URL": database_url,
        "RUNCODE_POLICY_CREATE_TABLES": "n",
        "RUNCODE_POLICY_AUDIT_SEALING": "y" if sealing else "n",
        "RUNCODE_POLICY_DATA_DIR": tempfile.mkdtemp(),
    }
    proc = subprocess.Popen(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"{server} did not start")


def wrk(url: str, seconds: int, connections: int, script: str | None = None) -> tuple[float, int]:
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", url]
    if script:
        cmd[1:1] = ["-s", script]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    done = int(re.search(r"(\d+) requests in", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return rate, done - (int(non2xx.group(1)) if non2xx else 0)


def run(server: str, database_url: str, args, sealing: bool = True) -> tuple[float, float]:
    """One measurement; returns evaluate req/s and its ratio to the ceiling."""
    token = prepare(database_url)
    body = json.dumps({"language": "python", "specs": ["pandas==2.1", "requests"], "context": {"sandbox": "bench"}})
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(LUA.replace("{token}", token).replace("{body}", body))
    port = 18000 + os.getpid() % 1000
    proc = start(server, port, database_url, sealing)
    try:
        base = f"http://127.0.0.1:{port}"
        ceiling, _ = wrk(base + "/healthz", args.seconds, args.connections)
        watch = SealingWatch(database_url) if sealing else None
        rate, ok = wrk(base + "/api/v1/workspaces/bench/evaluate", args.seconds, args.connections, script.name)
        lag = watch.caught_up_after() if watch else None
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    recorded = count_decisions(database_url)
    sealed = (
        f"sealing on: backlog <= {watch.worst} events, sealed {lag:.2f} s after the load" if watch else "sealing off"
    )
    print(
        f"{server:12s} evaluate {rate:8.0f} req/s | ceiling (healthz) {ceiling:8.0f} req/s | "
        f"ratio {rate / ceiling:.2f} | decisions recorded {recorded} for {ok} answered x 2 specs | {sealed}"
    )
    return rate, rate / ceiling


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--postgres-url", default="postgresql://postgres@127.0.0.1:5432/runcode_policy_bench")
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--servers", default=",".join(SERVERS))
    parser.add_argument(
        "--sealing",
        choices=["on", "compare"],
        default="on",
        help="compare: each server also without the audit sealer, and the ratio of the two",
    )
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is required: apt-get install wrk")
    for server in args.servers.split(","):
        with_sealing = run(server, fresh_store(args), args)
        if args.sealing == "compare":
            without = run(server, fresh_store(args), args, sealing=False)
            print(
                f"{server:12s} audit sealer on/off: evaluate req/s {with_sealing[0] / without[0]:.2f}, "
                f"evaluate/ceiling {with_sealing[1] / without[1]:.2f}"
            )


def fresh_store(args) -> str:
    if args.store == "sqlite":
        return f"sqlite:///{tempfile.mkdtemp()}/bench.sqlite"
    import psycopg

    schema = f"bench_{os.getpid()}_{int(time.time())}"
    with psycopg.connect(args.postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    return f"{args.postgres_url}?schema={schema}"


if __name__ == "__main__":
    main()
