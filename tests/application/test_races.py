"""The one retry rule (application.races): only a lost race is planned again, and a lost race is
the events' own IntegrityError on every store."""

from __future__ import annotations

import pytest
from eventsourcing.persistence import OperationalError

from application.races import LOST_RACE, saved
from domain.edits import plan_incremental

ADD = [{"action": "add", "language": "python", "list": "deny", "entries": ["late"]}]


def test_a_lost_race_is_the_events_own_integrity_error_on_every_store(open_app, workspace):
    winner, loser = open_app(), open_app()
    stale = [loser.policies.load_policy(workspace), loser.policies.load_policy(workspace)]
    winner.change_policy(workspace, [{**ADD[0], "entries": ["first"]}], by="winner")
    for policy in stale:
        policy.record(plan_incremental(policy.state, ADD, policy.egress), "loser", "")
    with pytest.raises(LOST_RACE):
        loser.save(stale[0])
    assert not saved(loser.save, stale[1])  # told to plan again, nothing written
    assert loser.policy(workspace)["python"]["deny"] == ["first"]


def test_a_store_error_is_not_a_lost_race_whatever_its_text():
    def failing(*aggregates):
        raise OperationalError("pipeline aborted")  # an unreachable store, not a race

    with pytest.raises(OperationalError):
        saved(failing)
