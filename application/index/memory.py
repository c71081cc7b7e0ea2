"""What one worker process may keep in memory for the package index, in bytes, and how its
memories share it (`RUNCODE_POLICY_INDEX_MEMORY_BYTES`, interface.cache_settings). Each memory
is a `SizedLru`: what it forgets is rendered, judged or read again, and a fetch it forgot may be
recorded again (docs/index-cache.md, "Memory")."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_BYTES = 64 * 1024 * 1024
LEAST_BYTES = 1024 * 1024  # a quarter of it holds a few dozen typical rendered pages

# Sixteenths of the budget: the rendered answers (a page served from memory, the hot path), the
# fetches already recorded (a repeat is not recorded again: the most entries, ~1 KiB each as
# weighed), the readers known to have failed, the pages' judgements (hidden versions) and the
# fresh pages' metadata (both upstreams').
_SHARES = {"rendered": 4, "fetches": 8, "failures": 1, "judgements": 2, "pages": 1}


@dataclass(frozen=True)
class IndexMemory:
    total: int = DEFAULT_BYTES

    def share(self, memory: str) -> int:
        return self.total * _SHARES[memory] // sum(_SHARES.values())


DEFAULT_MEMORY = IndexMemory()
