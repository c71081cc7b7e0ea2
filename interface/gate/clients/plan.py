"""What the gate decided about a command before running it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    kind: str  # the client: "pip", "uv", "npm", "pnpm", ...
    language: str  # "python" or "node": which ecosystem module prepares it
    # The body's question for /evaluate: {"command": argv} (the service parses it) or
    # {"language": ..., "specs": [...]}; None when the command names nothing and the index alone
    # judges what the installer fetches.
    evaluate: dict | None
    # Further questions asked the same way, all before running: the lines of the requirement
    # files and project files the command reads, as `{"language": ..., "specs": [...]}`.
    also: tuple = ()

    def questions(self) -> list:
        return [q for q in (self.evaluate, *self.also) if q is not None]
