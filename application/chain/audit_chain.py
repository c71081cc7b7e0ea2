"""The audit chain as the application uses it: sealing in the background, checkpoints, verification."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from eventsourcing.persistence import IntegrityError

from application.chain import stored
from application.chain.agreement import STOPS, Disagrees, first_disagreement, head_problem
from application.chain.alarms import IntegrityAlarms
from application.chain.links import checkpoint_message
from application.chain.merkle import MissingNode
from application.chain.proofs import OriginConflict, Proofs
from application.chain.readmodels import check_read_models
from application.chain.sealer import UNATTRIBUTED, Rollup, Sealer, state_reader, workspace_reader
from application.chain.signed_state import another_log, check_notes, check_snapshots, origins
from application.chain.signing import AuditKey, key_id, public_document
from application.chain.slices import with_links
from application.chain.snapshots import SnapshotCheck
from application.chain.verify import altered, verify
from application.decision_writer import StoreUnavailableError
from application.formats import iso
from application.store.chain import ChainStore
from application.store.upgrade import require_current
from domain.errors import FieldError, InvalidInputError, NotFoundError

POLL_SECONDS = 0.2  # the sealer's lag under load stays well under a second
CHECKPOINT_SECONDS = 60.0
MAX_PAGE = 1000

log = logging.getLogger(__name__)


class NoSigningKeyError(NotFoundError):
    title = "No audit signing key"


class SealingStopped(StoreUnavailableError):
    """The chain's own tables, or an event to seal, were changed so that nothing more can be sealed
    or signed (an alarm names it)."""

    title = "Audit sealing stopped"


class AuditChain:
    """A collaborator of the Governance application (`governance.chain`)."""

    def __init__(
        self,
        recorder,
        mapper,
        require_workspace,
        rollup: Rollup,
        alarms: IntegrityAlarms,
        key: AuditKey | None = None,
        clock_check: Callable[[], None] = lambda: None,
    ):
        self.store = ChainStore(recorder)
        self.alarms = alarms
        self.proofs = Proofs(self, recorder)  # the signed-note checkpoints and the Merkle proofs
        self.sealer = Sealer(self.store, recorder, mapper, rollup)
        self.read_workspace = workspace_reader(mapper)
        self.read_state = state_reader(mapper)
        self.to_domain_event = mapper.to_domain_event
        self.require_workspace = require_workspace  # a workspace's chain: the workspace must exist
        self.clock_check = clock_check  # a checkpoint is dated by this clock: refused while it is out of step
        # workspace -> its policy's stored snapshots (the library's records), set by the application
        self.stored_snapshots = lambda workspace: []
        self._key, self._key_source = key, None
        self.previous_keys: list = []  # public keys of rotated-out signing keys, still trusted
        self._seal_lock, self._key_lock = threading.Lock(), threading.Lock()
        self._stop = threading.Event()
        self._conflicts: set[str] = set()  # chains whose origin conflict was logged
        self._thread: threading.Thread | None = None

    def use_key(self, key: AuditKey | None, previous=(), source=None) -> None:
        """The signing key, or a `source` that makes it on first use (a service that never signs
        nor verifies then never writes one)."""
        self._key, self._key_source, self.previous_keys = key, source, list(previous)

    @property
    def has_key(self) -> bool:
        """A key or a source of one is set (without making the key)."""
        return self._key is not None or self._key_source is not None

    @property
    def key(self) -> AuditKey | None:
        with self._key_lock:
            if self._key is None and self._key_source is not None:
                self._key = self._key_source()
            return self._key

    # -- sealing -----------------------------------------------------------------------------
    def seal(self, wait: bool = True) -> int:
        """Seal everything committed so far (tests may call this too). The background rounds do
        not `wait` for another process's sealer: it seals what is committed."""
        with self._seal_lock:
            try:
                return self.sealer.seal(wait)
            except (Disagrees, stored.Unreadable) as found:
                raise self._stopped(stopping(found)) from None
            except IntegrityError:  # under the sealing lock: the chain's tables disagree with each other
                if (problem := self.check_sealing()) is None:
                    raise
                raise SealingStopped(problem) from None

    def sealing_problem(self) -> Disagrees | stored.Unreadable | None:
        """What stops the sealer: the position or a head that disagrees with the chain
        (`application.chain.agreement`), or an event of its next round it cannot read."""
        try:
            return first_disagreement(self.store) or self.sealer.unsealable()
        except stored.Unreadable as unreadable:
            return unreadable

    def check_sealing(self) -> str | None:
        """What stops the sealer, in words, with an alarm (`/readyz` asks: under `serve` the
        sealer runs in another process than the workers that answer it); None when nothing does."""
        found = self.sealing_problem()
        return None if found is None else self._stopped(stopping(found)).detail

    def _stopped(self, problem: str) -> SealingStopped:
        self.alarms.alarm("chain", problem, problem)
        return SealingStopped(problem)

    def start(self, poll: float = POLL_SECONDS, checkpoint_every: float = CHECKPOINT_SECONDS) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._run, args=(poll, checkpoint_every), name="audit-sealer", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self, poll: float, checkpoint_every: float) -> None:
        next_checkpoint, failing = time.monotonic() + checkpoint_every, False
        while not self._stop.wait(poll):
            try:
                self.seal(wait=False)
                if time.monotonic() >= next_checkpoint and self.key is not None:
                    self.checkpoint_moved_heads()
                    next_checkpoint = time.monotonic() + checkpoint_every
            except SealingStopped:  # its alarm says why; the store must be restored
                failing = True
            except Exception:  # the store is down or busy: the next round retries from the position
                if not failing:  # once per outage, not five times a second
                    log.warning("audit sealing failed; retrying until the store answers", exc_info=True)
                failing = True
            else:
                if failing:
                    log.warning("audit sealing resumed")
                failing = False

    def require_chain(self, workspace: str) -> None:
        """A workspace that exists, or the deployment's own chain (`UNATTRIBUTED`: what belongs
        to no workspace, the advisory imports every workspace is judged by), which always does."""
        if workspace != UNATTRIBUTED:
            self.require_workspace(workspace)

    # -- checkpoints -------------------------------------------------------------------------
    def checkpoint(self, workspace: str) -> dict:
        """On demand: seal what is committed, then sign the chain's head (or return the
        checkpoint that already signs it)."""
        self.require_chain(workspace)
        self.seal()
        head = self._head(workspace)
        if head is None:
            raise NotFoundError(f"the chain {workspace!r} has no sealed records yet")
        return self._signed(head)

    def _signed(self, head: dict) -> dict:
        """The checkpoint of this head with its note, signed now unless it is already."""
        try:
            checkpoint = self._checkpoint(head["workspace"], head["seq"]) or self._sign(head)
            return self.proofs.with_notes([checkpoint])[0]
        except (stored.Unreadable, MissingNode) as found:  # the stored tree, or a checkpoint's row
            raise self._stopped(f"{found}: no checkpoint is signed with its note until it is restored") from None

    def _head(self, workspace: str) -> dict | None:
        """The chain's head to sign, once the rcp_chain_heads row is its chain's last record (a
        head edited there would be signed as the chain's)."""
        head, last = self.store.head_and_last(workspace)
        try:
            found = head_problem(workspace, head, last)
        except stored.Unreadable as unreadable:
            found = unreadable
        if found is not None:
            raise self._stopped(stopping(found))
        return None if last is None else {"workspace": workspace, "seq": last["seq"], "link": last["link"]}

    def checkpoint_moved_heads(self) -> list[dict]:
        """Every workspace whose chain moved since its last checkpoint (the once-a-minute round);
        one whose checkpoints carry another origin than this process's is left unsigned (logged
        once: the others are signed all the same)."""
        signed = []
        for moved in self.store.heads_without_checkpoint():
            head = self._head(moved["workspace"])
            if head is None:
                continue  # gone meanwhile
            try:
                signed.append(self._signed(head))
            except OriginConflict as conflict:
                if head["workspace"] not in self._conflicts:
                    self._conflicts.add(head["workspace"])
                    log.error("audit checkpoints not signed: %s", conflict.detail)
        return signed

    def _sign(self, head: dict) -> dict:
        if self.key is None:
            raise NoSigningKeyError("this process has no audit signing key configured")
        self.proofs.signing_origin(head["workspace"])  # its note will carry the chain's origin, or nothing is signed
        self.clock_check()
        at = iso(datetime.now(UTC))
        message = checkpoint_message(head["workspace"], head["seq"], head["link"], at)
        self.store.add_checkpoint(
            {
                "workspace": head["workspace"],
                "seq": head["seq"],
                "head": head["link"],
                "at": at,
                "key_id": self.key.key_id,
                "signature": self.key.sign(message),
            }
        )
        # Another process may have signed the same head a moment earlier: its checkpoint stands.
        return self._checkpoint(head["workspace"], head["seq"])

    def _checkpoint(self, workspace: str, seq: int) -> dict | None:
        row = self.store.checkpoint(workspace, seq)
        return None if row is None else _read_checkpoint(row)

    def checkpoints(self, workspace: str, after: int = 0, limit: int = MAX_PAGE, make_notes: bool = True) -> dict:
        """`make_notes`: sign a note for a checkpoint that has none (verification does not: it
        writes nothing, and takes a missing note as one signed before notes were)."""
        self.require_chain(workspace)
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInputError("limit out of range", [FieldError("limit", f"must be 1 to {MAX_PAGE}")])
        rows = [_read_checkpoint(row) for row in self.store.checkpoints(workspace, after, limit + 1)]
        more = len(rows) > limit
        return {
            "workspace": workspace,
            "checkpoints": self.proofs.with_notes(rows[:limit], make=make_notes),
            "next_after": rows[limit - 1]["seq"] if more else None,
        }

    def all_checkpoints(self, workspace: str, make_notes: bool = True) -> list[dict]:
        found, after = [], 0
        while True:
            page = self.checkpoints(workspace, after, make_notes=make_notes)
            found += page["checkpoints"]
            if page["next_after"] is None:
                return found
            after = page["next_after"]

    # -- verification ------------------------------------------------------------------------
    def trusted_keys(self) -> dict:
        keys = [self.key.public] if self.key is not None else []
        return {key_id(k): k for k in keys + self.previous_keys}

    def verify(self, workspace: str, copied=(), keys: dict | None = None) -> dict:
        """Recompute the chain and hold it against the store's checkpoints and any `copied` out.

        Every read sees one snapshot of the store: the events, the chain, the sealed position and
        the read models, each read apart while writers and sealers committed in between, had
        disagreed on an untouched store (a change row whose event a sealer sealed meanwhile was
        named as inserted; the counts of a round sealed meanwhile, as altered). What was committed
        before the snapshot and not yet sealed in it counts as unsealed."""
        self.require_chain(workspace)
        with self.store.snapshot():
            require_current(self.store.recorder)  # the read models are compared as this code writes them
            try:
                return self._verify(workspace, copied, keys)
            except MissingNode as missing:  # the signed notes are read off the stored tree
                return {"ok": False, "checked": 0, "problem": "tree", "detail": str(missing), "record": {}}
            except stored.Unreadable as unreadable:  # a value met outside the walk (which names its own)
                return altered(0, f"{unreadable}: it was altered", unreadable.record)

    def _verify(self, workspace: str, copied, keys: dict | None) -> dict:
        # A copy of a checkpoint the store still holds is one checkpoint, not two; but only when
        # they agree in every field: a store's copy edited (its time, key id, note) must not be
        # replaced by the intact one copied out before, and so pass unseen.
        found = self.all_checkpoints(workspace, make_notes=False)
        unique = list({_canonical(c): c for c in found + list(copied)}.values())
        keys = self.trusted_keys() if keys is None else keys
        result = another_log(found, list(copied)) or verify(self.store, self.read_workspace, workspace, unique, keys)
        if not result["ok"]:
            return result
        # The chain holds: then the events the sealer is to seal next must be sealable, and what is
        # signed over the chain, what enforcement loads and the tables the service answers from
        # must agree with it.
        checked = result["checked"]
        verdict = (
            self._unsealable(checked)
            or check_notes(self.proofs.tree, workspace, unique, keys, checked)
            or check_snapshots(
                SnapshotCheck(self.store, self.read_state, None), self.stored_snapshots(workspace), checked
            )
            or check_read_models(self.store, self.read_state, self.to_domain_event, workspace, checked)
            or result
        )
        named = origins(unique)  # more than one: proofs and receipts joining two of them do not verify
        return verdict | {"origins": named} if verdict["ok"] and len(named) > 1 else verdict

    def _unsealable(self, checked: int) -> dict | None:
        """An event of the sealer's next round it cannot read, as a verification's failure: it
        stops the sealer, so neither it nor anything after it would ever be sealed."""
        found = self.sealer.unsealable()
        return None if found is None else altered(checked, stopping(found), found.record)

    def with_links(self, workspace: str, decisions):
        """An export's decisions, each with its chain link and stored event, then the links after
        them (`application.chain.slices`)."""
        return with_links(self.store, workspace, decisions)

    def public_keys(self) -> dict:
        if self.key is None:
            raise NoSigningKeyError("this service has no audit signing key configured")
        return self.key.public_document() | {"previous": [public_document(k) for k in self.previous_keys]}


def _canonical(checkpoint: dict) -> str:
    return json.dumps(checkpoint, sort_keys=True, default=str)


def stopping(found: Disagrees | stored.Unreadable) -> str:
    """What stops the sealer, in words that say so."""
    return found.detail if isinstance(found, Disagrees) else f"{found.detail}; {STOPS}"


def _read_checkpoint(row: dict) -> dict:
    """A stored checkpoint, each value of its kind (`Unreadable` names the one that is not)."""
    table, at = "rcp_checkpoints", f"checkpoint {stored.shown(row['seq'])} of {stored.shown(row['workspace'])}"
    return {
        "workspace": stored.text(row["workspace"], table, at, "workspace"),
        "seq": stored.integer(row["seq"], table, at, "seq", least=1),
        **{column: stored.text(row[column], table, at, column) for column in ("head", "at", "key_id", "signature")},
    }
