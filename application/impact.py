"""Decision counts for overviews, and what a draft would change, from the decision-count read
model (never a replay of decisions).

For impact, every recorded install of a named package in the period is judged again, by name
and kind (a registry name, or a direct reference: url, vcs, path), under the saved policy and
under the draft (both at this instant, exceptions included), as `judge` judges a spec of that
kind: the installs of a package and kind whose outcome differs move to `would_deny` or
`would_allow`. The read model holds one row per package, kind and day and one per package, kind
and sandbox, so the cost follows the number of packages in use, not the number of decisions
recorded. When either side has rules beyond names, or the draft changes the word on known
malware, the downloads of the period (registry fetches through the index: the only decisions
that record a version's facts) are judged again per version too (`would_hide`, `would_show`),
from one row per version, day and sandbox, as the index judges them
(`application.index.versions`: known malware first; a file whose name says no version is hidden
whenever anything judges its project's versions).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache

from application.advisories import Advisories
from application.clock import Clock, system_clock
from application.index.versions import judge_facts, judge_unknown
from application.policies import Policies
from application.store.counts import CountReads
from domain.decision import judge
from domain.errors import FieldError, InvalidInputError
from domain.policy import LanguageRules, shadowed_entries
from domain.rules import MONITOR, VersionFacts, ripens_at
from domain.specs import Spec

MAX_DAYS = 366


class Impact:
    def __init__(self, policies: Policies, counts: CountReads, advisories: Advisories, clock: Clock = system_clock):
        self.policies = policies
        self.counts = counts
        self.advisories = advisories
        self.clock = clock
        self._periods: dict[tuple[str, str, str], _Period] = {}  # (workspace, first day, today)
        self._verdicts: dict[str, tuple[int, dict]] = {}  # workspace -> (version, answers by name)
        self._lock = threading.Lock()

    def decision_counts(
        self, workspace: str, start_day: str, end_day: str, language: str | None = None, allowed: bool | None = None
    ) -> list[dict]:
        """Recorded decisions counted per UTC day, for overviews (and, summed, for impact).

        `start_day` and `end_day` are inclusive `YYYY-MM-DD` days (UTC). Returns plain rows
        `{"day", "language", "name", "allowed", "sandbox", "installs"}` ordered by day, language,
        name, allowed, sandbox, one per distinct key. `language` is `python`, `node`, or `egress`
        for egress decisions (whose `name` is the host); `name` is the canonical package name,
        `''` when the decision named none (invalid specs, options, direct references of unknown
        name); `sandbox` is the decision's `context.sandbox`, `''` when absent; `installs` is how
        many decisions had that key. Rows are written in the decisions' own transaction, so they
        always agree with `/decisions`. Filters: `language` (one of the three) and `allowed`.
        """
        self.policies.require_workspace(workspace)
        start, end = _day(start_day, "start_day"), _day(end_day, "end_day")
        return self.counts.decision_counts(workspace, start, end, language, allowed)

    def impact(self, workspace: str, draft: dict, days: int = 30) -> dict:
        """`{"days", "from", "would_deny": [{"language", "name", "installs", "sandboxes"}],
        "would_allow": [...], "unchanged": N}` over the installs of the last `days` UTC days."""
        if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
            raise InvalidInputError("days out of range", [FieldError("days", f"must be 1 to {MAX_DAYS}")])
        with self.counts.within_one_seal():
            return self._impact(workspace, draft, days)

    def _impact(self, workspace: str, draft: dict, days: int) -> dict:
        now = self.clock()
        version, saved = self.policies.current(workspace, now)
        _, drafted = self.policies.draft_rules(workspace, draft, now)
        start = first_day(days, now)
        installs, sandboxes = self._period(workspace, start, now.date().isoformat())
        moved: dict[str, list] = {"would_deny": [], "would_allow": []}
        unchanged = 0
        verdicts = self._saved_verdicts(workspace, version)
        for key, n in installs.items():
            language, name, kind = key
            spec = _spec(language, name, kind)
            before = verdicts.get(key) if name not in saved[language].exceptions else None
            if before is None:  # an exception's answer depends on the instant: never kept
                before = verdicts.setdefault(key, judge(saved[language], spec, workspace).allowed)
                if name in saved[language].exceptions:
                    del verdicts[key]
            if before == judge(drafted[language], spec, workspace).allowed:
                unchanged += n
            else:
                moved["would_deny" if before else "would_allow"].append((key, n))
        changed = {side: _packages(rows, sandboxes) for side, rows in moved.items()}
        answer = {"days": days, "from": start, **changed, "unchanged": unchanged, "shadowed": shadowed_entries(drafted)}
        # the word on malware is one for both languages: when the draft changes it, the versions
        # an advisory affects move, among the packages an advisory names
        malware = saved["python"].known_malware != drafted["python"].known_malware
        if malware or any(saved[lang].version_rules or drafted[lang].version_rules for lang in saved):
            named = self.advisories.named(dict.fromkeys(key[:2] for key in installs)) if malware else []
            answer |= self._versions_moved(workspace, saved, drafted, start, now.date().isoformat(), named)
        return answer

    def _versions_moved(
        self, workspace: str, saved: dict, drafted: dict, start: str, today: str, named: list[tuple[str, str]]
    ) -> dict:
        """The downloads of the period that the draft's rules beyond names or its word on known
        malware would have hidden and the saved ones did not (`would_hide`), and the reverse
        (`would_show`): each version judged by both with the facts known at its day's first
        fetch, at that instant. Only what the draft can move is read: every download of the
        languages whose rules it changes, and those of the `named` (language, name) packages."""
        moved: dict[str, dict[tuple, list]] = {"would_hide": {}, "would_show": {}}
        languages = [lang for lang in saved if saved[lang].version_rules != drafted[lang].version_rules]
        rows = self.counts.fetched_versions(workspace, start, today, languages) if languages else []
        rows += self.counts.fetched_versions(workspace, start, today, names=[p for p in named if p[0] not in languages])
        judged = _Judged(saved, drafted, self.advisories)
        for row in rows:
            change = judged.move(row)
            if change is None:
                continue
            found = moved[change[0]].setdefault((row["language"], row["name"], row["version"], change[1]), [0, set()])
            found[0] += int(row["installs"])
            if row["sandbox"]:
                found[1].add(row["sandbox"])
        return {
            side: [
                {"language": k[0], "name": k[1], "version": k[2], "reason": k[3], "installs": n, "sandboxes": len(s)}
                for k, (n, s) in sorted(found.items(), key=_most_first)
            ]
            for side, found in moved.items()
        }

    def _saved_verdicts(self, workspace: str, version: int) -> dict:
        """The saved policy's answers by name and kind, kept while its version stands (one per workspace)."""
        with self._lock:
            kept = self._verdicts.get(workspace)
            if kept is None or kept[0] != version:
                kept = self._verdicts[workspace] = (version, {})
        return kept[1]

    def installs(self, workspace: str, start: str, today: str) -> dict[tuple[str, str], int]:
        """Installs per (language, name) over [start, today], all kinds: the kept sums of the days
        before today (see `_past`) and today's."""
        installs: dict[tuple[str, str], int] = {}
        for (language, name, _), n in self._with_today(self._past(workspace, start, today), workspace, today).items():
            installs[(language, name)] = installs.get((language, name), 0) + n
        return installs

    def _period(self, workspace: str, start: str, today: str) -> tuple[dict, dict]:
        """Installs and sandboxes per (language, name, kind) over [start, today]."""
        known = self._past(workspace, start, today)
        new = _grouped(self.counts.sandboxes_new_today(workspace, start, today))
        return self._with_today(known, workspace, today), _Union(known.sandboxes, new)

    def _with_today(self, known: _Period, workspace: str, today: str) -> dict[tuple[str, str, str], int]:
        installs = dict(known.installs)
        for key, n in _summed(self.counts.installs_by_name(workspace, today, today)).items():
            installs[key] = installs.get(key, 0) + n
        return installs

    def _past(self, workspace: str, start: str, today: str) -> _Period:
        """The sums over [start, today) of a period. Those days no longer change (decisions are
        stamped when made), so the sums are kept per process and read again only when a few seeks
        show those days moved (a write that committed late)."""
        past = self.counts.day_installs(workspace, start, _yesterday(today))
        key = (workspace, start, today)
        with self._lock:
            known = self._periods.get(key)
        if known is None or known.past_installs != past:
            known = _Period(
                past,
                _summed(self.counts.installs_by_name(workspace, start, _yesterday(today))),
                _grouped(self.counts.sandboxes_since(workspace, start)),
            )
            with self._lock:
                self._periods = {k: v for k, v in self._periods.items() if k[1:] == key[1:]} | {key: known}
        return known

    def denied_recently(self, workspace: str, language: str, name: str, days: int = 30) -> int:
        """Denied decisions of one package over the last `days` UTC days, today included."""
        return self.counts.denied_installs(workspace, first_day(days, self.clock()), language, name)


