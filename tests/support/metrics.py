"""Reading /metrics as numbers, so a test asserts what one action added to a counter.

The registry is global to the process and other tests in the same worker count into it too, so
"this series exists" proves nothing: a test reads every sample before and after its action and
compares the difference with exactly what the action should have counted.
"""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def samples(live) -> dict[tuple, float]:
    """Every sample of the scrape, keyed by (sample name, sorted label pairs)."""
    reply = live.call("GET", "/metrics")
    assert reply.status == 200, reply.body
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(reply.body.decode())
        for s in family.samples
    }


def added(before: dict, after: dict, name: str) -> dict[tuple, float]:
    """What changed in the samples called `name` between two scrapes: {label pairs: increase}."""
    keys = {k for k in (*before, *after) if k[0] == name}
    changes = {k[1]: after.get(k, 0.0) - before.get(k, 0.0) for k in keys}
    return {labels: change for labels, change in changes.items() if change}


def labels(**pairs: str) -> tuple:
    return tuple(sorted(pairs.items()))
