"""The audit chain in a deployment: the signing key from the settings, and the background sealer
started with the service (README, "Audit integrity"). The CLI is in `interface.audit.command`."""

from __future__ import annotations

import os
from pathlib import Path

from application.chain import AuditKey, parse_public_key
from domain.errors import FieldError, InvalidInputError
from interface.settings import _publish_once  # the one way to write a secret file once, atomically

KEY_FILE = "audit-signing-key.pem"
KEY_VAR = "RUNCODE_POLICY_AUDIT_KEY_FILE"
PREVIOUS_VAR = "RUNCODE_POLICY_AUDIT_PREVIOUS_KEYS"


def install(governance, settings) -> None:
    """Give the service's application its signing key and start sealing (unless turned off)."""
    if not governance.chain.has_key:
        # A configured key is read now (a wrong path stops the start); the default one is made on
        # first use, so a service that never signs nor verifies writes nothing.
        key = signing_key(settings) if settings.audit_key_file else None
        governance.chain.use_key(key, previous_keys(settings), source=lambda: signing_key(settings))
    if settings.audit_sealing:
        governance.chain.start()


def signing_key(settings, create: bool = True) -> AuditKey | None:
    """The configured key file, else `<data dir>/audit-signing-key.pem`, generated once (mode 0600)
    when `create` is set: the service creates it; verifying never writes."""
    path = settings.audit_key_file or os.path.join(settings.data_dir, KEY_FILE)
    if not os.path.exists(path):
        if settings.audit_key_file:
            raise InvalidInputError(
                f"{KEY_VAR} names {path}, which does not exist",
                [FieldError(KEY_VAR, "must name an existing Ed25519 private key (PEM)")],
            )
        if not create:
            return None
        os.makedirs(settings.data_dir, exist_ok=True)
        _publish_once(path, AuditKey.generate().to_pem().strip())
    return AuditKey.from_pem(Path(path).read_bytes(), KEY_VAR)


def previous_keys(settings) -> list:
    """Public keys of rotated-out signing keys, still trusted for the checkpoints they signed."""
    found = []
    for path in settings.audit_previous_keys:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise InvalidInputError(
                f"{PREVIOUS_VAR}: cannot read {path}: {error.strerror}",
                [FieldError(PREVIOUS_VAR, "must list readable public-key files")],
            ) from None
        found.append(parse_public_key(text, PREVIOUS_VAR))
    return found
