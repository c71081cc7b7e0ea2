"""The Governance application: workspaces, tokens and policy commands, composing its collaborators.

The composition root: `__init__` builds each collaborator once (`Policies`, `Evaluation`,
`EgressJudge`, `Audit`, `Impact`, `Synthesis`, `Overview`, `Access`, `Advisories`,
`PackageIndex`, the chain...), each receiving what it needs in its constructor. The interface
calls the collaborator that does the work (`interface.services`); Governance's own methods are
only what coordinates several: workspaces and tokens, the policy's views and saves. Every public
method takes and returns plain data, so the HTTP API, the console and the CLI are thin layers.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from datetime import datetime

from eventsourcing.application import AggregateNotFoundError, Application, ProcessingEvent
from eventsourcing.persistence import IntegrityError

from application.access import Access
from application.access_views import exception_views
from application.advisories import Advisories
from application.audit import Audit
from application.callers import Callers
from application.chain import AuditChain
from application.chain.alarms import IntegrityAlarms
from application.chain.checked import CheckedReads
from application.chain.sealer import state_reader
from application.chain.snapshots import SealedRepository, SnapshotCheck, take_sealed
from application.clock import Clock, ClockWatch, system_clock
from application.closure import Closures
from application.decision_writer import DecisionWriter
from application.egress import EgressConfig, EgressJudge
from application.evaluation import Evaluation
from application.formats import iso, parse_uuid
from application.impact import Impact
from application.imports import expand_imports
from application.index import PackageIndex
from application.overview import Overview
from application.policies import Policies
from application.races import ATTEMPTS, saved, stale, too_fast
from application.sessions import ConsoleSessions
from application.store import SNAPSHOT_INTERVAL
from application.store.access_reads import AccessReads
from application.store.chain import ChainStore
from application.store.counts import rollups
from application.store.overview import OverviewReads
from application.store.reads import Denials, ReadModel
from application.store.upgrade import upgrade_read_models
from application.synthesis import Synthesis
from domain.edits import plan_desired_state, plan_incremental
from domain.errors import ConflictError, FieldError, InvalidInputError, NotFoundError
from domain.names import check_visible, skeleton
from domain.policy import Policy, policy_id
from domain.text import check_label, check_text, quoted
from domain.token import (
    RESERVED_NAME_PREFIXES,
    ROLES,
    WORKSPACE_PATTERN,
    Token,
    digest,
    is_reserved_name,
    new_secret,
    token_id,
)


class Governance(Application):
    name = "governance"
    snapshotting_intervals = {Policy: SNAPSHOT_INTERVAL}

    def __init__(self, env: dict | None = None, egress: EgressConfig | None = None, clock: Clock = system_clock):
        super().__init__(env)
        self.clock_watch = ClockWatch(self.recorder)  # nothing recorded by a clock out of step with the store's
        if self.factory.env_create_table():  # the tables are this code's, so must their rows be
            snapshots = self.repository.snapshot_store
            upgrade_read_models(self.recorder, self.mapper, snapshots and snapshots.recorder.events_table_name)
        self.clock = clock  # "now" for every collaborator that reads the time (tests give their own)
        self.readmodel = ReadModel(self.recorder)
        # What was found not to match the sealed record while answering (and so was not used).
        self.integrity = IntegrityAlarms()
        # What authentication reads, checked against the sealed events on every use.
        self.checked = CheckedReads(ChainStore(self.recorder), state_reader(self.mapper), self.integrity)
        # console sign-ins, server-side and sealed
        self.sessions = ConsoleSessions(self.save, self.repository.get, self.checked, clock)
        self.callers = Callers()  # for the evaluate hot path, checked again where it records
        self.writer = DecisionWriter(self.record_events, self.recorder.hold_turn)
        self.policies = Policies(self.repository, self.readmodel, clock)
        # seals every stored event, and counts the decisions among them
        rollup = rollups(self.recorder.dialect, self.mapper.to_domain_event)
        self.chain = AuditChain(
            self.recorder,
            self.mapper,
            self.policies.require_workspace,
            rollup,
            self.integrity,
            clock_check=lambda: self.clock_watch.check(),  # the watch a test may swap
        )
        self.evaluation = Evaluation(self.policies, self.writer)
        # deployment egress rules (open by default)
        self.egress = EgressJudge(egress or EgressConfig(), self.writer, self.policies)
        access_reads = AccessReads(self.recorder)
        self.audit = Audit(self.readmodel, self.policies, access_reads, self.chain.store, self.chain.read_state)
        # one reader of the counts, which seals what is committed before it reads them
        counts = OverviewReads(self.recorder, self.chain.seal)
        # known-malware advisories, deployment-wide: `gov.advisories.import_records(...)`
        self.advisories = Advisories(self.repository, self.save, self.readmodel, self.chain.store)
        self.impacts = Impact(self.policies, counts, self.advisories, clock)  # decision counts, impact
        # requests and exceptions: `gov.access.file_request(...)`, `gov.access.approve_request(...)`...
        self.access = Access(self.repository, self.save, self.policies, access_reads, self.impacts, clock)
        self.synthesis = Synthesis(counts, self.impacts, self.policies)
        self.closures = Closures(self.policies, self.advisories)  # dependency closures, judged, never recorded
        self.facts = Overview(counts, self.readmodel, self.advisories, self.impacts, self.policies.require_workspace)
        self.index = PackageIndex(
            self.policies,
            self.writer,
            self.readmodel,
            self.save,
            self.repository.get,
            self.authenticate,
            self.checked,
            self.advisories,
        )
        self.repository.check = SnapshotCheck(self.chain.store, self.chain.read_state, self.integrity)
        self.chain.stored_snapshots = lambda ws: self.repository.snapshot_store.recorder.select_events(policy_id(ws))

    def construct_repository(self) -> SealedRepository:
        repository = super().construct_repository()  # the library's settings, read its way
        repository.__class__ = SealedRepository  # which uses a snapshot only if its seal holds
        return repository

    def close(self) -> None:
        self.chain.stop()
        if self.chain.proofs.witness is not None:
            self.chain.proofs.witness.close()  # its thread reads the store: before the store closes
        self.writer.close()
        super().close()

    # -- advisories (application.advisories), for a workspace that exists ---------------------
    def unknown_names(self, workspace: str, days: int) -> dict:
        self.policies.require_workspace(workspace)
        return self.advisories.unknown_names(workspace, days, self.clock())

    def advisory_exposure(self, workspace: str, advisory: str, start=None, end=None) -> dict:
        self.policies.require_workspace(workspace)
        return self.advisories.exposure(workspace, advisory, start, end)

    # -- the library's hooks: sealed snapshots, the group-commit writer's save -----------------
    def _take_snapshots(self, processing_event) -> None:
        # Taken before the Save was recorded, sealed with it (`_record`); stored now.
        if snapshots := getattr(processing_event, "sealed_snapshots", None):
            self.snapshots.recorder.insert_events(snapshots)

    def _seal_snapshots(self, processing_event) -> None:
        """One snapshot per Save that crosses a multiple of the interval, of the state just saved
        (the library takes one per multiple crossed, each reloaded by replaying from the one
        before: a Save of n entries cost n²/interval). Its seal joins the Save's events
        (application.chain.snapshots), so the snapshot is usable exactly when the Save committed."""
        snapshots = []
        for aggregate in list(processing_event.aggregates.values()):
            interval = self.snapshotting_intervals.get(type(aggregate))
            if interval is not None and _crosses(processing_event.events, aggregate, interval):
                stored, seal = take_sealed(type(aggregate).Snapshot.take(aggregate), self.mapper, aggregate.workspace)
                processing_event.events.append(seal)
                snapshots.append(stored)
        processing_event.sealed_snapshots = snapshots

    def record_events(self, *events, guards=()) -> list:
        """The group-commit writer's save: events already taken out of new aggregates (decisions).
        What `save` does for them, without its per-object runtime Protocol checks (tens of µs an
        event on Python 3.11, the largest library cost per decision) and without snapshots
        (decisions have none). `guards`: what the transaction must find true (application.callers)."""
        processing_event = ProcessingEvent()
        processing_event.events.extend(events)
        processing_event.saved_kwargs["guards"] = guards
        recordings = self._record(processing_event)
        self._notify(recordings)
        return recordings

    def _record(self, processing_event):
        self.clock_watch.check()
        # Hand the recorder the domain events and their workspaces, so it writes the read
        # models in the same transaction as the events.
        if processing_event.aggregates:  # a Save (the decision writer's batches have none)
            self._seal_snapshots(processing_event)
        processing_event.saved_kwargs.update(
            saved_events=processing_event.events,
            workspaces={i: getattr(a, "workspace", None) for i, a in processing_event.aggregates.items()},
        )
        return super()._record(processing_event)

    # -- workspaces and tokens ----------------------------------------------------------------
    def create_workspace(self, workspace: str, by: str = "system") -> dict:
        """Create the workspace's policy and its first owner token, in one atomic save."""
        check_workspace_slug(workspace)
        token, secret = self._new_token(workspace, "owner", "owner", by)
        try:
            self.save(Policy(workspace=workspace, by=by), token)
        except IntegrityError:
            raise ConflictError(
                f"workspace {workspace!r} already exists", [FieldError("workspace", "must not exist yet")]
            ) from None
        return {"workspace": workspace, "id": str(token.id), "token": secret, "role": "owner"}

    def issue_token(self, workspace: str, name: str, role: str, by: str) -> dict:
        self.policies.require_workspace(workspace)
        if role not in ROLES:
            raise InvalidInputError(
                f"unknown role {role!r}", [FieldError("role", f"must be one of {', '.join(ROLES)}")]
            )
        if not isinstance(name, str) or not name.strip():
            raise InvalidInputError("a token needs a name", [FieldError("name", "must be 1 to 200 characters")])
        check_visible(check_label(name, "name"), "name")
        check_token_name(name, self.readmodel.tokens(workspace))
        token, secret = self._new_token(workspace, name.strip(), role, by)
        try:
            self.save(token)
        except IntegrityError:  # the same name, issued at the same moment by someone else
            raise name_taken(name) from None
        return {"id": str(token.id), "token": secret, "name": token.name, "role": role, "workspace": workspace}

    def _new_token(self, workspace, name, role, by) -> tuple[Token, str]:
        secret = new_secret()
        return Token(secret_digest=digest(secret), workspace=workspace, name=name, role=role, by=by), secret

    def authenticate(
        self, secret: str, remembered: bool = False, denials: Callable[[str], Denials | None] | None = None
    ) -> dict | None:
        """The token's workspace and role, or None for unknown or revoked secrets. One indexed
        read of the token table (written with the token's events), so revocation is immediate in
        every process. The same query brings the workspace's head version (`head_version`), so
        the evaluate hot path needs no second round trip to see the latest Save.

        `remembered=True` (only for a request whose one effect is a guarded recording, see
        application.callers): the caller this process last read for the secret, unread, with
        `remembered` set and no head version.

        `denials` (the package index): the token id -> the denials to look for in the same read
        (application.store.reads.Denials), answered as `denied`."""
        secret_digest = digest(secret)
        if remembered and (known := self.callers.get(secret_digest)) is not None:
            return {**known, "head_version": None, "remembered": True}
        token = str(token_id(secret_digest))
        probe = denials(token) if denials is not None else None
        row = self.checked.caller(token, probe)
        if row is None or not hmac.compare_digest(row["secret_digest"], secret_digest):
            self.callers.forget(secret_digest)
            return None
        caller = {"id": row["id"], "workspace": row["workspace"], "role": row["role"], "name": row["name"]}
        self.callers.remember(secret_digest, caller)
        found = {**caller, "head_version": row["head"], "remembered": False}
        return found if probe is None else {**found, "denied": row["denied"]}

    def list_tokens(self, workspace: str) -> list[dict]:
        self.policies.require_workspace(workspace)
        return [
            {
                "id": r["id"],
                "name": r["name"],
                "role": r["role"],
                "issued_at": iso(r["issued_at"]),
                "issued_by": r["issued_by"],
                "revoked_at": iso(r["revoked_at"]),
                "revoked_by": r["revoked_by"],
            }
            for r in self.readmodel.tokens(workspace)
        ]

    def revoke_token(self, workspace: str, token: str, by: str) -> None:
        found = self._get_token(token)
        if found is None or found.workspace != workspace:
            raise NotFoundError(f"no token {quoted(token)} in this workspace")
        found.revoke(by)
        try:
            self.save(found)  # the store refuses to leave a workspace without an active owner token
        except IntegrityError:
            if self._get_token(token).revoked:
                return  # revoked concurrently by someone else: revocation is final, so this is done
            raise ConflictError(
                "revoking it would leave the workspace without an active owner token; issue another owner token first",
                [FieldError("token_id", "must not be the last active owner token")],
            ) from None

    def _get_token(self, token: str) -> Token | None:
        token_uuid = parse_uuid(token)
        try:
            return self.repository.get(token_uuid) if token_uuid else None
        except AggregateNotFoundError:
            return None

    # -- the policy ---------------------------------------------------------------------------
    def policy(self, workspace: str, at=None) -> dict:
        if at is None:
            return policy_view(self.policies.load_policy(workspace), None, self.clock())
        return policy_view(self.policies.at(workspace, at), at, self.clock())

    def policy_version(self, workspace: str, version: int) -> dict:
        """The policy right after change `version` (0: the default), `at` being when it was made.
        One Save stamps all its changes with one instant, so only a version tells them apart."""
        self.policies.require_workspace(workspace)
        head = self.readmodel.head_version(workspace)
        if not 0 <= version <= head:
            raise NotFoundError(f"no version {version} of this policy (its latest is version {head})")
        change = self.readmodel.change(workspace, version) if version else None
        return policy_view(
            self.policies.load_policy(workspace, version), change["at"] if change else None, self.clock()
        )

    def save_policy(
        self,
        workspace: str,
        desired: dict,
        by: str,
        note: str = "",
        expected_version: int | None = None,
        by_token: str | None = None,
    ) -> dict:
        """The console's Save: the complete desired state; only the differences are recorded.
        `by_token` is the id of the token that asked (None for the CLI and the service)."""
        return self._change(
            workspace,
            by,
            note,
            expected_version,
            lambda policy: plan_desired_state(policy.state, desired, policy.egress, policy.known_malware()),
            by_token,
        )

    def change_policy(
        self,
        workspace: str,
        changes: list[dict],
        by: str,
        note: str = "",
        expected_version: int | None = None,
        by_token: str | None = None,
    ) -> dict:
        changes = expand_imports(changes)  # a pasted lockfile becomes the add of what it lists
        return self._change(
            workspace,
            by,
            note,
            expected_version,
            lambda policy: plan_incremental(policy.state, changes, policy.egress, policy.known_malware()),
            by_token,
        )

    def _change(self, workspace, by, note, expected_version, plan, by_token=None) -> dict:
        """Plan against the current state and save atomically. A writer that gave no
        expected_version asked for "apply this now": when another save wins the race, its
        request is planned again against the state that won (a no-op stays a no-op)."""
        check_text(note or "", "note")
        for _ in range(ATTEMPTS):
            policy = self.policies.load_policy(workspace)
            if expected_version is not None and expected_version != policy.policy_version:
                raise stale(expected_version, policy.policy_version)
            policy.record(plan(policy), by, note or "", by_token=by_token)
            if saved(self.save, policy):
                return policy_view(policy, None, self.clock())
        raise too_fast()


