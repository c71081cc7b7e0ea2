"""Audit integrity routes (API.md "Audit integrity"): the public key, checkpoints, verification."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from application.chain.verify import PROBLEMS
from interface.api.blueprint import W, api
from interface.api.schemas import Instant, Query

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


class CheckpointsPage(BaseModel):
    workspace: str
    checkpoints: list[Checkpoint]
    next_after: int | None = Field(description="pass as `after` for the next page; null on the last")


class CheckpointsQuery(Query):
    after: Annotated[int, Field(ge=0, le=2**63 - 1)] = 0  # a BIGINT, like seq
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


class VerifyAnswer(BaseModel):
    ok: bool
    checked: int = Field(description="records verified before the answer (all of them when ok)")
    head: ChainHead | None = None
    checkpoints: int | None = Field(None, description="checkpoints the chain was held against")
    unsealed: int | None = Field(None, description="records committed after the sealer's position")
    problem: Literal[PROBLEMS] | None = None
    detail: str | None = None
    record: FailedRecord | None = Field(None, description="the first record that does not verify")


@api.route(
    "GET",
    "/audit/public-key",
    "The Ed25519 public key that verifies checkpoints (no authentication)",
    role=None,
    response=PublicKeyAnswer,
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
)
def get_verify(gov, ws, caller):
    return gov.chain.verify(ws)
