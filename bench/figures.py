"""The registry of figures: what each measures, in which unit, against which ceiling.

Two kinds of figure register here:
- a `LoadFigure` is a request driven by wrk against one of the run's servers; the runner
  interleaves every load figure in rounds (ceilings included) and keeps the median, so a
  figure and its ceiling meet the same noise;
- a `Figure` is a function of the run (in-process queries, parsing) returning a `Result`.

Features built elsewhere plug in by registering their own figure from a module listed in
`bench.__main__.MODULES` (e.g. `bench/index.py` for `index_page`). Until then `pending` keeps
their names in the report, skipped with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench.load import Request


@dataclass
class Result:
    value: float
    unit: str
    p50_ms: float | None = None
    p99_ms: float | None = None
    ratio: float | None = None
    cpu: tuple[float, float] | None = None  # ms of CPU per decision: (server processes, PostgreSQL)

    @property
    def cpu_ms_per_decision(self) -> float | None:
        return None if self.cpu is None else round(sum(self.cpu), 3)

    def as_json(self) -> dict:
        shown = {
            "value": self.value,
            "unit": self.unit,
            "ratio": self.ratio,
            "p50_ms": self.p50_ms,
            "p99_ms": self.p99_ms,
        }
        if self.cpu is not None:
            shown["cpu_ms_per_decision"] = self.cpu_ms_per_decision
        return shown


@dataclass(frozen=True)
class Figure:
    name: str
    measure: Callable  # (run) -> Result
    ceiling: str | None = None  # the figure whose value this one is divided by
    skip: Callable[[], str | None] = lambda: None  # a reason to skip (a feature not in this tree)


@dataclass(frozen=True)
class LoadFigure:
    name: str
    server: str  # ceiling, service-pg, service-sqlite, or a key of bench.servers.STARTERS
    request: Callable  # (run) -> Request, built once the run's store is prepared
    unit: str
    per_request: int = 1  # decisions per request, for figures counted in decisions/s
    ceiling: str | None = None
    recorded_specs: int = 0  # decisions each answered request must leave in the store
    cpu: bool = False  # measure CPU per decision (the server's tree and its PostgreSQL backends)

    skip = staticmethod(lambda: None)


REGISTRY: dict[str, Figure | LoadFigure] = {}


def register(item: Figure | LoadFigure) -> Figure | LoadFigure:
    if item.name in REGISTRY:
        raise ValueError(f"figure {item.name!r} registered twice")
    REGISTRY[item.name] = item
    return item


def figure(name: str, ceiling: str | None = None, skip: Callable[[], str | None] = lambda: None):
    """Decorator: `@figure("parse")` over `def parse(run) -> Result`."""

    def decorate(measure: Callable) -> Callable:
        register(Figure(name, measure, ceiling, skip))
        return measure

    return decorate


def pending(name: str, why: str) -> None:
    """A figure named by the issue whose feature is not in this tree yet: reported as skipped."""
    if name not in REGISTRY:
        register(Figure(name, _absent, skip=lambda: why))


def _absent(run) -> Result:
    raise AssertionError("a pending figure is never measured")


def ratios(results: dict[str, Result]) -> None:
    """Each figure divided by its ceiling from the same run (None when either is missing)."""
    for name, result in results.items():
        ceiling = REGISTRY[name].ceiling
        base = results.get(ceiling) if ceiling else None
        if base is not None and base.value:
            result.ratio = round(result.value / base.value, 3)


__all__ = ["Figure", "LoadFigure", "REGISTRY", "Request", "Result", "figure", "pending", "ratios", "register"]
