"""`runcode-policy audit verify-proof`, `verify-receipt` and `witness`: checks made away from the
service, with public keys only (the witness adds its own key, which signs nothing but
cosignatures)."""

from __future__ import annotations

import base64
import binascii
import json
import sys
from pathlib import Path

import click
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from application.chain import notes, parse_public_key
from application.chain.links import event_hash
from application.chain.merkle import consistent, inclusion_root, leaf_hash
from application.chain.proofs import ORIGIN_VAR, b64
from application.chain.receipts import ReceiptError, verify_receipt
from application.chain.witness import Refused, Witness, request_body
from interface.audit.push import file_size
from interface.cli.common import FilePath, read_text

key_option = click.option(
    "--key",
    "key_file",
    required=True,
    type=FilePath(exists=True),
    help="The service's public key (PEM, base64, or the public-key document).",
)


def _public(path: str):
    return parse_public_key(read_text(path), path)


def _json(path: str) -> dict:
    try:
        value = json.loads(read_text(path))
    except ValueError:
        raise click.ClickException(f"{path} is not JSON") from None
    if not isinstance(value, dict):
        raise click.ClickException(f"{path} is not a JSON object")
    return value


@click.command("verify-proof")
@click.argument("proof", type=FilePath(exists=True))
@key_option
@click.option(
    "--checkpoint",
    "checkpoint_files",
    multiple=True,
    type=FilePath(exists=True),
    help="A signed checkpoint you hold, instead of the one in the answer (twice for a consistency proof: old, new).",
)
def verify_proof(proof: str, key_file: str, checkpoint_files: tuple[str, ...]) -> None:
    """Check an inclusion or consistency proof (the API's answer, saved) against signed checkpoints."""
    answer, public = _json(proof), _public(key_file)
    held = [read_text(p) for p in checkpoint_files]
    try:
        message = _inclusion(answer, public, held) if "leaf_index" in answer else _consistency(answer, public, held)
    except notes.NoteError as error:
        raise click.ClickException(f"proof verification FAILED: {error}") from None
    except (KeyError, TypeError, ValueError, binascii.Error) as error:
        raise click.ClickException(f"proof verification FAILED: the proof is malformed ({error})") from None
    click.echo(message)


def _hashes(values: list[str]) -> list[bytes]:
    return [base64.b64decode(v, validate=True) for v in values]


def _inclusion(answer: dict, public, held: list[str]) -> str:
    note = held[0] if held else answer["checkpoint"]
    if not note:
        raise click.ClickException("proof verification FAILED: no signed checkpoint (give one with --checkpoint)")
    origin, size, root = notes.open_checkpoint(note, public)
    event = answer["event"]
    digest = event_hash(
        event["originator_id"], event["originator_version"], event["topic"], base64.b64decode(event["state"])
    )
    if digest != answer["event_hash"] or event["originator_id"] != answer["decision"]:
        raise click.ClickException("proof verification FAILED: the record's bytes do not hash to its event hash")
    leaf = leaf_hash(bytes.fromhex(digest))
    if answer.get("leaf_hash", b64(leaf)) != b64(leaf):
        raise click.ClickException(
            f"proof verification FAILED: its leaf_hash {answer['leaf_hash']} is not the leaf of its event hash"
        )
    if answer["tree_size"] != size:
        raise click.ClickException(
            f"proof verification FAILED: the proof is for size {answer['tree_size']}, the checkpoint {size}"
        )
    _as_signed(answer, "root", root)
    if inclusion_root(answer["leaf_index"], size, leaf, _hashes(answer["proof"])) != root:
        raise click.ClickException(
            f"proof verification FAILED: decision {answer['decision']} is not at leaf "
            f"{answer['leaf_index']} of {origin} at size {size}"
        )
    record = answer["leaf_index"] + 1
    return f"decision {answer['decision']} is record {record} of {origin}, in the tree signed at size {size}"


def _as_signed(answer: dict, field: str, root: bytes) -> None:
    """A root the answer states must be the one its signed checkpoint carries: the proof is checked
    against the signed one, and a file that says another would be taken at its word by a reader."""
    if answer.get(field, b64(root)) != b64(root):
        raise click.ClickException(
            f"proof verification FAILED: its {field} {answer[field]} is not the root of its signed checkpoint, "
            f"{b64(root)}"
        )


