"""Load generation with wrk (Debian's package): a C client, so the 2 cores go to the server.

Every run is bounded in time (wrk's own duration, and a hard timeout around it), targets only
127.0.0.1, and fails loudly when an answer was not 2xx: a figure must never count refusals. wrk
counts those answers only; the script keeps the first few (status and the start of the body) of
each wrk thread and prints them at the end, so a failed load says what was refused and why.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

CONNECTIONS = 16
THREADS = 2
INSTALL_HINT = "wrk is required: apt-get install wrk (Debian's package)"
_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}
REFUSALS_KEPT = 3  # per wrk thread
# Each wrk thread keeps its first refusals (status >= 400, as wrk counts them); `done` prints them.
_REFUSALS = f"""
threads, refused = {{}}, {{}}
setup = function(thread) table.insert(threads, thread) end
response = function(status, headers, body)
  if status > 399 and #refused < {REFUSALS_KEPT} then
    table.insert(refused, status .. " " .. string.sub(body or "", 1, 300))
  end
end
done = function(summary, latency, requests)
  for _, thread in ipairs(threads) do
    for _, answer in ipairs(thread:get("refused")) do io.write("refused: " .. answer .. "\\n") end
  end
end
"""


@dataclass(frozen=True)
class Request:
    """What wrk sends: a GET, or a POST of a JSON body with a bearer token."""

    path: str
    body: str | None = None
    token: str | None = None
    tokens: tuple[str, ...] = ()  # several callers (sandboxes): each request the next one's token

    def script(self) -> str:
        lines = []
        if self.body is not None:
            lines += [
                'wrk.method = "POST"',
                'wrk.headers["Content-Type"] = "application/json"',
                f"wrk.body = [==[{self.body}]==]",
            ]
        if self.token is not None:
            lines.append(f'wrk.headers["Authorization"] = "Bearer {self.token}"')
        if self.tokens:
            listed = ", ".join(f'"{t}"' for t in self.tokens)
            lines += [
                f"tokens, turn = {{{listed}}}, 0",
                "request = function()",
                "  turn = turn % #tokens + 1",
                '  wrk.headers["Authorization"] = "Bearer " .. tokens[turn]',
                "  return wrk.format()",
                "end",
            ]
        return "\n".join(lines) + "\n" + _REFUSALS


@dataclass(frozen=True)
class Load:
    rate: float  # requests per second
    answered: int  # 2xx answers
    p50_ms: float
    p99_ms: float


def require_wrk() -> None:
    if shutil.which("wrk") is None:
        raise SystemExit(INSTALL_HINT)


def drive(base_url: str, request: Request, seconds: float, connections: int = CONNECTIONS) -> Load:
    """Run wrk for `seconds` against base_url + request.path; refuse any non-2xx answer."""
    if not base_url.startswith("http://127.0.0.1:"):
        raise ValueError("benchmarks only ever target 127.0.0.1")
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write(request.script())
        script.flush()
        command = [
            "wrk",
            f"-t{THREADS}",
            f"-c{connections}",
            f"-d{max(1, round(seconds))}s",
            "--timeout",
            "10s",
            "--latency",
            "-s",
            script.name,
            base_url + request.path,
        ]
        out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=seconds + 30).stdout
    return parse_wrk(out)


def parse_wrk(out: str) -> Load:
    done = int(re.search(r"(\d+) requests in", out).group(1))
    refused = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    timeouts = re.search(r"Socket errors:.*timeout (\d+)", out)
    if refused or (timeouts and int(timeouts.group(1))):
        raise RuntimeError(f"the server refused or dropped requests under load:\n{out}")
    return Load(
        rate=float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        answered=done,
        p50_ms=_percentile(out, "50"),
        p99_ms=_percentile(out, "99"),
    )


def _percentile(out: str, which: str) -> float:
    value, unit = re.search(rf"^\s+{which}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M).groups()
    return float(value) * _UNITS[unit]
