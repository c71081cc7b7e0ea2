"""Benchmark of the hot path, POST /evaluate, as ratios against a ceiling measured in the same run.

The ceiling is what the same server, on the same machine, in the same minute, answers for
GET /healthz (no store, no auth): these machines are noisy, so only ratios are comparable across
runs. For each WSGI server it prints evaluate req/s, the ceiling, and evaluate/ceiling; it also
checks that every answered evaluate left its decisions in the store (recording is not skipped).

    .venv/bin/python bench/evaluate.py [--store sqlite|postgres] [--seconds 8] [--connections 16]

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


def start(server: str, port: int, database_url: str) -> subprocess.Popen:
    if shutil.which("gunicorn", path=str(Path(sys.executable).parent)) is None and server.startswith("gunicorn"):
        raise SystemExit("gunicorn is not installed in this environment")
    args = [a.format(port=port) for a in SERVERS[server]]
    env = os.environ | {"RUNCODE_POLICY_DATABASE_URL": database_url, "RUNCODE_POLICY_CREATE_TABLES": "n"}
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


def run(server: str, database_url: str, args) -> None:
    token = prepare(database_url)
    body = json.dumps({"language": "python", "specs": ["pandas==2.1", "requests"], "context": {"sandbox": "bench"}})
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(LUA.replace("{token}", token).replace("{body}", body))
    port = 18000 + os.getpid() % 1000
    proc = start(server, port, database_url)
    try:
        base = f"http://127.0.0.1:{port}"
        ceiling, _ = wrk(base + "/healthz", args.seconds, args.connections)
        rate, ok = wrk(base + "/api/v1/workspaces/bench/evaluate", args.seconds, args.connections, script.name)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    recorded = count_decisions(database_url)
    print(
        f"{server:12s} evaluate {rate:8.0f} req/s | ceiling (healthz) {ceiling:8.0f} req/s | "
        f"ratio {rate / ceiling:.2f} | decisions recorded {recorded} for {ok} answered x 2 specs"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--postgres-url", default="postgresql://postgres@127.0.0.1:5432/runcode_policy_bench")
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--servers", default=",".join(SERVERS))
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is required: apt-get install wrk")
    for server in args.servers.split(","):
        run(server, fresh_store(args), args)


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
