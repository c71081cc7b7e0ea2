"""The tamper-evident audit record: a per-workspace hash chain over every stored event, signed
checkpoints of its heads, and their verification (README, "Audit integrity")."""

from application.chain.audit_chain import AuditChain, NoSigningKeyError
from application.chain.signing import AuditKey, parse_public_key, parse_public_keys

__all__ = ["AuditChain", "AuditKey", "NoSigningKeyError", "parse_public_key", "parse_public_keys"]
