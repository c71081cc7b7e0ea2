"""Sealing: every stored event, in notification order, becomes the next link of its workspace's chain.

The sealer follows the application's notification log after commit, so the evaluate path pays
nothing for it. SQLite has no subscriptions, so it polls (the notifications after the sealed
position: one indexed range read, also on PostgreSQL, which keeps one code path); a round seals
up to `BATCH` events in one transaction and rounds repeat until it is caught up.

It builds on the sealed position and each workspace's head, and holds both to the chain before
it does (`application.chain.agreement`): under the lock as a round reads them, and once more,
against the chain's newest notification, when a poll finds nothing to seal (a position moved
past every event). Each stored value it reads is read totally (`application.chain.stored`): an
event that is not as the library stores one, or a decision whose state cannot be counted, stops
it as well (`Unreadable`), rather than being sealed as what it is not.

It seals the stored records generically: an event is attributed to the workspace its state names
(`workspace`, as every aggregate's first event here does), else to the workspace its aggregate's
earlier events were sealed in, else to the `UNATTRIBUTED` chain (never a valid slug), so a kind
of event added later is sealed without anyone teaching the sealer about it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from eventsourcing.persistence import IntegrityError, Notification

from application.chain import stored
from application.chain.agreement import STOPS, Disagrees, head_problem, position_disagreement, position_problem
from application.chain.links import GENESIS, event_hash, link_hash, stored_bytes
from application.store.chain import ChainStore
from application.store.counts import Uncountable
from application.store.jsontext import loads, loads_inexact

BATCH = 500  # a short write transaction: on SQLite it holds the one write lock
UNATTRIBUTED = "-"
ORIGINS_CACHED = 8192


# What else a round writes in its transaction, from the stored events it seals and their states
# read once as plain JSON (the application's rollups of them): `ManyRows` statements, run on the
# transaction's cursor.
Rollup = Callable[[list, list], list]


class Sealer:
    def __init__(self, store: ChainStore, recorder, mapper, rollup: Rollup):
        self.store = store
        self.recorder = recorder
        self.rollup = rollup
        # What a round reads of a state is its workspace and a decision's text and flags (the
        # rollups): the inexact read, which skips the exact one's look for long integers.
        self.read_state = state_reader(mapper, loads_inexact)
        self._origins: OrderedDict = OrderedDict()  # originator id -> workspace, most recent last

    def seal(self, wait: bool = True) -> int:
        """Seal everything committed so far; the number of events sealed. Not `wait`ing (the
        background rounds), it stops when another process is sealing: that one seals what is
        committed, and reading the same events only to find them sealed is the work saved; and
        once a round finds less than a full batch, what was committed when it looked is sealed,
        and what came during it waits for the next poll. Under steady load a background sealer
        that went on until caught up ran dozens of rounds a second of a few events each, every
        round's dozen statements paid for those few."""
        total = 0
        while True:
            sealed = self.seal_once(wait=wait)
            total += max(sealed, 0)
            if sealed == 0 or (not wait and 0 < sealed < BATCH):
                return total

    def seal_once(self, limit: int = BATCH, wait: bool = True) -> int:
        """One round: read past the sealed position, then seal under the lock if nobody moved it.
        Returns the count sealed, 0 when caught up (or, not `wait`ing, when another sealer holds
        the lock), -1 when another sealer got there first. `Disagrees` or `Unreadable` when the
        chain's own tables or the events cannot be built on (nothing is sealed)."""
        position = self.store.position(skip_locked=not wait)
        if position is None:
            return 0
        notes, states, rolled = self.prepare(position, limit)
        if not notes:
            # Caught up, or the position was moved past every event: nothing after it to seal.
            if found := position_disagreement(self.store):
                raise found
            return 0
        try:
            with self.store.sealing() as (tx, current, sealed):
                if current != position and current is not None:
                    return -1  # another process sealed meanwhile: read again from where it got to
                if found := position_problem(current, sealed):  # its row gone, too
                    raise found
                rows, heads = [], {}
                for note, state in zip(notes, states, strict=True):
                    workspace = self._attribute(note, state, tx)
                    seq, previous = heads.get(workspace) or _head(tx, workspace)
                    digest = event_hash(note.originator_id, note.originator_version, note.topic, note.state)
                    link = link_hash(workspace, seq + 1, previous, digest)
                    oid = self.store.oid(note.originator_id)
                    rows.append((workspace, seq + 1, note.id, oid, note.originator_version, digest, link))
                    heads[workspace] = (seq + 1, link)
                tx.seal(rows, heads, notes[-1].id, rolled)
        except IntegrityError:  # the chain's unique keys refused a link
            if found := self._sealed_already(notes):
                raise found from None
            raise
        return len(notes)

    def _sealed_already(self, notes: list[Notification]) -> Disagrees | None:
        """An event after the position that the chain already seals (stored again, or moved there,
        behind the service's back): sealed twice, it would fork the record of what happened."""
        for note in notes:
            found = self.store.sealed_as(self.store.oid(note.originator_id), note.originator_version)
            if found is not None:
                return Disagrees(
                    f"notification {note.id} ({note.topic} {note.originator_id} v{note.originator_version}), after "
                    f"the sealer's position, is already sealed as record {found['seq']} of {found['workspace']!r}: "
                    f"it was moved or copied there, and {STOPS}",
                    {"notification_id": note.id, "seq": found["seq"]},
                )
        return None

    def prepare(self, position: int, limit: int = BATCH) -> tuple[list[Notification], list, list]:
        """What a round reads before its transaction: the stored events after `position`, read
        totally (`Unreadable`), their states and what the rollup writes of them."""
        notes = [self.note(row) for row in self.store.notifications(position, limit)]
        if not notes:
            return [], [], []
        states = [self.read_state(note.state) for note in notes]  # once, for the rollup and the attribution
        try:
            rolled = self.rollup(notes, states)
        except Uncountable as found:
            value = found.stored.state
            raise stored.Unreadable(
                self.store.events_table, f"notification {found.stored.id}", "state", value, "a decision's state"
            ) from None
        return notes, states, rolled

    def unsealable(self) -> stored.Unreadable | None:
        """What in the next round's events would stop it (its reads, and nothing written)."""
        try:
            self.prepare(self.store.position())
        except stored.Unreadable as found:
            return found
        return None

    def note(self, row: dict) -> Notification:
        """A stored event after the position, each value of the kind the library stores."""
        table, at = self.store.events_table, f"notification {row['notification_id']}"
        return Notification(
            id=row["notification_id"],
            originator_id=stored.uuid(row["originator_id"], table, at, "originator_id"),
            originator_version=stored.integer(row["originator_version"], table, at, "originator_version", least=1),
            topic=stored.text(row["topic"], table, at, "topic"),
            state=stored.state(row["state"], table, at),
        )

    def _attribute(self, note, state: dict | None, tx) -> str:
        originator = note.originator_id
        workspace = named_workspace(state)
        if workspace is None:
            workspace = self._origins.get(originator) or tx.origin_workspace(self.store.oid(originator))
        workspace = workspace or UNATTRIBUTED
        self._origins[originator] = workspace
        self._origins.move_to_end(originator)
        if len(self._origins) > ORIGINS_CACHED:
            self._origins.popitem(last=False)
        return workspace


def _head(tx, workspace: str) -> tuple[int, str]:
    """The workspace's head, once it is its chain's last record (`Disagrees` otherwise)."""
    head, last = tx.head_and_last(workspace)
    if found := head_problem(workspace, head, last):
        raise found
    return (last["seq"], last["link"]) if last else (0, GENESIS)


def state_reader(mapper, read: Callable[[bytes], object] = loads) -> Callable[[bytes], dict | None]:
    """A stored state as plain JSON data (undoing the store's cipher and compression if it is
    configured with them); None when it is not a JSON object."""

    def read_state(state: bytes) -> dict | None:
        if stored_bytes(state) is None:  # not even bytes: a value the store was given in their place
            return None
        if mapper.cipher:
            state = mapper.cipher.decrypt(state)
        if mapper.compressor:
            state = mapper.compressor.decompress(state)
        try:
            value = read(state)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    return read_state


def workspace_reader(mapper) -> Callable[[bytes], str | None]:
    """The `workspace` named at the top of a stored state."""
    read_state = state_reader(mapper)
    return lambda state: named_workspace(read_state(state))


def named_workspace(state: dict | None) -> str | None:
    value = (state or {}).get("workspace")
    return value if isinstance(value, str) else None
