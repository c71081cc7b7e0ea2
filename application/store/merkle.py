"""The Merkle trees' tables and every SQL statement that reads or writes them (both stores).

- `merkle_nodes`: every perfect subtree of each workspace's tree, (level, index) naming the
  2^level leaves from index * 2^level; level 0 holds the leaf hashes. About two rows per record,
  so a proof reads O(log n) rows by primary key instead of every leaf.
- `merkle_size`: how many leaves each workspace's stored tree has.
- `checkpoint_notes`: the signed-note form of each checkpoint (origin, size, root), beside the
  `checkpoints` row of the same workspace and size.

Nothing here is trusted by a verifier: a proof built from an altered node fails against the
signed root, and a root is signed only over nodes recomputed from the chain's event hashes. The
values are answered as stored; `application.chain.tree` reads each (one not of its kind is named).
"""

from __future__ import annotations

from functools import lru_cache

from application.store.projection import ManyRows
from application.store.schema import Dialect

TABLES = ("merkle_nodes", "merkle_size", "checkpoint_notes", "chain")

DDL = (
    "CREATE TABLE IF NOT EXISTS {merkle_nodes} (workspace TEXT NOT NULL, level INTEGER NOT NULL, "
    "idx BIGINT NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (workspace, level, idx))",
    "CREATE TABLE IF NOT EXISTS {merkle_size} (workspace TEXT PRIMARY KEY, size BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {checkpoint_notes} (workspace TEXT NOT NULL, size BIGINT NOT NULL, "
    "note TEXT NOT NULL, PRIMARY KEY (workspace, size))",
)


def create_statements(dialect: Dialect) -> list[str]:
    return [render(dialect, s) for s in DDL]


@lru_cache(maxsize=64)
def render(dialect: Dialect, template: str) -> str:
    text = template.format(**{t: dialect.table(t) for t in TABLES})
    return text if dialect.schema else text.replace("%s", "?")


class MerkleStore:
    def __init__(self, recorder):
        self.recorder = recorder
        self.dialect: Dialect = recorder.dialect

    def _rows(self, template: str, params=()) -> list[dict]:
        return self.recorder.fetch(render(self.dialect, template), params)

    def size(self, workspace: str):
        rows = self._rows("SELECT size FROM {merkle_size} WHERE workspace = %s", (workspace,))
        return rows[0]["size"] if rows else 0

    def chain_size(self, workspace: str):
        """The chain's last record (one seek of its key, from the end): the tree's size to reach."""
        rows = self._rows("SELECT seq FROM {chain} WHERE workspace = %s ORDER BY seq DESC LIMIT 1", (workspace,))
        return rows[0]["seq"] if rows else 0

    def event_hashes(self, workspace: str, after: int, limit: int) -> list[dict]:
        """The chain's event hashes from record `after + 1` on (`seq`, `event_hash`): one range of its primary key."""
        return self._rows(
            "SELECT seq, event_hash FROM {chain} WHERE workspace = %s AND seq > %s ORDER BY seq LIMIT %s",
            (workspace, after, limit),
        )

    def nodes(self, workspace: str, parts: set[tuple[int, int]]) -> list[dict]:
        """The stored hashes of these perfect subtrees (one query; absent ones are left out)."""
        if not parts:
            return []
        # One primary-key lookup per node, in one statement (an OR of them makes SQLite scan).
        one = "SELECT level, idx, hash FROM {merkle_nodes} WHERE workspace = %s AND level = %s AND idx = %s"
        params = [v for level, idx in sorted(parts) for v in (workspace, level, idx)]
        return self._rows(" UNION ALL ".join([one] * len(parts)), params)

    def level_range(self, workspace: str, level: int, first: int, last: int) -> list[dict]:
        """The stored subtrees of one level, indexes `first` to `last` (one range of the key)."""
        return self._rows(
            "SELECT level, idx, hash FROM {merkle_nodes} WHERE workspace = %s AND level = %s AND idx >= %s "
            "AND idx <= %s",
            (workspace, level, first, last),
        )

    def add(self, workspace: str, nodes: list[tuple[int, int, bytes]], size: int) -> None:
        """New perfect subtrees and the tree's new size, in one transaction. Two processes that
        extend the same tree at once write the same values: the first write of each stands."""
        with self.recorder.datastore.transaction(commit=True) as cursor:
            if nodes:  # one statement (psycopg's executemany pipelines one per node)
                ManyRows.of(
                    render(self.dialect, "INSERT INTO {merkle_nodes} VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING"),
                    tuple((workspace, level, idx, digest.hex()) for level, idx, digest in nodes),
                ).run(cursor, self.dialect.schema is not None)
            cursor.execute(
                render(
                    self.dialect,
                    "INSERT INTO {merkle_size} VALUES (%s, %s) ON CONFLICT (workspace) DO UPDATE SET size = "
                    "excluded.size WHERE excluded.size > {merkle_size}.size",
                ),
                (workspace, size),
            )

    def add_note(self, workspace: str, size: int, note: str) -> None:
        with self.recorder.datastore.transaction(commit=True) as cursor:
            cursor.execute(
                render(self.dialect, "INSERT INTO {checkpoint_notes} VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"),
                (workspace, size, note),
            )

    def notes(self, workspace: str, sizes: list[int]) -> dict[int, str]:
        if not sizes:
            return {}
        marks = ", ".join(["%s"] * len(sizes))
        rows = self._rows(
            f"SELECT size, note FROM {{checkpoint_notes}} WHERE workspace = %s AND size IN ({marks})",
            [workspace, *sizes],
        )
        return {r["size"]: r["note"] for r in rows}

    def latest_note(self, workspace: str) -> tuple[int, str] | None:
        rows = self._rows(
            "SELECT size, note FROM {checkpoint_notes} WHERE workspace = %s ORDER BY size DESC LIMIT 1", (workspace,)
        )
        return (rows[0]["size"], rows[0]["note"]) if rows else None
