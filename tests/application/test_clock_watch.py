"""An instance re-reads PostgreSQL's clock while it records (`application.clock.ClockWatch`): out
of step, it records nothing; back in step, it records again. The drift of a running `serve`
itself is tested in tests/interface/test_two_instances.py; here the watch's clock is the real
one plus an offset this test sets, against a real PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from application.chain import AuditKey
from application.clock import ClockSkewed, ClockWatch

pytestmark = pytest.mark.postgres


@pytest.fixture(params=["postgres"])
def database_url(request):
    return request.getfixturevalue("primed_schema_url")


def test_recording_stops_while_the_clock_is_out_of_step_and_resumes_once_it_agrees(app, workspace):
    offset = timedelta(0)
    app.clock_watch = ClockWatch(app.recorder, every=0, clock=lambda: datetime.now(UTC) + offset)
    assert app.evaluation.evaluate(workspace, "python", ["pandas"])["allowed"]
    recorded = app.audit.decisions(workspace)["decisions"]

    offset = timedelta(seconds=-5)
    with pytest.raises(ClockSkewed, match=r"5\.0 s behind PostgreSQL's.*nothing was recorded"):
        app.evaluation.evaluate(workspace, "python", ["numpy"])
    with pytest.raises(ClockSkewed):  # a Save too: every recording
        app.save_policy(workspace, {"python": {"mode": "allowlist"}}, by="admin")
    app.chain.use_key(AuditKey.generate())
    with pytest.raises(ClockSkewed):  # and a checkpoint, which this clock would date
        app.chain.checkpoint(workspace)
    assert app.audit.decisions(workspace)["decisions"] == recorded
    assert app.policy(workspace)["python"]["mode"] == "denylist"

    offset = timedelta(seconds=0.2)  # within a second: in step
    assert app.evaluation.evaluate(workspace, "python", ["numpy"])["allowed"]
    assert len(app.audit.decisions(workspace)["decisions"]) == len(recorded) + 1
    assert app.chain.checkpoint(workspace)["seq"] >= 1
