"""`runcode-policy audit ...`: copy checkpoints out, verify the store (or an export) against them.

Verification trusts only public keys given to it: those of the `--public-key` files, and only those
when any is given (an auditor's key must not be joined by whatever key sits on the host); without
one, the host's: the service's own (when this machine holds its key) and the rotated-out keys of
RUNCODE_POLICY_AUDIT_PREVIOUS_KEYS.
"""

from __future__ import annotations

import json

import click

from application.chain import parse_public_keys
from application.chain.proofs import ORIGIN_VAR
from application.chain.signing import key_id
from application.chain.slices import verify_slice
from application.formats import KeyTwiceError, strict_json
from domain.text import noun_for
from interface.audit import KEY_VAR, configure
from interface.cli.audit_offline import verify_proof, verify_receipt_command, witness
from interface.cli.common import FilePath, governance, read_text
from interface.exports import written
from interface.settings import Settings

NEWER_THAN_CHECKPOINTS = 3  # verify-export's exit status: verified, but not all of it yet (see there)
CHECKPOINT_FIELDS = {"workspace": str, "seq": int, "head": str, "at": str, "key_id": str, "signature": str}

workspace_option = click.option(
    "--workspace",
    "-w",
    default="default",
    show_default=True,
    metavar="SLUG",
    help="The workspace whose chain to use; - for the deployment's own chain (the advisory imports).",
)


def _files_option(flag: str, dest: str, help: str):
    return click.option(
        flag,
        dest,
        multiple=True,
        metavar="FILE",
        type=FilePath(exists=True),
        help=help + "; repeatable.",
    )


checkpoints_option = _files_option(
    "--checkpoints", "checkpoint_files", "Checkpoints copied out earlier (`audit checkpoints`)"
)
public_key_option = _files_option(
    "--public-key",
    "key_files",
    "A public key to trust, and once one is given only those given (PEM, base64, or a file holding the "
    "public-key document, such as a copied checkpoints file)",
)


@click.group()
def audit() -> None:
    """The tamper-evident record: copy checkpoints out, verify against them (README: Audit integrity)."""


def _governance(as_found: bool = False):
    """The store, with the service's signing key if this host has it: the CLI never makes one
    (a key made here would sign checkpoints no instance's trusted keys verify)."""
    gov = governance(as_found=as_found)  # the CLI's one store per invocation
    configure(gov.chain, Settings.from_env(), create=False)
    return gov


def _echo_json(value) -> None:
    click.echo(json.dumps(value, indent=2))


@audit.command("verify")
@workspace_option
@checkpoints_option
@public_key_option
def verify(workspace: str, checkpoint_files: tuple[str, ...], key_files: tuple[str, ...]) -> None:
    """Recompute WORKSPACE's chain from the store and check every checkpoint; exit 1 on any mismatch."""
    gov = _governance(as_found=True)  # it reads the store, never writes it
    copied = [c for path in checkpoint_files for c in read_checkpoints(path)]
    keys = given_keys(key_files) if key_files else gov.chain.trusted_keys()
    result = gov.chain.verify(workspace, copied, keys=keys)
    _echo_json(result)
    if not result["ok"]:
        raise click.ClickException(f"audit verification FAILED: {result['detail']}")
    pending = result.get("unsealed")
    waiting = f"; {pending} recorded since are not sealed yet (audit checkpoint seals them)" if pending else ""
    checked, against = result["checked"], result["checkpoints"]
    click.echo(
        f"verified {checked} {noun_for(checked, 'record')} of {workspace} "
        f"against {against} {noun_for(against, 'checkpoint')}{waiting}",
        err=True,
    )
    if named := result.get("origins"):
        click.echo(
            f"its checkpoints are signed under {len(named)} origins ({', '.join(named)}): a proof or receipt "
            f"joining two of them does not verify; set {ORIGIN_VAR} the same wherever checkpoints are signed",
            err=True,
        )


@audit.command("checkpoints")
@workspace_option
@click.option(
    "--output",
    "-o",
    default="-",
    type=FilePath(allow_dash=True),
    help="Write here, not stdout; the file appears only once complete.",
)
def checkpoints(workspace: str, output: str) -> None:
    """Copy WORKSPACE's signed checkpoints out (JSON, with the public key that verifies them)."""
    gov = _governance()
    document = {"workspace": workspace, "checkpoints": gov.chain.all_checkpoints(workspace)}
    if gov.chain.key is not None:
        document["public_key"] = gov.chain.public_keys()
    with written(output) as out:  # an auditor's earlier copy is kept if this one cannot be written whole
        out.write(json.dumps(document, indent=2) + "\n")
    copied = len(document["checkpoints"])
    click.echo(f"{copied} {noun_for(copied, 'checkpoint')} of {workspace} copied out", err=True)


