"""What a 3-day cooldown would have hidden over the bench's decision history (1M downloads,
smaller under --quick), recorded as the index records them (each with its version's facts), and
how long the impact preview takes to say it: `impact_cooldown` (Impact.impact, what
POST /impact answers, with a draft adding `min_release_age: P3D`), divided by `impact_names`, the
same preview of a draft without rules over the same store in the same run (names only: no
version rollup read)."""

from __future__ import annotations

from bench import history
from bench.auditor import _size, _sizes, kept_history, latency, timed
from bench.figures import Result, figure

DAYS = 30
COOLDOWN = {"python": {"rules": {"min_release_age": {"age": "P3D"}}}}
NAMES_ONLY = {"python": {"deny": "pkg-7, pkg-70"}}
SAMPLES = 7  # a full-size preview takes seconds: a few samples, in --quick too


def download_history(run):
    """The Governance over the run's download history, written once through the group-commit writer."""
    return kept_history(run, "downloads", "downloads with their versions' facts", history.downloads)


def _preview(run, draft: dict) -> tuple[list[float], dict]:
    governance = download_history(run)
    answer = governance.impacts.impact("bench", draft, DAYS)  # a warm-up: fills the per-process caches
    return [timed(governance.impacts.impact, "bench", draft, DAYS) for _ in range(SAMPLES)], answer


@figure("impact_cooldown", ceiling="impact_names")
def impact_cooldown(run) -> Result:
    samples, answer = _preview(run, COOLDOWN)
    hidden = answer["would_hide"]
    installs = sum(v["installs"] for v in hidden)
    packages = len({v["name"] for v in hidden})
    size = _size(_sizes(run)[1])
    return latency(
        samples,
        f"ms p50 (a {DAYS}-day impact of a 3-day cooldown over {size} downloads: would hide {installs:,}"
        f" downloads of {len(hidden):,} versions of {packages:,} packages)",
    )


@figure("impact_names")
def impact_names(run) -> Result:
    samples, _ = _preview(run, NAMES_ONLY)
    return latency(
        samples, f"ms p50 (a {DAYS}-day impact of a names-only draft, same {_size(_sizes(run)[1])} downloads)"
    )
