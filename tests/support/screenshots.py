"""`make screenshots`: the console's pages as PNGs under docs/, from a month of made-up history.

    python -m tests.support.screenshots docs

A store in a temporary directory gets a month of policy changes and decisions (backdated: the
event library's clock is moved while they are made, so every read model sees real events with
past timestamps), then headless Chromium walks the browser tests' flows and photographs each
page. With `pngquant` on PATH (apt-get install pngquant) the PNGs shrink to a third or less.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import eventsourcing.domain

from application.governance import Governance
from application.store import store_env
from interface import create_app
from tests.support import browser as chromium
from tests.support.http_client import LiveServer

SHOTS = {
    "sign-in": "Sign in with an API token",
    "overview": "The overview: decisions per day, most denied packages and hosts, latest changes",
    "packages": "Run-code packages with the Test panel's answer",
    "audit": "The audit log, filtered to denials",
    "package": "A package's page: status now and its timeline",
    "history": "The change history",
    "version": "One version of the policy and what it changed",
    "time-travel": "Time travel: was a package allowed at an instant",
    "requests": "Open access requests, to approve for a while or reject",
}
SANDBOXES = ("sbx-data-1", "sbx-data-2", "sbx-ci", "sbx-agent-7")


@contextlib.contextmanager
def clock_at(moment: datetime):
    """Events made inside are stamped `moment` (only for seeding pictures, never in tests)."""
    real = eventsourcing.domain.datetime_now_with_tzinfo
    eventsourcing.domain.datetime_now_with_tzinfo = lambda: moment
    try:
        yield
    finally:
        eventsourcing.domain.datetime_now_with_tzinfo = real


def seed(gov: Governance, today: datetime) -> dict:
    """A month in workspace `acme`: three Saves, a few thousand decisions. Returns its tokens."""
    start = today - timedelta(days=29, hours=3)  # every event a little before now
    with clock_at(start - timedelta(hours=1)):
        tokens = {"owner": gov.create_workspace("acme", by="setup")["token"]}
        tokens["admin"] = gov.issue_token("acme", "alice", "admin", by="owner")["token"]
    saves = {
        0: (
            "alice",
            "the data team's stack",
            {
                "python": {"mode": "allowlist", "allow": "pandas, numpy, scipy, requests"},
                "node": {"mode": "denylist", "deny": "@evil/pkg, event-stream"},
            },
        ),
        17: (
            "alice",
            "requests is replaced by httpx (CVE review)",
            {"python": {"allow": "pandas, numpy, scipy, httpx", "deny": "requests"}},
        ),
        26: ("bob", "polars for the analytics sandbox", {"python": {"allow": "pandas, numpy, scipy, httpx, polars"}}),
    }
    for day in range(30):
        moment = start + timedelta(days=day)
        if day in saves:
            by, note, desired = saves[day]
            with clock_at(moment):
                gov.save_policy("acme", desired, by=by, note=note)
        for n in range(6 + day % 5):
            sandbox = SANDBOXES[(day + n) % len(SANDBOXES)]
            context = {"sandbox": sandbox, "source": "run-code", "actor": f"agent-{n % 3 + 1}"}
            with clock_at(moment + timedelta(minutes=10 + n * 7)):
                specs = ["pandas==2.2", "numpy", "requests" if n % 2 else "httpx", "torch" if n % 3 == 0 else "scipy"]
                gov.evaluation.evaluate("acme", "python", specs, context=context)
                gov.evaluation.evaluate(
                    "acme", "node", ["left-pad", "event-stream"] if n % 4 == 0 else ["lodash"], context=context
                )
                target = "http://169.254.169.254/latest/meta-data/" if n % 5 == 0 else "https://pypi.org/simple/"
                gov.egress.evaluate_egress("acme", target, [], context)
    with clock_at(today - timedelta(minutes=5)):
        tokens["auditor"] = gov.issue_token("acme", "audit", "auditor", by="owner")["token"]
        sandbox = gov.issue_token("acme", "sbx-agent-7", "sandbox", by="owner")
        for by, why in (("agent-1", "torch for the image classifier"), ("agent-3", "fine-tuning needs torch")):
            context = {"sandbox": "sbx-agent-7", "actor": by}
            gov.access.file_request("acme", "python", "torch", why, context, by="sbx-agent-7", token_id=sandbox["id"])
    return tokens


def photograph(url: str, tokens: dict, out: Path) -> None:
    with chromium.chromium() as browser:
        page = browser.new_page(viewport=chromium.VIEWPORT)
        page.goto(url + "/")
        shoot(page, out, "sign-in")
        page = chromium.sign_in(browser, url, tokens["admin"])
        shoot(page, out, "overview", full=True)
        chromium.try_a_draft(page, "pandas, numpy, scipy, httpx, polars\ntorch", "torch\nrequests\npandas==2.2")
        shoot(page, out, "packages")
        page.goto(url + "/console/audit?outcome=denied")
        shoot(page, out, "audit")
        page.goto(url + "/console/packages/python/requests")
        shoot(page, out, "package", full=True)
        page.goto(url + "/console/history")
        shoot(page, out, "history")
        page.get_by_role("link", name="View version 10").click()
        shoot(page, out, "version", full=True)
        page.goto(url + "/console/time-travel")
        page.get_by_label("Was this package allowed then?").fill("requests")
        with page.expect_navigation():  # the answer is a new page: shot before it loads, Chromium fails
            page.get_by_role("button", name="Show").click()
        shoot(page, out, "time-travel")
        chromium.open_page(page, "Requests")
        shoot(page, out, "requests")


def shoot(page, out: Path, name: str, full: bool = False) -> None:
    path = out / f"console-{name}.png"
    page.screenshot(path=str(path), full_page=full)
    if shutil.which("pngquant"):
        subprocess.run(
            ["pngquant", "--force", "--strip", "--quality", "60-90", "--output", str(path), "64", str(path)], check=True
        )
    print(f"{path} ({path.stat().st_size // 1024} KB): {SHOTS[name]}")


def main(out: str) -> int:
    missing = chromium.why_no_browser()
    if missing:
        print(f"cannot take screenshots: {missing}", file=sys.stderr)
        return 1
    Path(out).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as data:
        gov = Governance(env=store_env(f"sqlite:///{data}/store.sqlite"))
        try:
            tokens = seed(gov, datetime.now(UTC))
            server = LiveServer(create_app(env={"RUNCODE_POLICY_DATA_DIR": data}, governance=gov))
            try:
                photograph(server.url, tokens, Path(out))
            finally:
                server.close()
        finally:
            gov.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs"))
