"""What one worker process may keep in memory for the package index, in bytes, and how its
memories share it (`RUNCODE_POLICY_INDEX_MEMORY_BYTES`, interface.cache_settings). Each memory
is a `SizedLru`: what it forgets is fetched, judged or read from the store again, never lost."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_BYTES = 32 * 1024 * 1024
LEAST_BYTES = 1024 * 1024  # below this, the memories could not hold one large page's answer

# Sixteenths of the budget: the rendered answers (a page served from memory, the hot path), the
# fetches already recorded per run (a repeated fetch is not recorded again), the readers known to
# have failed, the pages' judgements (hidden versions) and the fresh pages' metadata.
_SHARES = {"rendered": 6, "fetches": 5, "failures": 1, "judgements": 2, "pages": 2}


@dataclass(frozen=True)
class IndexMemory:
    total: int = DEFAULT_BYTES

    def share(self, memory: str) -> int:
        return self.total * _SHARES[memory] // sum(_SHARES.values())


DEFAULT_MEMORY = IndexMemory()
