"""API tokens: one aggregate per token, its id derived from the secret's digest.

The secret itself is never stored: only its SHA-256 digest, from which the id is derived, so
authenticating a request is one lookup by id, then a constant-time comparison of digests.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import unicodedata
from functools import lru_cache
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.names import skeleton

ROLES = ("owner", "admin", "auditor", "sandbox")
ROLE_RANK = {"sandbox": 0, "auditor": 1, "admin": 2, "owner": 3}
# The right that adds to the record (evaluate, egress evaluate, and every later one): a role
# "X+" (X or higher) except auditors, whose tokens are read-only.
RECORDING_RIGHT = "sandbox"
# Names the service's own actors write into the record (the CLI's `cli:USER`, the server's first
# start): no token may take one, so the history can never confuse a token with them.
RESERVED_NAME_PREFIXES = ("cli:", "runcode-policy")
READ_ONLY_ROLES = ("auditor",)
# Reads a sandbox may make of what it filed or started (its requests, its runs' decisions), which
# every other role of the workspace may read too (a sandbox token sees only its own).
ANY_ROLE = "any"
WORKSPACE_PATTERN = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
SECRET_PREFIX = "rcp_"
_NAMESPACE = uuid5(NAMESPACE_URL, "https://runcode-policy/tokens")


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


@lru_cache(maxsize=4096)  # pure, and asked on every authenticated request (uuid5 is Python's SHA-1)
def token_id(secret_digest: str) -> UUID:
    return uuid5(_NAMESPACE, secret_digest)


def name_key(name: str) -> str:
    """The key of the store's token-name index (compatibility forms, case and surrounding blanks
    folded): kept as it was, so the index of an existing store can always be rebuilt. Whether a
    new name may be issued is decided by its skeleton (domain.names), which folds more."""
    return unicodedata.normalize("NFKC", name).casefold().strip()


def is_reserved_name(name: str) -> bool:
    return skeleton(name).startswith(tuple(skeleton(p) for p in RESERVED_NAME_PREFIXES))


def role_allows(role: str, needed: str) -> bool:
    """Roles are ordered, except that a sandbox token may only evaluate (the rank does that) and
    a read-only role never holds the recording right."""
    if needed == ANY_ROLE:
        return True
    if needed == RECORDING_RIGHT and role in READ_ONLY_ROLES:
        return False
    return ROLE_RANK[role] >= ROLE_RANK[needed]


class Token(Aggregate):
    """An API token of one workspace with one role; revocation is an event and is final."""

    TOPIC = "runcode_policy:Token"

    class Created(Aggregate.Created):
        # Unused base "created" class; the library requires an explicit topic on it too.
        TOPIC = "runcode_policy:Token.Created"

    @staticmethod
    def create_id(secret_digest: str) -> UUID:
        return token_id(secret_digest)

    @event("Issued", topic="runcode_policy:Token.Issued")
    def __init__(self, secret_digest: str, workspace: str, name: str, role: str, by: str):
        self.secret_digest = secret_digest
        self.workspace = workspace
        self.name = name
        self.role = role
        self.issued_by = by
        self.revoked = False
        self.revoked_by: str | None = None

    def revoke(self, by: str) -> None:
        if not self.revoked:
            self._revoke(by)

    @event("Revoked", topic="runcode_policy:Token.Revoked")
    def _revoke(self, by: str) -> None:
        self.revoked = True
        self.revoked_by = by
