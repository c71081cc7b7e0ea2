"""Deliveries in the audit chain, on SQLite and PostgreSQL: each is sealed like every recorded
fact, `audit verify` covers them, and a delivery row changed, removed or added in the table the
service answers from (a failed transfer made to read as served) is named."""

from __future__ import annotations

import base64
import time
import uuid

import pytest

from domain.delivery import NOTHING_SENT
from tests.support.index_fixtures import run_decisions, set_policy, start_run
from tests.support.index_live import index_live_env  # noqa: F401 - the live_env fixture
from tests.support.tamper import Tamperer

VERIFY = "/api/v1/workspaces/acme/audit/verify"
GENEROUS = 30


@pytest.fixture
def tamper(database_url):
    tamperer = Tamperer(database_url)
    yield tamperer
    tamperer.close()


def fetch(live, run: dict, path: str):
    auth = "Basic " + base64.b64encode(f"pip:{run['token']}".encode()).decode()
    return live.call("GET", path, headers={"Authorization": auth})


@pytest.fixture
def delivered(live, app, pypi_upstream):
    """One served and one failed download, each delivery recorded, and the chain sealed."""
    set_policy(app, "allowlist", python=["alpha"])
    pypi_upstream.faults["alpha-1.0.tar.gz"] = 403
    run = start_run(live)
    assert fetch(live, run, "/pypi/acme/files/alpha/alpha-1.0-py3-none-any.whl").status == 200
    assert fetch(live, run, "/pypi/acme/files/alpha/alpha-1.0.tar.gz").status == 502
    deadline = time.monotonic() + GENEROUS
    downloads = allowed_downloads(live, run)
    while not all("delivery" in d for d in downloads):
        assert time.monotonic() < deadline, downloads
        time.sleep(0.05)
        downloads = allowed_downloads(live, run)
    assert live.call("POST", "/api/v1/workspaces/acme/audit/checkpoints", live.tokens["admin"]).status == 201
    return {d["file"]: d for d in downloads}


def allowed_downloads(live, run: dict) -> list[dict]:
    """The run's allowed downloads (the upstream's refusal of the sdist is recorded beside its
    download as `upstream-failed`, a refusal with no delivery)."""
    return [d for d in run_decisions(live, run) if d["allowed"]]


def verify(live) -> dict:
    return live.call("GET", VERIFY, live.tokens["auditor"]).json


def test_every_delivery_is_sealed_and_verify_covers_it(live, app, delivered):
    verdict = verify(live)
    assert (verdict["ok"], verdict["unsealed"]) == (True, 0), verdict
    sealed = {row["originator_id"] for row in app.chain.store.walk("acme", 0, 10_000)}
    deliveries = app.readmodel.deliveries([d["id"] for d in delivered.values()])
    assert [r["status"] for r in deliveries] and len(deliveries) == 2
    ids = app.chain.store.delivery_rows("acme", "", 10)
    assert {app.chain.store.oid(uuid.UUID(r["id"])) for r in ids} <= sealed


def test_a_failed_delivery_made_to_read_served_in_the_table_is_named(live, delivered, tamper):
    failed = delivered["alpha-1.0.tar.gz"]["id"]
    tamper.sql("UPDATE rcp_deliveries SET status = 'served', bytes = 4096 WHERE decision = %s", (failed,))
    verdict = verify(live)
    assert (verdict["ok"], verdict["problem"]) == (False, "altered")
    assert verdict["detail"].startswith(
        "the deliveries table differs from its sealed event in status: found 'served', the event says 'failed': "
        "delivery "
    )
    assert (verdict["row"]["column"], verdict["row"]["expected"], verdict["row"]["found"]) == (
        "status",
        "failed",
        "served",
    )


def test_a_delivery_removed_from_the_table_is_named(live, delivered, tamper):
    served = delivered["alpha-1.0-py3-none-any.whl"]["id"]
    tamper.sql("DELETE FROM rcp_deliveries WHERE decision = %s", (served,))
    verdict = verify(live)
    assert (verdict["ok"], verdict["problem"]) == (False, "deleted")
    assert "lacks a delivery the chain seals" in verdict["detail"]


def test_a_delivery_added_to_the_table_alone_is_named(live, delivered, tamper):
    failed = delivered["alpha-1.0.tar.gz"]
    row = (str(uuid.uuid4()), failed["id"], "acme", failed["at"], "served", 10, NOTHING_SENT)
    tamper.sql("INSERT INTO rcp_deliveries VALUES (%s, %s, %s, %s, %s, %s, %s)", row)
    verdict = verify(live)
    assert (verdict["ok"], verdict["problem"]) == (False, "inserted")