@dataclass(frozen=True)
class _Period:
    """Sums over a period's days before today, per (language, name, kind), and the installs they
    were checked against."""

    past_installs: int
    installs: dict[tuple[str, str, str], int]
    sandboxes: dict[tuple[str, str, str], frozenset[str]]


class _Union:
    """The sandboxes of a package and kind: those of the days before today, and those new today."""

    def __init__(self, past: dict, new: dict):
        self.past, self.new = past, new

    def get(self, key, default=frozenset()):
        new = self.new.get(key)
        return self.past.get(key, default) | new if new else self.past.get(key, default)


class _Judged:
    """What the draft changes of one rollup row: `("would_hide" | "would_show", reason)` or None.

    The rows of a version (one per day and sandbox) share its facts and the advisories affecting
    it, and the instant of a row matters only as it falls before or after the version ripens
    under each side's rules (`ripens_at`): each version's facts are judged once per side of those
    instants, not once per row."""

    def __init__(self, saved: dict, drafted: dict, advisories: Advisories):
        self.saved, self.drafted, self.advisories = saved, drafted, advisories
        self._facts: dict[tuple, tuple] = {}  # facts key -> (facts, advisories, ripe before, ripe after)
        self._moves: dict[tuple, tuple[str, str] | None] = {}  # (facts key, ripe?, ripe?) -> move

    def move(self, row: dict) -> tuple[str, str] | None:
        language, name = row["language"], row["name"]
        key = (language, name, row["version"], row["sdist"], row["uploaded_at"], row["install_scripts"])
        known = self._facts.get(key)
        if known is None:
            facts = _facts(row)
            known = self._facts[key] = (
                facts,
                self.advisories.affecting(language, name, facts.version) if facts.version is not None else [],
                ripens_at(self.saved[language].version_rules, language, name, facts),
                ripens_at(self.drafted[language].version_rules, language, name, facts),
            )
        facts, affecting, ripe_before, ripe_after = known
        at = datetime.fromisoformat(row["first_at"]) if ripe_before or ripe_after else None
        side = (key, ripe_before is None or at >= ripe_before, ripe_after is None or at >= ripe_after)
        if side not in self._moves:
            at = at or datetime.fromisoformat(row["first_at"])
            sides = (self.saved[language], self.drafted[language])
            before, after = (_hiding(rules, self.advisories, affecting, name, facts, at) for rules in sides)
            self._moves[side] = (
                None
                if bool(before) == bool(after)
                else ("would_hide", after[0])
                if after
                else ("would_show", before[0])
            )
        return self._moves[side]


