"""Asking a client for its own view of its configuration (`npm config list --json`, ...).

The gate never parses a client's configuration files itself: each client reads them its own way
(escapes, byte-order marks, case), so only the client's answer says where it will fetch from.
The query runs with the environment and command-line settings the install will run with.

Standard library only, like the whole gate.
"""

from __future__ import annotations

import json
import subprocess

from ...installers import Unresolvable

TIMEOUT = 60  # seconds for a configuration query: the clients answer in about one


def client_output(argv: list[str], env: dict, cwd: str) -> str:
    """The client's standard output; Unresolvable when it cannot say."""
    try:
        done = subprocess.run(
            argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise Unresolvable(f"`{' '.join(argv[:3])}` could not tell its configuration: {error}") from None
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip()[-500:]
        raise Unresolvable(f"`{' '.join(argv[:3])}` could not tell its configuration: {why}")
    return done.stdout


def client_json(argv: list[str], env: dict, cwd: str) -> object:
    text = client_output(argv, env, cwd)
    try:
        return json.loads(text)
    except ValueError:
        raise Unresolvable(f"`{' '.join(argv[:3])}` answered something that is not JSON: {text[:200]!r}") from None


def mismatched(registries: dict, registry: str) -> dict:
    """The entries of {setting: URL} that do not point at the run's registry."""
    return {key: url for key, url in registries.items() if url != registry}
