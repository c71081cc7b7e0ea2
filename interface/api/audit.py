"""Audit integrity routes: the public key, checkpoints, verification, Merkle proofs, run receipts."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from application.chain.proofs import ORIGIN_VAR
from application.chain.receipts import receipt
from application.chain.sealer import UNATTRIBUTED
from application.chain.verify import PROBLEMS
from domain.limits import MAX_INTEGER, VERIFIES_AT_ONCE, VERIFIES_PER_MINUTE
from domain.token import ANY_ROLE
from interface.api.blueprint import W, api
from interface.api.routing import Rate
from interface.api.schemas import Instant, Query

# A verification is a linear pass over a chain and its read models: a rate of its own, and few at once,
# each in one of the worker's slots (interface.index.bounds); the workspace's and the deployment's share them.
VERIFICATIONS = Rate("verifications", VERIFIES_PER_MINUTE, at_once=VERIFIES_AT_ONCE, one_per_workspace=True)

Hash = Annotated[str, Field(pattern="^[0-9a-f]{64}$", description="SHA-256, lowercase hex")]


class PublicKeyDocument(BaseModel):
    algorithm: Literal["Ed25519"]
    key_id: str = Field(description="the first 16 hex digits of the SHA-256 of the raw public key")
    public_key: str = Field(description="the 32 raw public key bytes, base64")
    pem: str


class PublicKeyAnswer(PublicKeyDocument):
    previous: list[PublicKeyDocument] = Field(description="rotated-out keys whose checkpoints still verify")


class Checkpoint(BaseModel):
    workspace: str
    seq: int = Field(description="the number of records the signed head covers")
    head: Hash
    at: Instant
    key_id: str
    signature: str = Field(
        description="Ed25519 over the UTF-8 lines 'runcode-policy/checkpoint/v1', workspace, seq, head, at; base64"
    )
    note: str | None = Field(
        None,
        description="the same head as a C2SP checkpoint (signed note): origin, tree size, base64 RFC 6962 root; "
        "null when this process holds no signing key",
    )


class CheckpointsPage(BaseModel):
    workspace: str
    checkpoints: list[Checkpoint]
    next_after: int | None = Field(description="pass as `after` for the next page; null on the last")


class CheckpointsQuery(Query):
    after: Annotated[int, Field(ge=0, le=MAX_INTEGER)] = 0  # as seq is
    limit: Annotated[int, Field(ge=1, le=1000)] = 1000


class ChainHead(BaseModel):
    seq: int
    link: Hash


class FailedRecord(BaseModel):
    seq: int | None = None
    notification_id: int | None = None
    originator_id: str | None = None
    originator_version: int | None = None
    topic: str | None = None


class FailedRow(BaseModel):
    table: str
    key: dict[str, Any]
    column: str | None = Field(
        description="the first that differs (`record.allowed` inside a JSON value); null for a row missing or added"
    )
    expected: Any = Field(description="what the sealed events make there")
    found: Any = Field(description="what the table holds")


class VerifyAnswer(BaseModel):
    ok: bool
    checked: int = Field(description="records verified before the answer (all of them when ok)")
    head: ChainHead | None = None
    checkpoints: int | None = Field(None, description="checkpoints the chain was held against")
    unsealed: int | None = Field(
        None, description="records committed and not sealed yet in the one snapshot of the store verification reads"
    )
    problem: Literal[PROBLEMS] | None = None
    detail: str | None = None
    record: FailedRecord | None = Field(None, description="the first record that does not verify")
    row: FailedRow | None = Field(None, description="the first row of a table the service answers from that does not")
    origins: list[str] | None = Field(
        None,
        description="when the checkpoints' signed notes name more than one origin (signed where "
        f"{ORIGIN_VAR} differed), each of them: a proof or receipt joining two does not verify",
    )


@api.route(
    "GET",
    "/audit/public-key",
    "The Ed25519 public key that verifies checkpoints (no authentication)",
    role=None,
    response=PublicKeyAnswer,
    errors=(404,),  # no signing key configured
    store=False,  # the key comes from its file, never the store
)
def get_public_key(gov):
    return gov.chain.public_keys()


@api.route(
    "GET",
    W + "/audit/checkpoints",
    "Signed checkpoints of the workspace's chain, oldest first",
    role="auditor",
    query=CheckpointsQuery,
    response=CheckpointsPage,
)
def get_checkpoints(gov, ws, caller, query):
    return gov.chain.checkpoints(ws, query.after, query.limit)


@api.route(
    "POST",
    W + "/audit/checkpoints",
    "Seal what is recorded and sign the chain's head now",
    role="admin",
    response=Checkpoint,
    status=201,
)
def post_checkpoint(gov, ws, caller):
    return gov.chain.checkpoint(ws), 201


@api.route(
    "GET",
    W + "/audit/verify",
    "Recompute the chain from the store and check every checkpoint",
    role="auditor",
    response=VerifyAnswer,
    rate=VERIFICATIONS,
)
def get_verify(gov, ws, caller):
    return gov.chain.verify(ws)


# The deployment's own chain (application.chain.sealer.UNATTRIBUTED): the advisory imports every
# workspace is judged by, so any workspace's auditor may copy its checkpoints out and verify it.
@api.route(
    "GET",
    "/audit/checkpoints",
    "Signed checkpoints of the deployment's own chain `-` (the advisory imports), oldest first: an auditor "
    "token of any workspace",
    role="auditor",
    query=CheckpointsQuery,
    response=CheckpointsPage,
)
def get_deployment_checkpoints(gov, caller, query):
    return gov.chain.checkpoints(UNATTRIBUTED, query.after, query.limit)


@api.route(
    "GET",
    "/audit/verify",
    "Recompute the deployment's own chain `-` (the advisory imports) and check every checkpoint: an auditor "
    "token of any workspace",
    role="auditor",
    response=VerifyAnswer,
    rate=VERIFICATIONS,
)
def get_deployment_verify(gov, caller):
    return gov.chain.verify(UNATTRIBUTED)


Size = Annotated[int, Field(ge=1, le=MAX_INTEGER)]
Base64Hash = Annotated[str, Field(description="a SHA-256 hash, base64")]
SignedNote = Annotated[str | None, Field(description="the C2SP checkpoint signed at that size, if one was")]


class InclusionQuery(Query):
    decision: str = Field(description="the decision's id")
    size: Size | None = Field(None, description="the tree size to prove against (default: the newest checkpoint's)")


class StoredEvent(BaseModel):
    originator_id: str
    originator_version: int
    topic: str
    state: str = Field(description="the stored bytes, base64: event_hash is computed over them")


class InclusionProof(BaseModel):
    workspace: str
    decision: str
    leaf_index: int = Field(description="the record's seq - 1")
    tree_size: int
    event_hash: Hash
    event: StoredEvent
    leaf_hash: Base64Hash = Field(description="SHA-256(0x00 || the 32 bytes of event_hash)")
    proof: list[Base64Hash] = Field(description="the RFC 6962 audit path, deepest first")
    root: Base64Hash
    checkpoint: SignedNote


class ConsistencyQuery(Query):
    from_: Size = Field(alias="from")
    to: Size | None = Field(None, description="default: the newest checkpoint's size")


class ConsistencyProof(BaseModel):
    workspace: str
    from_: int = Field(alias="from")
    to: int
    proof: list[Base64Hash] = Field(description="the RFC 6962 consistency proof")
    from_root: Base64Hash
    to_root: Base64Hash
    from_checkpoint: SignedNote
    to_checkpoint: SignedNote


class ReceiptDecision(BaseModel):
    model_config = {"extra": "allow"}
    id: str
    allowed: bool
    chain: dict = Field(description="seq, the stored event, and its inclusion proof (base64 hashes)")


class Receipt(BaseModel):
    receipt: Literal["runcode-policy/receipt/v1"]
    workspace: str
    run: dict
    allowed: bool
    key_id: str
    checkpoint: str = Field(description="the signed C2SP checkpoint every proof leads to")
    statement: str = Field(description="a signed note listing the run's decisions as leaf index and leaf hash")
    decisions: list[ReceiptDecision]


@api.route(
    "GET",
    W + "/audit/proof/inclusion",
    "An RFC 6962 inclusion proof of one decision's record in the workspace's tree",
    role="auditor",
    query=InclusionQuery,
    response=InclusionProof,
)
def get_inclusion_proof(gov, ws, caller, query):
    return gov.chain.proofs.inclusion(ws, query.decision, query.size)


@api.route(
    "GET",
    W + "/audit/proof/consistency",
    "An RFC 6962 consistency proof between two sizes of the workspace's tree",
    role="auditor",
    query=ConsistencyQuery,
    response=ConsistencyProof,
)
def get_consistency_proof(gov, ws, caller, query):
    return gov.chain.proofs.consistency(ws, query.from_, query.to)


@api.route(
    "GET",
    W + "/runs/<run_id>/receipt",
    "A run's decisions, each with an inclusion proof against one signed checkpoint (verifiable offline)",
    role=ANY_ROLE,
    response=Receipt,
)
def get_run_receipt(gov, ws, caller, run_id):
    return receipt(gov.chain, ws, gov.index.runs.decisions(ws, run_id, caller))  # a sandbox token: its own runs