def _consistency(answer: dict, public, held: list[str]) -> str:
    old_note, new_note = held if len(held) == 2 else (answer["from_checkpoint"], answer["to_checkpoint"])
    if not old_note or not new_note:
        raise click.ClickException(
            "proof verification FAILED: both sizes need a signed checkpoint (give --checkpoint OLD --checkpoint NEW)"
        )
    origin, old, old_root = notes.open_checkpoint(old_note, public)
    other, new, new_root = notes.open_checkpoint(new_note, public)
    if other != origin:
        raise click.ClickException(
            f"proof verification FAILED: the checkpoints are of two logs, {origin} (size {old}) and {other} "
            f"(size {new}): a consistency proof joins two sizes of one log (a log keeps one origin: "
            f"{ORIGIN_VAR} differed where they were signed)"
        )
    if (old, new) != (answer["from"], answer["to"]):
        raise click.ClickException(
            f"proof verification FAILED: the checkpoints are of sizes {old} and {new}, the proof of "
            f"{answer['from']} and {answer['to']}"
        )
    _as_signed(answer, "from_root", old_root)
    _as_signed(answer, "to_root", new_root)
    if not consistent(old, new, old_root, new_root, _hashes(answer["proof"])):
        raise click.ClickException(
            f"proof verification FAILED: {origin} at size {new} does not extend its tree at size {old}: "
            "history was rewritten"
        )
    return f"{origin} at size {new} extends its tree at size {old}: nothing before was changed"


@click.command("verify-receipt")
@click.argument("receipt", type=FilePath(exists=True))
@key_option
def verify_receipt_command(receipt: str, key_file: str) -> None:
    """Check a run receipt offline with the public key only; exit 1 naming any mismatch."""
    try:
        facts = verify_receipt(_json(receipt), _public(key_file))
    except ReceiptError as error:
        raise click.ClickException(f"receipt verification FAILED: {error}") from None
    click.echo(json.dumps(facts, indent=2))
    click.echo(facts["message"], err=True)


@click.command("witness")
@click.option("--state", required=True, type=click.Path(file_okay=False), help="Where the witness keeps what it saw.")
@click.option(
    "--key",
    "key_file",
    required=True,
    type=FilePath(),
    help="The witness's own Ed25519 key (PEM); made if absent.",
)
@click.option(
    "--log-key",
    "log_keys",
    multiple=True,
    required=True,
    type=FilePath(exists=True),
    help="A public key of the service whose checkpoints it witnesses; repeatable.",
)
@click.option("--name", default="runcode-policy/witness", show_default=True, help="The witness's key name.")
@click.argument("source", default="-")
def witness(state: str, key_file: str, log_keys: tuple[str, ...], name: str, source: str) -> None:
    """Cosign checkpoints that extend the last one seen: SOURCE is the RUNCODE_POLICY_AUDIT_WITNESS
    directory or `-` (one add-checkpoint body, or a bare checkpoint, on stdin). Exit 1 naming the
    first checkpoint refused."""
    keeper = Witness(Path(state), name, _witness_key(Path(key_file)), [_public(k) for k in log_keys])
    bodies = _directory(keeper, Path(source)) if source != "-" else [("stdin", _stdin_body(keeper, sys.stdin.read()))]
    for label, body in bodies:
        try:
            cosigned = keeper.add_checkpoint(body)
        except Refused as refusal:
            raise click.ClickException(f"{label}: {refusal.reason}") from None
        click.echo(cosigned, nl=False)
        click.echo(f"cosigned {label}", err=True)


def _witness_key(path: Path) -> Ed25519PrivateKey:
    from interface.settings import _publish_once

    if not path.exists():
        key = Ed25519PrivateKey.generate()
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        _publish_once(str(path), pem.decode("ascii").strip())
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except ValueError as error:
        raise click.ClickException(f"{path} is not a PEM private key: {error}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise click.ClickException(f"{path} must hold an Ed25519 private key")
    return key


def _directory(keeper: Witness, folder: Path) -> list[tuple[str, str]]:
    """Every checkpoint file newer than what the witness cosigned for its log, oldest first."""
    found = []
    for path in sorted(folder.glob("*/*.checkpoint")):
        body = read_text(path)
        try:
            note = body.partition("\n\n")[2]
            origin, size = notes.origin_of(note), file_size(path)
        except ValueError:
            continue
        latest = keeper.latest(origin)
        if latest is None or size > latest[0] or (size == latest[0] and not latest[2].startswith(note)):
            found.append((str(path), body))
    return sorted(found, key=lambda item: file_size(Path(item[0])))


def _stdin_body(keeper: Witness, text: str) -> str:
    """A bare checkpoint on stdin is taken as new from size 0 when the witness saw nothing yet."""
    if text.startswith("old "):
        return text
    if keeper.latest(notes.origin_of(text)) is not None:
        raise click.ClickException("stdin: a bare checkpoint needs its consistency proof (send an add-checkpoint body)")
    return request_body(0, [], text)
