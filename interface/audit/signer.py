"""A signing key that lives outside the data directory: RUNCODE_POLICY_AUDIT_SIGNER names a
command that reads the message on stdin and writes its Ed25519 signature on stdout (base64, or
the 64 raw bytes), e.g. a script calling an HSM, a KMS or `ssh` to another machine. Its public
key (RUNCODE_POLICY_AUDIT_SIGNER_PUBLIC_KEY) names it and checks every signature it returns."""

from __future__ import annotations

import base64
import binascii
import shlex
import subprocess

from application.chain.signing import key_id, public_document, signature_valid

TIMEOUT_SECONDS = 30


class SignerFailed(RuntimeError):
    pass


class CommandSigner:
    """Stands in for an AuditKey: `public`, `key_id`, `sign`, `public_document`."""

    def __init__(self, command: str, public):
        self.command, self.public = shlex.split(command), public
        self.key_id = key_id(public)

    def sign(self, message: bytes) -> str:
        try:
            done = subprocess.run(self.command, input=message, capture_output=True, timeout=TIMEOUT_SECONDS)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise SignerFailed(f"RUNCODE_POLICY_AUDIT_SIGNER could not run: {error}") from None
        if done.returncode != 0:
            detail = done.stderr.decode("utf-8", "replace").strip()
            raise SignerFailed(f"RUNCODE_POLICY_AUDIT_SIGNER exited {done.returncode}: {detail}")
        signature = done.stdout if len(done.stdout) == 64 else _base64(done.stdout)
        encoded = base64.b64encode(signature).decode("ascii")
        if not signature_valid(self.public, encoded, message):
            raise SignerFailed("RUNCODE_POLICY_AUDIT_SIGNER's signature does not verify under its public key")
        return encoded

    def public_document(self) -> dict:
        return public_document(self.public)


def _base64(text: bytes) -> bytes:
    try:
        return base64.b64decode(text.strip(), validate=True)
    except (ValueError, binascii.Error):
        raise SignerFailed("RUNCODE_POLICY_AUDIT_SIGNER wrote neither base64 nor 64 raw bytes") from None