def _most_first(item: tuple) -> tuple:
    """Most installs first, then by language, name, version (None, unknown, first) and reason."""
    (language, name, version, reason), (installs, _) = item
    return -installs, language, name, version or "", reason


def _facts(row: dict) -> VersionFacts:
    uploaded = datetime.fromisoformat(row["uploaded_at"].replace("Z", "+00:00")) if row["uploaded_at"] else None
    scripts = {"true": True, "false": False}.get(row["install_scripts"])
    return VersionFacts(row["version"], uploaded, scripts, bool(row["sdist"]))


def _hiding(
    rules: LanguageRules, advisories: Advisories, affecting: list[str], name: str, facts: VersionFacts, at: datetime
) -> list[str]:
    """The reasons one side's rules hide a version for, as the index judges it (monitored
    findings hide nothing; a file whose name says no version is hidden whenever anything judges
    the project's versions)."""
    if facts.version is None:
        judged = judge_unknown(rules, advisories, name, facts, "")
    else:
        monitored = rules.known_malware == MONITOR
        judged = judge_facts(rules.version_rules, affecting, rules.language, name, facts, at, monitored)
    return [f.reason for f in judged.hiding]


@lru_cache(maxsize=65536)
def _spec(language: str, name: str, kind: str) -> Spec:
    """What a recorded install of `name` by `kind` is judged as: `judge` reads a spec's kind and
    name only (a direct reference is refused in allowlist mode whatever its name)."""
    return Spec(name, language, kind, name)


def _summed(rows: list[dict]) -> dict[tuple[str, str, str], int]:
    return {(r["language"], r["name"], r["kind"]): int(r["installs"]) for r in rows}


def _grouped(rows: list[dict]) -> dict[tuple[str, str, str], frozenset[str]]:
    found: dict[tuple[str, str, str], set[str]] = {}
    for row in rows:
        found.setdefault((row["language"], row["name"], row["kind"]), set()).add(row["sandbox"])
    return {k: frozenset(v) for k, v in found.items()}


def _yesterday(day: str) -> str:
    return (date.fromisoformat(day) - timedelta(days=1)).isoformat()


def _packages(rows: list[tuple[tuple[str, str, str], int]], sandboxes: dict) -> list[dict]:
    """One entry per package: the installs of its kinds that move one way, and the sandboxes
    that installed it by one of those kinds."""
    found: dict[tuple[str, str], dict] = {}
    for (language, name, kind), n in rows:
        package = found.get((language, name))
        if package is None:
            found[(language, name)] = {
                "language": language,
                "name": name,
                "installs": n,
                "sandboxes": sandboxes.get((language, name, kind)),
            }
        else:
            package["installs"] += n
            package["sandboxes"] = package["sandboxes"] | sandboxes.get((language, name, kind))
    for package in found.values():
        package["sandboxes"] = len(package["sandboxes"])
    return sorted(found.values(), key=lambda p: (-p["installs"], p["language"], p["name"]))


def first_day(days: int, now: datetime) -> str:
    """The first UTC day of a period of `days` days that ends on `now`'s day."""
    return (now - timedelta(days=days - 1)).date().isoformat()


def _day(text: str, field: str) -> str:
    try:
        if isinstance(text, str) and len(text) == 10:
            return date.fromisoformat(text).isoformat()
    except ValueError:
        pass
    raise InvalidInputError(f"{field} is not a day", [FieldError(field, "must be a date such as 2026-03-03")])
