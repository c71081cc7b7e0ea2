"""The deployment's egress configuration, read from the environment (or a JSON file it names).

- `RUNCODE_POLICY_EGRESS_ALLOWLIST`: unset = open egress. Set = hostname entries separated by
  commas and/or newlines. Set but EMPTY = the empty allowlist = deny every name (EGRESS.md: `[]`
  denies all names). We fail closed on purpose: a variable that was meant to carry a list but
  came through empty must not silently open egress; to have open egress, unset it.
- `RUNCODE_POLICY_EGRESS_DENY_RANGES`: extra CIDRs, same separators; empty = none.
- `RUNCODE_POLICY_EGRESS_CONFIG`: path of a JSON file
  `{"hostname_allowlist": [...] | null, "deny_ranges": [...]}` (a missing key = null / none;
  any other key is refused, so a typo cannot quietly mean "open"). It cannot be combined with
  the two variables above: two sources for one allowlist invite surprises.

Every bad entry of every setting is named in one EgressConfigError, so the service refuses to
start with the whole list to fix. The test-only `allow_addresses` is never read from here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from application.egress import EgressConfig, checked_config
from domain.errors import EgressConfigError, FieldError

ALLOWLIST_VAR = "RUNCODE_POLICY_EGRESS_ALLOWLIST"
DENY_RANGES_VAR = "RUNCODE_POLICY_EGRESS_DENY_RANGES"
CONFIG_VAR = "RUNCODE_POLICY_EGRESS_CONFIG"
FILE_KEYS = ("hostname_allowlist", "deny_ranges")
_SEPARATORS = re.compile(r"[,\n]")


def egress_config_from_env(env: Mapping[str, str]) -> EgressConfig:
    """The deployment's EgressConfig; EgressConfigError (naming every bad entry) when invalid."""
    path = env.get(CONFIG_VAR)
    if path:
        mixed = [name for name in (ALLOWLIST_VAR, DENY_RANGES_VAR) if name in env]
        if mixed:
            raise _refusal(CONFIG_VAR, f"cannot be combined with {', '.join(mixed)}; use one source")
        return _from_file(Path(path))
    allowlist = split_entries(env[ALLOWLIST_VAR]) if ALLOWLIST_VAR in env else None
    ranges = split_entries(env.get(DENY_RANGES_VAR, ""))
    return _config(allowlist, ranges, (ALLOWLIST_VAR, DENY_RANGES_VAR))


def split_entries(text: str) -> list[str]:
    """`a.example, b.example` or one per line; blanks between separators are dropped."""
    return [piece.strip() for piece in _SEPARATORS.split(text) if piece.strip()]


def _from_file(path: Path) -> EgressConfig:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise _refusal(CONFIG_VAR, f"cannot read {path} as JSON: {error}") from None
    if not isinstance(data, dict):
        raise _refusal(CONFIG_VAR, f"{path} must hold a JSON object with keys {', '.join(FILE_KEYS)}")
    unknown = sorted(set(data) - set(FILE_KEYS))
    if unknown:
        raise _refusal(CONFIG_VAR, f"{path} has unknown key(s) {', '.join(map(repr, unknown))}; "
                                   f"allowed: {', '.join(FILE_KEYS)}")
    fields = (f"{path}: hostname_allowlist", f"{path}: deny_ranges")
    return _config(data.get("hostname_allowlist"), data.get("deny_ranges") or [], fields)


def _config(allowlist, ranges, fields: tuple[str, str]) -> EgressConfig:
    # Validate under the operator's names (the variable or the file), then build.
    allowlist, ranges, _ = checked_config(allowlist, ranges, fields=(*fields, "allow_addresses"))
    return EgressConfig(hostname_allowlist=allowlist, deny_ranges=ranges)


def _refusal(field: str, message: str) -> EgressConfigError:
    return EgressConfigError(f"invalid egress configuration: {field} {message}",
                             [FieldError(field, message)])
