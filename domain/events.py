"""What the event classes whose stored shape changed share: their version and its upcaster.

Stored events keep the shape they were written in; the library upcasts one on reading, from
the `class_version` stored with it (none: version 1) through each `upcast_vN_vN+1` of its class
(`eventsourcing.persistence.Mapper.to_domain_event`; snapshots likewise, by their aggregate's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Attributed:
    """A policy change naming the API token that made it (`by_token`, None for the CLI and the
    service's own actors) beside `by`. Version 1 changes were recorded before tokens were named."""

    class_version = 2
    by: str
    note: str
    by_token: str | None

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        state.setdefault("by_token", None)
