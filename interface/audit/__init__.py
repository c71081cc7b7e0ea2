"""The audit chain in a deployment: the signing key (a file, or a command that signs), the public
keys every host trusts, the checkpoints' origin, the witness they are pushed to, and the
background sealer started with the service (docs/audit-integrity.md). The CLI is in
`interface.cli.audit`."""

from __future__ import annotations

import os
from pathlib import Path

from application.chain import AuditKey, parse_public_key
from domain.errors import FieldError, InvalidInputError
from interface.audit.push import WitnessPusher
from interface.audit.signer import CommandSigner
from interface.settings import _publish_once  # the one way to write a secret file once, atomically

KEY_FILE = "audit-signing-key.pem"
KEY_VAR = "RUNCODE_POLICY_AUDIT_KEY_FILE"
PREVIOUS_VAR = "RUNCODE_POLICY_AUDIT_PREVIOUS_KEYS"
TRUSTED_VAR = "RUNCODE_POLICY_AUDIT_TRUSTED_KEYS"
SIGNER_KEY_VAR = "RUNCODE_POLICY_AUDIT_SIGNER_PUBLIC_KEY"


def install(governance, settings) -> None:
    """Give the service's application its signing key and witness, and start sealing (unless off)."""
    configure(governance.chain, settings, create=True)
    if settings.audit_witness and governance.chain.proofs.witness is None:
        governance.chain.proofs.witness = WitnessPusher(settings.audit_witness, governance.chain.proofs.tree)
    if settings.audit_sealing:
        # The signing process makes its key now, not at its first checkpoint: the CLI beside it
        # (`audit checkpoint`) signs with this key and never makes one of its own.
        governance.chain.key  # noqa: B018 - read for its effect
        governance.chain.start(checkpoint_every=settings.audit_checkpoint_seconds)


def configure(chain, settings, create: bool) -> None:
    """The key, the trusted public keys and the origin, for the service (`create`: make the
    default key file on first use) and for the CLI (which never writes one to verify)."""
    if settings.audit_origin:
        chain.proofs.origin_host = settings.audit_origin
    if chain.has_key:
        return
    trusted = previous_keys(settings) + public_keys(settings.audit_trusted_keys, TRUSTED_VAR)
    if settings.audit_signer:
        chain.use_key(command_signer(settings), trusted)
    elif settings.audit_key_file or not create:
        # A configured key is read now (a wrong path stops the start); without one, the CLI reads
        # the default file only if the service made it.
        chain.use_key(signing_key(settings, create=create), trusted)
    else:  # the default one is made on first use, so a service that never signs writes nothing
        chain.use_key(None, trusted, source=lambda: signing_key(settings))


def command_signer(settings) -> CommandSigner:
    if not settings.audit_signer_public_key:
        raise InvalidInputError(
            f"RUNCODE_POLICY_AUDIT_SIGNER needs {SIGNER_KEY_VAR}",
            [FieldError(SIGNER_KEY_VAR, "must name the signer's public key file (PEM or base64)")],
        )
    return CommandSigner(settings.audit_signer, public_keys((settings.audit_signer_public_key,), SIGNER_KEY_VAR)[0])


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
    return public_keys(settings.audit_previous_keys, PREVIOUS_VAR)


def public_keys(paths, variable: str) -> list:
    found = []
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise InvalidInputError(
                f"{variable}: cannot read {path}: {error.strerror}",
                [FieldError(variable, "must list readable public-key files")],
            ) from None
        found.append(parse_public_key(text, variable))
    return found
