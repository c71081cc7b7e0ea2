"""Sealing: every stored event, in notification order, becomes the next link of its workspace's chain.

The sealer follows the application's notification log after commit, so the evaluate path pays
nothing for it. SQLite has no subscriptions, so it polls (`select_notifications` after the sealed
position: one indexed range read, also on PostgreSQL, which keeps one code path); a round seals
up to `BATCH` events in one transaction and rounds repeat until it is caught up.

It seals the stored records generically: an event is attributed to the workspace its state names
(`workspace`, as every aggregate's first event here does), else to the workspace its aggregate's
earlier events were sealed in, else to the `UNATTRIBUTED` chain (never a valid slug), so a kind
of event added later is sealed without anyone teaching the sealer about it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from application.chain.links import GENESIS, as_uuid, event_hash, link_hash
from application.store.chain import ChainStore
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
        the lock), -1 when another sealer got there first."""
        position = self.store.position(skip_locked=not wait)
        if position is None:
            return 0
        notes = self.recorder.select_notifications(start=position, limit=limit, inclusive_of_start=False)
        if not notes:
            return 0
        states = [self.read_state(note.state) for note in notes]  # once, for the rollup and the attribution
        rolled = self.rollup(notes, states)
        with self.store.sealing() as (tx, current):
            if current != position:
                return -1  # another process sealed meanwhile: read again from where it got to
            rows, heads = [], {}
            for note, state in zip(notes, states, strict=True):
                workspace = self._attribute(note, state, tx)
                seq, previous = heads.get(workspace) or _head(tx, workspace)
                digest = event_hash(note.originator_id, note.originator_version, note.topic, note.state)
                link = link_hash(workspace, seq + 1, previous, digest)
                rows.append(
                    (
                        workspace,
                        seq + 1,
                        note.id,
                        self.store.oid(as_uuid(note.originator_id)),
                        note.originator_version,
                        digest,
                        link,
                    )
                )
                heads[workspace] = (seq + 1, link)
            tx.seal(rows, heads, notes[-1].id, rolled)
        return len(notes)

    def _attribute(self, note, state: dict | None, tx) -> str:
        originator = as_uuid(note.originator_id)
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
    row = tx.head(workspace)
    return (row["seq"], row["link"]) if row else (0, GENESIS)


def state_reader(mapper, read: Callable[[bytes], object] = loads) -> Callable[[bytes], dict | None]:
    """A stored state as plain JSON data (undoing the store's cipher and compression if it is
    configured with them); None when it is not a JSON object."""

    def read_state(state: bytes) -> dict | None:
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
