"""The decision-count tables: how many decisions per day, package, outcome and sandbox.

Written with the decisions they count (see `application.store.counts`), read by overviews and by
impact. Kept apart from `schema` so the tables of this read model are defined in one place.
"""

from __future__ import annotations

COUNT_TABLES = (
    "decision_counts",
    "impact_names",
    "impact_sandboxes",
    "impact_days",
    "outcome_days",
    "impact_versions",
)

COUNT_DDL = (
    # One row per (workspace, UTC day, language, name, outcome, sandbox, kind); see
    # `Impact.decision_counts`. `language` is 'egress' for egress decisions (name = host). `kind`
    # is the decision's (`domain.decision.DECISION_KINDS`): a name's registry installs and its
    # direct references (url, vcs, path) are judged apart, so they are counted apart.
    "CREATE TABLE IF NOT EXISTS {decision_counts} (workspace TEXT NOT NULL, day TEXT NOT NULL, "
    "language TEXT NOT NULL, name TEXT NOT NULL, allowed {bool} NOT NULL, sandbox TEXT NOT NULL, "
    "kind TEXT NOT NULL, installs INTEGER NOT NULL, "
    "PRIMARY KEY (workspace, day, language, name, allowed, sandbox, kind)){norowid}",
    # The overview's most-denied lists read only the denied rows of their week (a few hundred
    # among hundreds of thousands at 1M decisions): its queries say `allowed = FALSE`, as here.
    "CREATE INDEX IF NOT EXISTS rcp_denied_counts ON {decision_counts} (workspace, day, language, name, sandbox, "
    "installs) WHERE allowed = FALSE",
    # What impact reads (python/node decisions that name a package): installs per day, name and
    # kind (what a draft judges: `domain.decision.judge`), and the last day each sandbox
    # installed each name by each kind. Both stay small however many decisions are recorded: one
    # row per package in use, kind and day, one per package, kind and sandbox.
    "CREATE TABLE IF NOT EXISTS {impact_names} (workspace TEXT NOT NULL, day TEXT NOT NULL, "
    "language TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, installs INTEGER NOT NULL, "
    "PRIMARY KEY (workspace, day, language, name, kind)){norowid}",
    # `prev_day`: the last day before `last_day` it was installed ('': never), so the pairs that
    # are new to a period today are one index range, not every pair seen today.
    "CREATE TABLE IF NOT EXISTS {impact_sandboxes} (workspace TEXT NOT NULL, language TEXT NOT NULL, "
    "name TEXT NOT NULL, kind TEXT NOT NULL, sandbox TEXT NOT NULL, last_day TEXT NOT NULL, prev_day TEXT, "
    "PRIMARY KEY (workspace, language, name, kind, sandbox)){norowid}",
    "CREATE INDEX IF NOT EXISTS rcp_impact_sandboxes_by_day ON {impact_sandboxes} (workspace, last_day, prev_day)",
    # Installs per workspace and day: a period's past days are checked in a few seeks before a
    # cached sum over them is trusted (see `application.impact`).
    "CREATE TABLE IF NOT EXISTS {impact_days} (workspace TEXT NOT NULL, day TEXT NOT NULL, "
    "installs INTEGER NOT NULL, PRIMARY KEY (workspace, day)){norowid}",
    # Every decision (egress included) per workspace, day and outcome: the overview's day bars
    # read two rows a day, not every (name, sandbox) key of the period.
    "CREATE TABLE IF NOT EXISTS {outcome_days} (workspace TEXT NOT NULL, day TEXT NOT NULL, "
    "allowed {bool} NOT NULL, installs INTEGER NOT NULL, PRIMARY KEY (workspace, day, allowed)){norowid}",
    # What the rules beyond names judge (`domain.rules`), for impact previews of drafted rules:
    # downloads through the package index per day, version (python: wheel or sdist), sandbox and
    # outcome, with the facts the index judged at the day's first fetch (`version` '' : the file's
    # name says none; `uploaded_at` '' : none given; `install_scripts` 'true', 'false' or '' : not
    # known) and that fetch's instant. The overview's malware exposures read its allowed rows (what
    # was delivered).
    "CREATE TABLE IF NOT EXISTS {impact_versions} (workspace TEXT NOT NULL, day TEXT NOT NULL, "
    "language TEXT NOT NULL, name TEXT NOT NULL, version TEXT NOT NULL, sdist {bool} NOT NULL, "
    "sandbox TEXT NOT NULL, allowed {bool} NOT NULL, uploaded_at TEXT NOT NULL, install_scripts TEXT NOT NULL, "
    "first_at TEXT NOT NULL, installs INTEGER NOT NULL, "
    "PRIMARY KEY (workspace, day, language, name, version, sdist, sandbox, allowed)){norowid}",
    # A few packages' rows of a period (those an advisory names): one range each, not the period's.
    "CREATE INDEX IF NOT EXISTS rcp_impact_versions_by_name ON {impact_versions} (workspace, language, name, day)",
)
