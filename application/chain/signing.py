"""Ed25519 keys for checkpoints: the service's signing key and the public keys a verifier trusts.

A key is named by its id, the first 16 hex digits of the SHA-256 of its raw public bytes, so a
checkpoint says which key signed it and old checkpoints stay checkable after a rotation.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from domain.errors import FieldError, InvalidInputError

ALGORITHM = "Ed25519"


class AuditKey:
    """The private key that signs checkpoints."""

    def __init__(self, private_key: Ed25519PrivateKey):
        self._private = private_key
        self.public = private_key.public_key()
        self.key_id = key_id(self.public)

    @classmethod
    def generate(cls) -> AuditKey:
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_pem(cls, pem: bytes, source: str) -> AuditKey:
        try:
            key = serialization.load_pem_private_key(pem, password=None)
        except (ValueError, TypeError) as error:
            raise _refusal(source, f"is not an unencrypted PEM private key: {error}") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise _refusal(source, "must hold an Ed25519 private key")
        return cls(key)

    def to_pem(self) -> str:
        return self._private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode("ascii")

    def sign(self, message: bytes) -> str:
        return base64.b64encode(self._private.sign(message)).decode("ascii")

    def public_document(self) -> dict:
        return public_document(self.public)


def key_id(public: Ed25519PublicKey) -> str:
    return hashlib.sha256(raw(public)).hexdigest()[:16]


def raw(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def public_document(public: Ed25519PublicKey) -> dict:
    pem = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return {
        "algorithm": ALGORITHM,
        "key_id": key_id(public),
        "public_key": base64.b64encode(raw(public)).decode("ascii"),
        "pem": pem.decode("ascii"),
    }


def parse_public_key(text: str, source: str) -> Ed25519PublicKey:
    """A public key as PEM, as the base64 of its 32 raw bytes, or as the service's public-key
    document (`GET /api/v1/audit/public-key`)."""
    text = text.strip()
    if text.startswith("{"):
        try:
            text = json.loads(text)["public_key"]
            text = text["public_key"] if isinstance(text, dict) else text  # a copied checkpoints file
        except (ValueError, KeyError, TypeError):
            raise _refusal(source, "is JSON without a public_key field") from None
        if not isinstance(text, str):
            raise _refusal(source, "has a public_key that is not text")
    if text.startswith("-----BEGIN"):
        try:
            key = serialization.load_pem_public_key(text.encode("ascii"))
        except (ValueError, UnicodeEncodeError) as error:
            raise _refusal(source, f"is not a PEM public key: {error}") from None
        if not isinstance(key, Ed25519PublicKey):
            raise _refusal(source, "must hold an Ed25519 public key")
        return key
    try:
        return Ed25519PublicKey.from_public_bytes(base64.b64decode(text, validate=True))
    except (ValueError, binascii.Error):
        raise _refusal(source, "must be PEM or the base64 of 32 raw Ed25519 bytes") from None


def parse_public_keys(text: str, source: str) -> list[Ed25519PublicKey]:
    """`parse_public_key`; for the service's public-key document (or a checkpoints copy carrying
    it), also the keys it lists as `previous`: those the deployment trusts for its checkpoints
    (keys rotated out, other instances' keys), as its own verify does."""
    keys = [parse_public_key(text, source)]
    try:
        document = json.loads(text)
    except ValueError:
        return keys  # PEM or base64: one key
    if isinstance(document, dict) and isinstance(document.get("public_key"), dict):
        document = document["public_key"]  # a copied checkpoints file
    previous = document.get("previous") if isinstance(document, dict) else None
    if not isinstance(previous, list):
        return keys
    for index, entry in enumerate(previous):
        if not isinstance(entry, dict):
            raise _refusal(f"{source} previous[{index}]", "must be a public-key document")
        keys.append(parse_public_key(json.dumps(entry), f"{source} previous[{index}]"))
    return keys


def signature_valid(public: Ed25519PublicKey, signature: str, message: bytes) -> bool:
    try:
        public.verify(base64.b64decode(signature, validate=True), message)
    except (InvalidSignature, ValueError, binascii.Error, TypeError):
        return False
    return True


def _refusal(source: str, message: str) -> InvalidInputError:
    return InvalidInputError(f"{source} {message}", [FieldError(source, message)])