def _crosses(events, aggregate, interval: int) -> bool:
    """Did this save take the aggregate's version past a multiple of the snapshot interval?"""
    first = min((e.originator_version for e in events if e.originator_id == aggregate.id), default=None)
    return first is not None and aggregate.version // interval > (first - 1) // interval


def policy_view(policy: Policy, at, now: datetime) -> dict:
    """The policy as it stood at `at` (None: the head), with the exceptions in force then (at
    `at`, else `now`)."""
    return {
        "workspace": policy.workspace,
        "version": policy.policy_version,
        "at": iso(at),
        **state_copy(policy.state),
        "changed_at": iso(policy.changed_at),
        "changed_by": policy.changed_by,
        "exceptions": exception_views(policy, at or now),  # those in force then
        "egress": {"allow": policy.egress_rules().allow_view()},
        "known_malware": policy.known_malware(),
    }


def check_token_name(name: str, tokens: list[dict]) -> None:
    """A name the service's own actors use is reserved; a name once given stays with its token,
    revoked or not, so a name in the history means one token (the id says which)."""
    if is_reserved_name(name):
        raise InvalidInputError(
            f"the token name {name.strip()!r} is reserved",
            [
                FieldError(
                    "name",
                    f"is reserved: names starting with {' or '.join(RESERVED_NAME_PREFIXES)} are the service's own",
                )
            ],
        )
    looks = skeleton(name)
    same = next((t["name"] for t in tokens if skeleton(t["name"]) == looks), None)
    if same is not None:
        raise name_taken(name, same)


def name_taken(name: str, same: str | None = None) -> ConflictError:
    looks = "" if same is None or same == name.strip() else f" (looks the same as {same!r})"
    return ConflictError(
        f"a token named {name.strip()!r} exists or existed in this workspace{looks}",
        [FieldError("name", "must differ from (and not look like) the name of every token this workspace ever had")],
    )


def state_copy(state: dict[str, dict]) -> dict[str, dict]:
    """The policy's state for an answer: its own lists (the aggregate's stay untouched), without
    deepcopy's per-string bookkeeping (which cost ~50 ms for a few thousand entries). A language's
    `rules` are shown only when one is on (absent: all off)."""
    return {
        language: {k: list(v) if isinstance(v, list) else v for k, v in rules.items() if k != "rules" or v}
        for language, rules in state.items()
    }


def check_workspace_slug(workspace: str) -> None:
    if not isinstance(workspace, str) or not WORKSPACE_PATTERN.fullmatch(workspace):
        raise InvalidInputError(
            f"invalid workspace slug {quoted(workspace)}",
            [FieldError("workspace", "must match [a-z0-9][a-z0-9-]{0,62}")],
        )
