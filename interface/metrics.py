"""Prometheus metrics: decisions by outcome and reason, request latency by endpoint.

Every label takes values from a closed set (methods, route rules, status codes the app sends):
an unauthenticated caller must not be able to grow /metrics with a made-up method token. Under
several worker processes (`serve`) the values live in PROMETHEUS_MULTIPROC_DIR, one file per
process, and a scrape sums them all: one scrape sees the whole service.
"""

from __future__ import annotations

import os
import time

from flask import Flask, g, request
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.multiprocess import MultiProcessCollector

# Every method a route here answers, and the ones HTTP clients commonly send; anything else is
# counted as "other".
METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))
REGISTRY = CollectorRegistry()
DECISIONS = Counter("runcode_policy_decisions", "Recorded decisions", ["kind", "outcome", "reason"], registry=REGISTRY)
LATENCY = Histogram(
    "runcode_policy_request_seconds",
    "Request latency",
    ["method", "endpoint", "status"],
    registry=REGISTRY,
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)


INDEX = Counter(
    "runcode_policy_index_fetches",
    "Package-index fetches judged, and whether a new decision was recorded or a run's earlier one reused",
    ["language", "request", "outcome", "recorded"],
    registry=REGISTRY,
)

# State found not to match the sealed record while answering, and not used (application.chain.alarms).
INTEGRITY = Counter(
    "runcode_policy_integrity_alarms",
    "Stored state found not to match the audit chain while answering, and so not used, by kind",
    ["kind"],
    registry=REGISTRY,
)


def count_integrity_alarms(alarms) -> None:
    """Count each alarm the application raises (once, however many apps share the governance)."""
    if _count_integrity not in alarms.listeners:
        alarms.listeners.append(_count_integrity)


def _count_integrity(kind: str) -> None:
    INTEGRITY.labels(kind).inc()


def count_index(verdict: dict, language: str, request: str) -> None:
    outcome = "allowed" if verdict["allowed"] else "denied"
    INDEX.labels(language, request, outcome, "new" if verdict["recorded"] else "repeat").inc()
    if verdict["recorded"]:
        DECISIONS.labels("registry", outcome, verdict["reason"]).inc()


def count_decisions(decisions: list[dict]) -> None:
    # One increment per distinct label set: each costs a lock and a shared-memory write.
    counted: dict[tuple[str, str, str], int] = {}
    for d in decisions:
        labels = (d["kind"], "allowed" if d["allowed"] else "denied", d["reason"])
        counted[labels] = counted.get(labels, 0) + 1
    for labels, count in counted.items():
        DECISIONS.labels(*labels).inc(count)


def method_label(method: str) -> str:
    return method if method in METHODS else "other"


def scrape_registry() -> CollectorRegistry:
    """This process's registry, or every worker's values when serving several processes
    (prometheus_client chose multiprocess values from the same variable when it was imported)."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    registry = CollectorRegistry()
    MultiProcessCollector(registry)
    return registry


def install(app: Flask) -> None:
    @app.before_request
    def _start():
        g.started = time.perf_counter()

    @app.after_request
    def _observe(response):
        if "started" in g:
            endpoint = request.url_rule.rule if request.url_rule else "unmatched"
            LATENCY.labels(method_label(request.method), endpoint, str(response.status_code)).observe(
                time.perf_counter() - g.started
            )
        return response
