"""The index cache's deployment settings, read with the others (interface.settings).

- `RUNCODE_POLICY_CACHE_DIR`: where the cache lives (default `<data directory>/cache`); every
  worker process of a deployment may share it.
- `RUNCODE_POLICY_CACHE_MAX_BYTES`: the most bytes of files and pages it keeps (default 4 GiB).
- `RUNCODE_POLICY_CACHE_PAGE_SECONDS`: how long an upstream page is used before it is revalidated
  with upstream (default 60; 0 revalidates on every request).
- `RUNCODE_POLICY_INDEX_MEMORY_BYTES`: the most bytes each worker process keeps in memory for
  the index (rendered answers, fetches recorded, readers refused, judgements, fresh pages'
  metadata; application.index.memory; default 64 MiB, at least 1 MiB).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from application.index.memory import DEFAULT_BYTES as DEFAULT_MEMORY_BYTES
from application.index.memory import DEFAULT_MEMORY, LEAST_BYTES, IndexMemory
from domain.errors import FieldError, InvalidInputError

DIR_VAR = "RUNCODE_POLICY_CACHE_DIR"
MAX_BYTES_VAR = "RUNCODE_POLICY_CACHE_MAX_BYTES"
PAGE_SECONDS_VAR = "RUNCODE_POLICY_CACHE_PAGE_SECONDS"
MEMORY_BYTES_VAR = "RUNCODE_POLICY_INDEX_MEMORY_BYTES"
DEFAULT_MAX_BYTES = 4 * 1024**3
DEFAULT_PAGE_SECONDS = 60
MAX_PAGE_SECONDS = 24 * 60 * 60


@dataclass(frozen=True)
class CacheSettings:
    directory: str
    max_bytes: int = DEFAULT_MAX_BYTES
    page_seconds: int = DEFAULT_PAGE_SECONDS
    memory: IndexMemory = DEFAULT_MEMORY

    @classmethod
    def from_env(cls, env: Mapping[str, str], data_dir: str) -> CacheSettings:
        """Every bad value is named in one InvalidInputError."""
        errors = []
        max_bytes = _whole(env, MAX_BYTES_VAR, DEFAULT_MAX_BYTES, 1, None, errors)
        page_seconds = _whole(env, PAGE_SECONDS_VAR, DEFAULT_PAGE_SECONDS, 0, MAX_PAGE_SECONDS, errors)
        memory = _whole(env, MEMORY_BYTES_VAR, DEFAULT_MEMORY_BYTES, LEAST_BYTES, None, errors)
        if errors:
            raise InvalidInputError("invalid index cache settings (the service does not start):", errors)
        directory = env.get(DIR_VAR) or os.path.join(data_dir, "cache")
        return cls(directory, max_bytes, page_seconds, IndexMemory(memory))


def _whole(env: Mapping[str, str], name: str, default: int, least: int, most: int | None, errors: list) -> int:
    text = env.get(name, "").strip()
    if not text:
        return default
    if not text.isdecimal() or int(text) < least or (most is not None and int(text) > most):
        bound = f"from {least} to {most}" if most is not None else f"of at least {least}"
        errors.append(FieldError(name, f"{text!r} is not a whole number {bound}"))
        return default
    return int(text)
