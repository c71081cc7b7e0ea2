"""C2SP signed notes (c2sp.org/signed-note), checkpoints (c2sp.org/tlog-checkpoint) and Ed25519
cosignatures (c2sp.org/tlog-cosignature), byte for byte as those specifications write them.

A note is its text (ending in a newline), a blank line, then signature lines `— <key name>
base64(key ID || signature)`; the signature covers the text including its final newline. A key
ID is SHA-256(key name || 0x0A || signature type || 32-byte public key)[:4], type 0x01 for a
log's Ed25519 signature and 0x04 for a timestamped cosignature, whose signed message is
`cosignature/v1\\ntime <POSIX seconds>\\n` followed by the checkpoint's text.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from application.chain.signing import raw

ED25519 = 0x01
COSIGNATURE = 0x04
DASH = "\u2014 "
MAX_SIGNATURES = 100
_SIZE = re.compile(r"^(0|[1-9][0-9]{0,18})$")


class NoteError(ValueError):
    """The note, its signature or the checkpoint in it does not verify; the message says why."""


def key_id(name: str, kind: int, public: Ed25519PublicKey) -> bytes:
    return hashlib.sha256(name.encode("utf-8") + b"\n" + bytes([kind]) + raw(public)).digest()[:4]


def checkpoint_text(origin: str, size: int, root: bytes) -> str:
    return f"{origin}\n{size}\n{base64.b64encode(root).decode('ascii')}\n"


def signature_line(name: str, kind: int, public: Ed25519PublicKey, signature: bytes) -> str:
    return f"{DASH}{name} {base64.b64encode(key_id(name, kind, public) + signature).decode('ascii')}\n"


def sign(text: str, name: str, public: Ed25519PublicKey, sign_base64) -> str:
    """The signed note: `sign_base64` signs bytes and answers the base64 signature (an AuditKey's
    or the signer command's `sign`); the signature is checked before it leaves."""
    signature = base64.b64decode(sign_base64(text.encode("utf-8")))
    try:
        public.verify(signature, text.encode("utf-8"))
    except InvalidSignature:
        raise NoteError("the signer's signature does not verify under its public key") from None
    return text + "\n" + signature_line(name, ED25519, public, signature)


def split(note: str) -> tuple[str, list[tuple[str, bytes, bytes]]]:
    """(text, [(key name, key ID, signature)]) of a well-formed note."""
    if any(ord(c) < 0x20 and c != "\n" for c in note):
        raise NoteError("the note holds a control character")
    at = note.rfind("\n\n")
    if at < 0 or not note.endswith("\n"):
        raise NoteError("the note has no blank line before its signatures")
    text, lines = note[: at + 1], note[at + 2 : -1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise NoteError(f"the note has more than {MAX_SIGNATURES} signatures")
    signatures = []
    for line in lines:
        name, _, encoded = line.removeprefix(DASH).partition(" ")
        try:
            blob = base64.b64decode(encoded, validate=True)
        except (ValueError, binascii.Error):
            blob = b""
        if not line.startswith(DASH) or not name or " " in encoded or len(blob) < 5:
            raise NoteError(f"the note's signature line {line!r} is malformed")
        signatures.append((name, blob[:4], blob[4:]))
    return text, signatures


def open_note(note: str, name: str, public: Ed25519PublicKey) -> str:
    """The note's text, once a signature by (name, public key) verifies over it."""
    text, signatures = split(note)
    wanted = key_id(name, ED25519, public)
    for signer, kid, signature in signatures:
        if signer == name and kid == wanted:
            try:
                public.verify(signature, text.encode("utf-8"))
            except InvalidSignature:
                raise NoteError(f"the signature by {name} does not verify: the note was altered") from None
            return text
    raise NoteError(f"the note carries no signature by {name} with key {wanted.hex()}")


def parse_checkpoint(text: str) -> tuple[str, int, bytes]:
    """(origin, size, root) of a checkpoint's text."""
    lines = text.split("\n")[:-1]
    if len(lines) < 3 or not all(lines):
        raise NoteError("a checkpoint has an origin, a size and a root hash line")
    try:
        root = base64.b64decode(lines[2], validate=True)
    except (ValueError, binascii.Error):
        root = b""
    if not _SIZE.match(lines[1]) or len(root) != 32:
        raise NoteError("the checkpoint's size or root hash line is malformed")
    return lines[0], int(lines[1]), root


def origin_of(note: str) -> str:
    return note.split("\n", 1)[0]


def open_checkpoint(note: str, public: Ed25519PublicKey) -> tuple[str, int, bytes]:
    """A checkpoint signed by its origin's key (the key name is the origin line)."""
    return parse_checkpoint(open_note(note, origin_of(note), public))


def cosignature_message(text: str, timestamp: int) -> bytes:
    return f"cosignature/v1\ntime {timestamp}\n{text}".encode()


def cosign(note: str, name: str, private: Ed25519PrivateKey, timestamp: int) -> str:
    """A cosignature line over the checkpoint in `note`."""
    text, _ = split(note)
    signature = private.sign(cosignature_message(text, timestamp))
    return signature_line(name, COSIGNATURE, private.public_key(), timestamp.to_bytes(8, "big") + signature)
