"""Allowlist tools: the allowlist (of packages or of egress hosts) synthesised from the record."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from application.synthesis import SYNTHESIS_LANGUAGES, WEIGHTS
from interface.api.access_models import ImpactAnswer
from interface.api.blueprint import W, api
from interface.api.schemas import Body


class SynthesisBody(Body):
    language: Literal[SYNTHESIS_LANGUAGES]
    days: Annotated[int, Field(ge=1, le=366)] = 30
    coverage: Annotated[float, Field(gt=0, le=1)] = 0.99
    by: Literal[WEIGHTS] = "installs"


class SynthesisAnswer(BaseModel):
    language: str
    by: str
    days: int
    from_: Annotated[str, Field(alias="from", description="First UTC day counted")]
    allow: list[str] = Field(description="the smallest list reaching the coverage asked for")
    denied: list[str] = Field(
        description="recorded names the deny list denies: never proposed, their decisions never covered"
    )
    coverage: float = Field(description="covered / total (1.0 when the period allowed nothing)")
    covered: int
    total: int = Field(description="allowed decisions (or sandbox-name pairs, by=sandboxes) of the period")
    draft: dict | None = Field(None, description="packages: the draft to preview and save (allowlist mode)")
    impact: ImpactAnswer


@api.route(
    "POST",
    W + "/allowlist/synthesis",
    "The smallest allowlist that would have allowed a share of the period's allowed decisions, with its impact",
    role="admin",
    body=SynthesisBody,
    response=SynthesisAnswer,
)
def post_synthesis(gov, ws, caller, body):
    found = gov.synthesis.synthesise(ws, body.language, body.days, body.coverage, body.by)
    return SynthesisAnswer.model_validate(found).model_dump(by_alias=True, exclude_none=True)
