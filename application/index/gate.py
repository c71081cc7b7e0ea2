"""Judging what a package client fetches through the index, and recording it once per run.

The rule and the policy are those of `/evaluate`: the same `judge` on the same cached policy
(one indexed version probe, then a dict lookup: O(1) in the size of the policy and of history),
and the decision is durable (group commit) before the client gets an answer.

Recording without drowning: a resolver fetches the same page many times while it backtracks.
Within a run (or, for a plain token, a window of `TOKEN_WINDOW_SECONDS`) one decision is kept
per (principal, language, project, request) - where a download's request includes its file
name - as long as the verdict and policy version stay the same. Repeats are counted, not
recorded again; a policy change in the middle of a run records the new verdict. Each worker
remembers what it recorded; across workers the store decides: a run's decision on a fetch has
an id derived from what it decides (`domain.decision.fetch_decision_id`), so a second worker's
copy is refused by the event store's key and that worker answers with the first.

A run fails closed at its first project denial: once a page, metadata or file of a project was
refused to a run, every later fetch of that run - of any project - is refused with reason
`run-failed`, naming that first denial (but for a repeat, in another worker, of a fetch that
worker already answered the run on the same policy: the client hears again what it was told,
nothing new, so no older release comes of it; this keeps a repeat free of any read but the
token's own). Otherwise a resolver reads the denial as "no versions of
that dependency" and back-tracks to an older release of its parent that lacks it. An API token
reading the index without a run fails the same way for `TOKEN_WINDOW_SECONDS` after its denial.
Root listings are not judged per project, so they fail nothing. Several workers share one
store, so "this run failed" is read from the store: whether the reader has a denied decision, one
seek of the run_decisions primary key in the same round trip as its token (`denials`), and the
first one only when there is; a failed run never un-fails, so a worker then remembers it and asks
the store no more (a token's failure until its window ends).

Versions are judged too (`versions_hidden`, and a file's own facts in `judge`): known malware and
the rules beyond names hide a version - never a denial of its project, so no run fails by it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from application.advisories import Advisories
from application.callers import Guard
from application.decision_writer import AlreadyRecorded, DecisionWriter
from application.index.listing import Listing, Listings, ListingSource
from application.index.memory import DEFAULT_MEMORY, IndexMemory
from application.index.versions import Hidden, Judgements, hidden, judge_all, judge_facts, judge_unknown, judges
from application.lru import SizedLru, weigh
from application.messages import render_message, unknown_version_message
from application.policies import Policies
from application.store.reads import Denials, ReadModel
from domain.decision import (
    INDEX_SOURCE,
    KNOWN_MALWARE,
    NOT_FOUND_UPSTREAM,
    RUN_FAILED,
    UPSTREAM_FAILED,
    VERSION_UNKNOWN,
    Decision,
    DecisionRecord,
    Verdict,
    another_projects_file,
    fetch_decision_id,
    judge,
    known_malware,
    not_found_upstream,
    run_failed,
    upstream_failed,
)
from domain.declared import BUNDLED_FIELDS, declared_record, each_declared, judging, version_label
from domain.errors import NotFoundError
from domain.limits import MAX_VERSION_DECISIONS
from domain.policy import LanguageRules
from domain.python_files import names_project
from domain.rules import MONITOR, VersionFacts, checks_install_scripts
from domain.rules import REASONS as RULE_REASONS
from domain.run import reader_key
from domain.specs import LANGUAGE_TITLES, Spec, parse
from domain.specs.pip import NAME_RE
from domain.text import check_text, quoted

REQUESTS = ("page", "metadata", "download")
TOKEN_WINDOW_SECONDS = 15 * 60
MAX_FILE_NAME = 255
MORE_HIDDEN = "more_hidden"  # in a decision's context: the versions its answer hid past MAX_VERSION_DECISIONS
FOREVER = datetime.max.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Principal:
    """Who asks the index: a run's token, or an API token that may evaluate."""

    workspace: str
    token: str  # the id of the API token (the run's starter, for runs)
    name: str
    role: str = "run"  # the API token's role, or "run" for a run's token
    run: str | None = None
    sandbox: str | None = None
    actor: str | None = None  # who asked, as the run's context names them (None: the token's name)
    expires: float | None = None  # monotonic deadline for a run's memory of its decisions
    head: int | None = None  # the workspace's policy head version, read with the token (no second read)
    # Whether the reader had a project denial when its token was read (`IndexGate.denials`, in the
    # same read); None: not asked then (the gate reads it when it needs it).
    denied: bool | None = None