@audit.command("checkpoint")
@workspace_option
def checkpoint(workspace: str) -> None:
    """Seal what is recorded and sign WORKSPACE's head now."""
    chain = _governance().chain
    if not chain.has_key:
        raise click.ClickException(
            "no audit signing key here: run this where the service keeps its key (its data directory, "
            f"or {KEY_VAR} or its signer, set as the service has them)"
        )
    _echo_json(chain.checkpoint(workspace))


@audit.command("public-key")
def public_key() -> None:
    """The public key that verifies this service's checkpoints (also GET /api/v1/audit/public-key)."""
    _echo_json(_governance().chain.public_keys())


@audit.command("verify-export")
@click.argument("export", type=FilePath(exists=True))
@checkpoints_option
@public_key_option
def verify_export(export: str, checkpoint_files: tuple[str, ...], key_files: tuple[str, ...]) -> None:
    """Check a decisions export made with chain=true against checkpoints, without the store
    (`not_verified` in the answer names what a line shows that is not evidence, such as its message).

    Exit 0: every decision verified; 1: something differs (named); 3: nothing differs, but the
    newest decisions are newer than the newest checkpoint given, so only those before it are
    verified."""
    keys = given_keys(key_files)
    if not keys:
        raise click.UsageError("give the public key to trust with --public-key")
    copied = [c for path in checkpoint_files for c in read_checkpoints(path)]
    result = verify_slice(_export_records(export), copied, keys)
    _echo_json(result)
    if not result["ok"]:
        raise click.ClickException(f"export verification FAILED: {result['detail']}")
    if not result["complete"]:
        click.echo(f"export verified up to record {result['checkpoint']}; {result['detail']}", err=True)
        raise SystemExit(NEWER_THAN_CHECKPOINTS)


def _export_records(export: str):
    """The export's records, one a line, read as they are checked (an export may be any size)."""
    found = 0
    with open(export, encoding="utf-8") as lines:
        try:
            for number, line in enumerate(lines, 1):
                if line.strip():
                    found += 1
                    yield _record(export, number, line)
        except UnicodeDecodeError:
            raise click.ClickException(f"{export} is not UTF-8 text") from None
    if not found:
        raise click.ClickException(f"{export} holds no decisions: nothing to verify")


def _record(export: str, number: int, line: str) -> dict:
    try:
        record = strict_json(line)
    except KeyTwiceError as twice:  # verified, the last value would vouch for a first one other readers take
        raise click.ClickException(
            f"export verification FAILED: {export} line {number}: {twice}, and readers differ on which one counts"
        ) from None
    except ValueError:  # not JSON (NaN too)
        record = None
    if not isinstance(record, dict):
        raise click.ClickException(
            f"{export} line {number} is not a JSON object: verify an export made with --format jsonl --chain"
        )
    return record


def given_keys(key_files: tuple[str, ...]) -> dict:
    """Key id -> public key, of every key the files hold."""
    parsed = [key for path in key_files for key in parse_public_keys(read_text(path), path)]
    return {key_id(k): k for k in parsed}


def read_checkpoints(path: str) -> list[dict]:
    """A file written by `audit checkpoints`, the API's checkpoints answer, a JSON array of
    checkpoints, or one checkpoint per line."""
    text = read_text(path)
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError:
            raise _bad_file(path, "is neither JSON nor JSON lines") from None
    found = data.get("checkpoints") if isinstance(data, dict) else data
    if not isinstance(found, list) or not all(_is_checkpoint(c) for c in found):
        raise _bad_file(path, f"must hold checkpoints with {', '.join(CHECKPOINT_FIELDS)}")
    if not found:  # checked against nothing, a rolled-back or cut store would pass unseen
        raise _bad_file(path, "holds no checkpoints: it cannot check anything (copy them out with audit checkpoints)")
    return found


def _is_checkpoint(value) -> bool:
    return isinstance(value, dict) and all(
        isinstance(value.get(k), t) and not isinstance(value.get(k), bool) for k, t in CHECKPOINT_FIELDS.items()
    )


def _bad_file(path: str, message: str) -> click.ClickException:
    return click.ClickException(f"--checkpoints {path} {message}")


for offline in (verify_proof, verify_receipt_command, witness):  # checks made away from the service
    audit.add_command(offline)
