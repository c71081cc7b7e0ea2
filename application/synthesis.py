"""Allowlists synthesised from the record: the smallest list of names that would have allowed a
requested share of a period's allowed decisions, with the impact of switching to it.

Each name covers exactly its own decisions, so taking names by weight, heaviest first, until the
share is reached gives a smallest list (no other list of that length covers more). The weights
come from the decision counts (one row per day, name, outcome and sandbox), never from the
decisions themselves, so the cost follows the names in use and not the number of decisions.

`by="installs"` weighs a name by its allowed decisions; `by="sandboxes"` by the sandboxes that
were allowed it (one sandbox installing it a thousand times weighs one; decisions that name no
sandbox count as one sandbox). Decisions that name nothing (an invalid spec, a direct reference
of unknown name) count in the total and no list can cover them; nor can a direct reference that
names its package (url, vcs, path: refused in allowlist mode whatever the list says,
`domain.decision.judge`), which is why the counts keep each decision's kind; nor can a name the
draft's deny list denies (the deny list wins over the allow list), so such names are never
proposed and are answered in `denied`.
"""

from __future__ import annotations

from datetime import UTC, datetime

from application.impact import MAX_DAYS, Impact, first_day
from application.policies import Policies
from application.store.counts import CountReads
from domain.decision import DIRECT_KINDS
from domain.errors import RULES_NAMED, FieldError, InvalidInputError
from domain.specs import LANGUAGES

EGRESS = "egress"
SYNTHESIS_LANGUAGES = (*LANGUAGES, EGRESS)
WEIGHTS = ("installs", "sandboxes")


class Synthesis:
    def __init__(self, counts: CountReads, impacts: Impact, policies: Policies):
        self.counts = counts
        self.impacts = impacts
        self.policies = policies

    def synthesise(
        self,
        workspace: str,
        language: str,
        days: int = 30,
        coverage: float = 0.99,
        by: str = "installs",
        draft: dict | None = None,
    ) -> dict:
        """`{"language", "by", "days", "from", "allow", "denied", "coverage", "covered", "total",
        "impact"}`: `coverage` is `covered / total` (1.0 when the period allowed nothing);
        `denied` the recorded names the draft denies, left out; `impact` is what `POST /impact`
        answers for the draft (for egress, the hosts it would deny). `draft` holds unsaved edits
        the list is for (the console's form); by default it is the saved policy."""
        _check(language, days, coverage, by)
        self.policies.require_workspace(workspace)
        with self.counts.within_one_seal():  # the allowlist and its impact from the same counts
            return self._synthesised(workspace, language, days, coverage, by, draft or {})

    def _synthesised(self, workspace: str, language: str, days: int, coverage: float, by: str, base: dict) -> dict:
        now = datetime.now(UTC)
        start = first_day(days, now)
        rows = self.counts.allowed_by_name_and_sandbox(workspace, start, now.date().isoformat(), language)
        weights, total = _weights(rows, by)
        weights.pop("", None)  # decisions that name nothing stay in the total; no entry covers them
        denied: list[str] = []
        if language != EGRESS:  # denied names stay in the total too: no allow entry covers them
            _, drafted = self.policies.draft_rules(workspace, _switched(base, language, []), now)
            denied = sorted(name for name in weights if drafted[language].denies(name))
            for name in denied:
                del weights[name]
        allow, covered = [], 0
        for name, weight in sorted(weights.items(), key=lambda item: (-item[1], item[0])):
            if total and covered / total >= coverage:
                break
            allow.append(name)
            covered += weight
        answer = {
            "language": language,
            "by": by,
            "days": days,
            "from": start,
            "allow": sorted(allow),
            "denied": denied,
            "coverage": covered / total if total else 1.0,
            "covered": covered,
            "total": total,
        }
        if language == EGRESS:  # a draft of the workspace's egress allowlist
            draft = {EGRESS: {"allow": sorted(allow)}}
            return {**answer, "draft": draft, "impact": _egress_impact(rows, set(allow), days, start)}
        draft = _switched(base, language, sorted(allow))
        return {**answer, "draft": draft, "impact": self.impacts.impact(workspace, draft, days)}


def _switched(base: dict, language: str, allow: list[str]) -> dict:
    """The draft with `language` switched to Allowlist with `allow` (its deny list as drafted)."""
    return {**base, language: {**base.get(language, {}), "mode": "allowlist", "allow": allow}}


def _weights(rows: list[dict], by: str) -> tuple[dict[str, int], int]:
    """What an allow entry for each name would cover (its allowed installs, or the sandboxes
    allowed it, by the kinds an allow list vouches for), and the total over every allowed row:
    direct references stay in the total, as no entry covers them."""
    weights: dict[str, int] = {}
    if by == "installs":
        for row in rows:
            if row["kind"] not in DIRECT_KINDS:
                weights[row["name"]] = weights.get(row["name"], 0) + row["installs"]
        return weights, sum(row["installs"] for row in rows)
    pairs = {(row["name"], row["sandbox"]) for row in rows}  # a sandbox weighs once, whatever its kinds
    for name, _ in {(row["name"], row["sandbox"]) for row in rows if row["kind"] not in DIRECT_KINDS}:
        weights[name] = weights.get(name, 0) + 1
    return weights, len(pairs)


def _egress_impact(rows: list[dict], allow: set[str], days: int, start: str) -> dict:
    """The hosts a workspace egress allowlist of `allow` would have denied, as impact shows packages."""
    denied: dict[str, dict] = {}
    unchanged = 0
    for row in rows:
        if row["name"] in allow:
            unchanged += row["installs"]
            continue
        host = denied.setdefault(row["name"], {"language": EGRESS, "name": row["name"], "installs": 0, "sandboxes": 0})
        host["installs"] += row["installs"]
        host["sandboxes"] += 1 if row["sandbox"] else 0
    would_deny = sorted(denied.values(), key=lambda h: (-h["installs"], h["name"]))
    return {"days": days, "from": start, "would_deny": would_deny, "would_allow": [], "unchanged": unchanged}


def _check(language, days, coverage, by) -> None:
    errors = []
    if language not in SYNTHESIS_LANGUAGES:
        errors.append(FieldError("language", f"must be one of {', '.join(SYNTHESIS_LANGUAGES)}"))
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
        errors.append(FieldError("days", f"must be 1 to {MAX_DAYS}"))
    if isinstance(coverage, bool) or not isinstance(coverage, int | float) or not 0 < coverage <= 1:
        errors.append(FieldError("coverage", "must be a share above 0 and at most 1, such as 0.99"))
    if by not in WEIGHTS:
        errors.append(FieldError("by", f"must be one of {', '.join(WEIGHTS)}"))
    if errors:
        raise InvalidInputError(f"the synthesis request {RULES_NAMED}", errors)