# Refusals that are not project denials, so they fail no run: `run-failed` itself; a version
# hidden - known malware, or by a rule beyond names (application.index.versions) - while the
# project's other versions stay; a name the upstream does not have, an upstream that failed
# (nothing was refused by the policy; the client fails anyway).
VERSION_REFUSALS = (KNOWN_MALWARE, VERSION_UNKNOWN, *RULE_REASONS)
NOT_PROJECT_DENIALS = (RUN_FAILED, *VERSION_REFUSALS, NOT_FOUND_UPSTREAM, UPSTREAM_FAILED)


class IndexGate:
    def __init__(self, policies: Policies, writer: DecisionWriter, readmodel: ReadModel, advisories: Advisories):
        self._policies = policies
        self._advisories = advisories
        self._writer = writer
        self._readmodel = readmodel
        # (reader, fetch) -> (its outcome, its decision's id, until when it holds): recorded already
        self._seen: SizedLru[tuple, tuple] = SizedLru(DEFAULT_MEMORY.share("fetches"), weigh)
        # reader (domain.run.reader_key) -> (its first project denial, until when it holds: wall clock)
        self._failed: SizedLru[str, tuple[dict, datetime]] = SizedLru(DEFAULT_MEMORY.share("failures"), weigh)
        self._lock = threading.Lock()
        self._listings = Listings()
        # pages' hidden versions, by revision (application.index.versions)
        self._judgements = Judgements(DEFAULT_MEMORY.share("judgements"))

    def _memories(self) -> dict[str, SizedLru]:
        """This gate's memories, by their share of the index memory (application.index.memory)."""
        return {"fetches": self._seen, "failures": self._failed, "judgements": self._judgements.memory}

    def keep_within(self, memory: IndexMemory) -> None:
        """The deployment's index memory (interface.index.install): each memory within its share."""
        for share, kept in self._memories().items():
            kept.limit = memory.share(share)

    def weights(self) -> dict[str, int]:
        """The bytes this gate's memories hold, as weighed, by share."""
        return {share: kept.weight for share, kept in self._memories().items()}

    def judge(
        self,
        principal: Principal,
        language: str,
        name: str,
        request: str,
        file: str | None = None,
        package_version: str | None = None,
        facts: Callable[[], VersionFacts | None] | None = None,
    ) -> dict:
        """The verdict for one fetch; recorded unless this run already recorded the same one
        (in this worker's memory, or, for runs, in the store: see `_record`). A file of an
        allowed project is judged by its version's `facts` too (read only then: upstream is
        never asked for a refused project), however the client came by its URL."""
        version, rules = self._policies.current(principal.workspace, head=principal.head)
        spec = registry_spec(language, name)
        for field, value in (("file", file), ("package_version", package_version)):
            if value is not None:
                check_text(value, field, MAX_FILE_NAME)  # from the URL: bounded and printable before it is stored
        reader = reader_key(principal.run, principal.token)
        key = (reader, language, spec.name, request, file if request == "download" else None)
        # Asked first, for repeats too: a run that failed in another worker is refused everything
        # from then on, even a page this worker already served it.
        failed = self.failure(principal)
        verdict, context = self._verdict(rules[language], spec, principal, file, package_version, failed, facts)
        package_version = context.get("version", package_version)  # the version its facts say, when judged
        outcome = (verdict.allowed, verdict.reason, version)
        made = DecisionRecord.for_spec(spec, verdict, version, context)
        token = None if principal.run else principal.token
        record = made.fetched(request, principal.run, file, package_version if file is not None else None, token)
        message = render_message(record, principal.workspace)
        earlier = self._earlier(key, outcome)
        if earlier is not None:
            return _answer(verdict, message, version, earlier, recorded=False)
        decision_id, recorded = self._record(principal, key, outcome, record.to_dict())
        self._remember(key, outcome, decision_id, principal)
        if not verdict.allowed and verdict.reason not in NOT_PROJECT_DENIALS:
            self._fail(reader, record.to_dict(), datetime.now(UTC), principal)
        return _answer(verdict, message, version, decision_id, recorded=recorded)

    def _verdict(
        self, rules, spec: Spec, principal: Principal, file, package_version, failed, facts=None
    ) -> tuple[Verdict, dict]:
        """The verdict on one fetch (`failed`, the run's refusal, when it failed) and its context."""
        context = _context(principal)
        if failed is not None:
            return failed, context
        verdict = judge(rules, spec, principal.workspace)
        if verdict.allowed and file is not None and (package_version is not None or facts is not None):
            refused = self._file_verdict(rules, spec.language, spec.name, file, package_version, facts, context)
            verdict = refused or verdict
        return verdict, context

    def _record(self, principal: Principal, key: tuple, outcome: tuple, record: dict) -> tuple[str, bool]:
        """Record one fetch's decision: (its id, whether this call recorded it). A run's decision
        on a fetch has an id worked out from what it decides, so when several workers make it
        the store keeps the first and the others answer with that one. StoreUnavailableError: the
        client gets a 503."""
        # a token's reads are remembered per worker for a window; a run's are named
        named = fetch_decision_id(principal.run, key[1:], outcome) if principal.run is not None else None
        decision = Decision.recorded(principal.workspace, record, named)
        try:
            self._writer.record_events(decision, guard=_guard(principal, outcome[2]), named=named is not None)
        except AlreadyRecorded:
            return str(decision.originator_id), False
        return str(decision.originator_id), True

    def hidden_versions(
        self, principal: Principal, language: str, name: str, declarations: dict, request: str, file: str | None = None
    ) -> dict[str, str]:
        """Judge what each version declares (`{version: npm manifest or Requires-Dist list}`):
        {version: message} for the versions a refused non-registry dependency hides. Each such
        dependency is recorded once per run, allowed or not, refusals first, at most
        `MAX_VERSION_DECISIONS` of them in one commit (the hidden versions past them counted).
        Once that many refusals are in hand, a version's dependencies are read and judged only up
        to its first refusal: what hides it, and its message."""
        policy_version, rules = self._policies.current(principal.workspace, head=principal.head)
        if file is not None:
            check_text(file, "file", MAX_FILE_NAME)
        token = None if principal.run else principal.token
        reader = reader_key(principal.run, principal.token)
        hidden: dict[str, str] = {}
        refused: list[tuple] = []
        allowed: list[tuple] = []
        more = 0  # hidden versions none of whose refusals is recorded
        for version, metadata in declarations.items():
            label = version_label(language, name, version)
            kept = len(refused)
            for found in judging(rules[language], each_declared(language, metadata), principal.workspace):
                if found.verdict.allowed:  # a bundled one is part of the allowed tarball: no decision
                    if found.field not in BUNDLED_FIELDS and len(allowed) < MAX_VERSION_DECISIONS:
                        allowed.append((found, label, version))
                    continue
                if version not in hidden:  # its first refusal is what the client is told
                    record = declared_record(
                        found, label, policy_version, _context(principal), request, principal.run, file, version, token
                    )
                    hidden[version] = render_message(record, principal.workspace) or ""
                if len(refused) == MAX_VERSION_DECISIONS:
                    break  # hidden, and nothing more of it is recorded
                refused.append((found, label, version))
            more += version in hidden and len(refused) == kept
        made = []
        for found, label, version in (refused + allowed)[:MAX_VERSION_DECISIONS]:
            record = declared_record(
                found, label, policy_version, _context(principal), request, principal.run, file, version, token
            )
            key = (reader, language, name, request, label, found.spec.text, file)
            made.append((key, (found.verdict.allowed, found.verdict.reason, policy_version), record))
        self._record_bounded(made, more, principal)
        return hidden

    def checks_install_scripts(self, principal: Principal, name: str) -> bool:
        """Whether the head policy's install_scripts rule judges this npm package's versions: the
        word of its tarballs' own manifests (`facts.tarball_contents`) is then needed to judge a
        download, and an upstream that fails to give one fails the fetch."""
        _, rules = self._policies.current(principal.workspace, head=principal.head)
        return checks_install_scripts(rules["node"].version_rules, "node", name)

    def judges_versions(self, principal: Principal, language: str, name: str) -> bool:
        """Whether a page's versions are judged (`versions.judges`): without, it is answered
        without reading them. An advisory naming it answers before the policy is read; the
        policy is the head read with the token."""
        if self._advisories.names(language, name):
            return True
        _, rules = self._policies.current(principal.workspace, head=principal.head)
        return judges(rules[language], self._advisories, language, name)

    def versions_hidden(
        self,
        principal: Principal,
        language: str,
        name: str,
        facts: Callable[[], Mapping[str, VersionFacts]],
        request: str,
        revision: str | None = None,
    ) -> dict[str, str]:
        """{key: why} for the keys of `facts()` (npm versions, python file names) whose version
        is hidden (application.index.versions), or not known (a python file name that does not
        say it: no rule can judge it, so it is hidden too). With the upstream page's `revision`, the
        judgement is kept for the next reads of the same page (`facts` is then not called). A
        version all of whose keys are hidden is recorded once per run and reason, its facts in
        the context, at most `MAX_VERSION_DECISIONS` decisions per call (the newest first), in one
        commit."""
        policy_version, rules = self._policies.current(principal.workspace, head=principal.head)
        language_rules = rules[language]
        if not judges(language_rules, self._advisories, language, name):
            return {}
        at = language_rules.at or self._policies.clock()
        key = (principal.workspace, language, name, revision, policy_version, self._advisories.version)
        judgement = self._judgements.get(key, at) if revision is not None else None
        if judgement is None:
            found = facts()
            known = {k: f for k, f in found.items() if f.version is not None}
            judged = judge_all(language_rules, self._advisories, language, name, known, at)
            unknown = {k: unknown_version_message(name, k) for k in found.keys() - known.keys()}
            judgement = hidden(judged, language_rules.version_rules).also(unknown)
            if revision is not None:
                self._judgements.put(key, judgement)
        self._record_hidden(principal, language, name, request, judgement, policy_version)
        return dict(judgement.keys)  # the caller's to add to

    def _record_hidden(
        self, principal: Principal, language: str, name: str, request: str, judgement: Hidden, policy_version: int
    ) -> None:
        reader = reader_key(principal.run, principal.token)
        token = None if principal.run else principal.token
        spec = registry_spec(language, name)
        made: list[tuple] = []
        more = 0  # hidden versions past the bound
        for files in judgement.versions:
            if len(made) == MAX_VERSION_DECISIONS:
                more += 1
                continue
            reasons = {f.reason: (f, j) for j in files for f in j.hiding}
            for reason, (finding, found) in list(reasons.items())[: MAX_VERSION_DECISIONS - len(made)]:
                label = version_label(language, spec.name, found.facts.version)
                key = (reader, language, spec.name, request, label, reason)
                context = {**_context(principal), **found.context()}
                verdict = Verdict(False, reason, dict(finding.params))
                record = DecisionRecord.for_spec(spec, verdict, policy_version, context)
                record = record.fetched(request, principal.run, None, found.facts.version, token)
                made.append((key, (False, reason, policy_version), record))
        self._record_bounded(made, more, principal)

    def _record_bounded(self, made: list[tuple[tuple, tuple, DecisionRecord]], more: int, principal: Principal) -> None:
        """Record what one answer judged of its project's versions: `made` (key, outcome, record),
        at most MAX_VERSION_DECISIONS, but for those this run recorded already; the last one says
        how many `more` versions the answer hid that none of them names. Always the same ones
        for the same answer, so a repeat records nothing."""
        if more and made:
            key, outcome, last = made[-1]
            made[-1] = (key, outcome, replace(last, context={**(last.context or {}), MORE_HIDDEN: more}))
        new = [(key, outcome, record) for key, outcome, record in made if self._earlier(key, outcome) is None]
        self._record_all([(k, o, Decision.recorded(principal.workspace, r.to_dict())) for k, o, r in new], principal)

    def _file_verdict(
        self, rules: LanguageRules, language: str, name: str, file: str, version: str | None, facts, context: dict
    ) -> Verdict | None:
        """A file of a version hidden (by a lockfile or a direct URL too) is refused: the
        refusal, else None; the facts judged (and what monitor rules found) go into `context`.
        `version`: what the file's name says (None: it does not say); the facts' own version,
        when they have one, is the one judged. A file whose version nobody can tell is refused
        whenever its project's versions are judged (fail closed: no rule can be applied to it);
        its facts are recorded either way (`version` null), for a draft's preview. A Python file
        whose name names another project (or none) is refused always (`another_projects_file`)."""
        known = facts() if facts is not None else None
        if known is not None and known.version is not None:
            version = known.version  # the page's or packument's word, not what the file's name says
        monitored = rules.known_malware == MONITOR
        if known is not None and language == "python" and not names_project(file, name):
            return another_projects_file(name, file)  # no version of this project: no facts of it recorded
        if known is None:  # no such file upstream (the client gets a 404): malware is still refused
            advisories = self._advisories.affecting(language, name, version) if version is not None else []
            if advisories:
                context["advisories"] = advisories
                if monitored:
                    context["monitor"] = [KNOWN_MALWARE]
                    return None
                return known_malware(name, version, advisories)
            return None
        if version is None:  # nothing says which version this file is: refused if anything judges it
            found = judge_unknown(rules, self._advisories, name, known, file)
        else:
            advisories = self._advisories.affecting(language, name, version)
            at = rules.at or self._policies.clock()
            found = judge_facts(rules.version_rules, advisories, language, name, known, at, monitored)
        context.update(found.context())
        return Verdict(False, found.hiding[0].reason, dict(found.hiding[0].params)) if found.hiding else None

    def _record_all(self, made: list[tuple[tuple, tuple, Decision.Recorded]], principal: Principal) -> None:
        """Several (key, outcome, decision) in one commit, then remembered."""
        if made:
            decisions = (decision for _, _, decision in made)  # all judged by one version
            self._writer.record_events(*decisions, guard=_guard(principal, made[0][1][2]))  # StoreUnavailableError: 503
            for key, outcome, decision in made:
                self._remember(key, outcome, str(decision.originator_id), principal)

    def not_found(self, principal: Principal, language: str, name: str, request: str) -> None:
        """Record that a client asked for a name the upstream does not have (once per run)."""
        self._refused_upstream(principal, language, name, request, not_found_upstream())

    def upstream_failed(self, principal: Principal, language: str, name: str, request: str, why: str) -> None:
        """Record that the upstream failed a fetch the policy allowed, and why (once per run and
        fetch: a client's retries are counted), so the gate can say it after the install."""
        self._refused_upstream(principal, language, name, request, upstream_failed(why))

    def _refused_upstream(self, principal: Principal, language: str, name: str, request: str, verdict) -> None:
        policy_version, _ = self._policies.current(principal.workspace, head=principal.head)
        spec = registry_spec(language, name)
        key = (reader_key(principal.run, principal.token), language, spec.name, request, verdict.reason)
        outcome = (False, verdict.reason, policy_version)
        if self._earlier(key, outcome) is not None:
            return
        token = None if principal.run else principal.token
        made = DecisionRecord.for_spec(spec, verdict, policy_version, _context(principal))
        record = made.fetched(request, principal.run, None, None, token)
        decision_id, _ = self._record(principal, key, outcome, record.to_dict())
        self._remember(key, outcome, decision_id, principal)

    def failure(self, principal: Principal) -> Verdict | None:
        """The `run-failed` refusal when this run (or token, within its window) was already
        refused a project; None otherwise. Remembered here once known, else read: with the token
        when the reader asked (`denials`), else one indexed read (and when there is one)."""
        reader = reader_key(principal.run, principal.token)
        known = self._known_failure(reader)
        if known is None:
            if principal.denied is False:  # none when the token was read, in this request
                return None
            row = self._readmodel.first_project_denial(self._denials(principal.run, principal.token))
            if row is None:
                return None
            known = self._fail(reader, json.loads(row["record"]), row["at"], principal)
        return run_failed(known[0], None if principal.run else TOKEN_WINDOW_SECONDS // 60)

    def denials(self, run: str | None, token: str) -> Denials | None:
        """What fails this reader, to be looked for with its token (one read for both); None when
        this worker knows it failed already (nothing to read)."""
        if self._known_failure(reader_key(run, token)) is not None:
            return None
        return self._denials(run, token)

    def _denials(self, run: str | None, token: str) -> Denials:
        since = None if run else datetime.now(UTC) - timedelta(seconds=TOKEN_WINDOW_SECONDS)
        return Denials(reader_key(run, token), since, NOT_PROJECT_DENIALS)

    def _known_failure(self, reader: str) -> tuple[dict, datetime] | None:
        with self._lock:
            known = self._failed.get(reader)
        return known if known is not None and known[1] > datetime.now(UTC) else None

    def _fail(self, reader: str, first: dict, at: datetime, principal: Principal) -> tuple[dict, datetime]:
        # A failed run never un-fails (its token stops working when it expires); a token's failure
        # lasts its window from the denial. The earliest denial known stays the one named.
        until = FOREVER if principal.run else at + timedelta(seconds=TOKEN_WINDOW_SECONDS)
        with self._lock:
            known = self._failed.get(reader)
            if known is None or known[1] <= at:
                known = (first, until)
                self._failed.put(reader, known)
        return known

    def listing(self, workspace: str, language: str, source: ListingSource) -> Listing:
        """The projects an index root lists (see application.index.listing)."""
        version, rules = self._policies.current(workspace)
        return self._listings.get(workspace, language, version, rules[language], source)

    def _earlier(self, key: tuple, outcome: tuple) -> str | None:
        found = self._seen.get(key)
        if found is None or found[0] != outcome or found[2] < time.monotonic():
            return None
        return found[1]

    def _remember(self, key: tuple, outcome: tuple, decision_id: str, principal: Principal) -> None:
        deadline = principal.expires or time.monotonic() + TOKEN_WINDOW_SECONDS
        self._seen.put(key, (outcome, decision_id, deadline))


def _guard(principal: Principal, version: int) -> Guard:
    """What the recording transaction checks under the events' lock: the reader's token still
    active and `version`, the one judged by, still the head. Otherwise nothing is recorded
    (StaleCaller) and the fetch is judged again (interface.index.access.judged_afresh): a Save
    that committed meanwhile is in force, and no decision is recorded after it by an older one."""
    return Guard(principal.token, principal.workspace, version)


def registry_spec(language: str, name: str) -> Spec:
    """The project a client asked for, as a registry spec judged like `/evaluate`'s names; a
    path that names no project (a version, a range, a URL) is no resource here."""
    spec = parse(language, name)
    bare = NAME_RE.fullmatch(name) if language == "python" else spec.name == name
    if spec.kind != "registry" or spec.name is None or not bare:
        raise NotFoundError(f"{quoted(name)} is not a {LANGUAGE_TITLES[language]} package name")
    return spec


def _context(principal: Principal) -> dict:
    """What the index's decisions record of who asked: the run's sandbox and actor, as the run's
    other decisions (the gate's `/evaluate`) record them; the token's name when none is named."""
    context = {"source": INDEX_SOURCE, "sandbox": principal.sandbox, "actor": principal.actor or principal.name}
    return {k: v for k, v in context.items() if v is not None}


def _answer(verdict, message: str | None, version: int, decision_id: str, recorded: bool) -> dict:
    return {
        "allowed": verdict.allowed,
        "reason": verdict.reason,
        "message": message,
        "policy_version": version,
        "id": decision_id,
        "recorded": recorded,
    }
