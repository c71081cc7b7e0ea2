"""The project's own test data: the spec and egress corpora under tests/corpus/.

They started as copies of the shared corpora and grow with every bug found; `test_corpus`
checks they still hold every shared case when ../shared is beside the checkout.
"""

from __future__ import annotations

import json
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parents[1] / "corpus"
SHARED_CORPUS_DIR = Path(__file__).resolve().parents[3] / "shared" / "corpus"


def read_cases(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def cases(name: str) -> list[dict]:
    """The cases of one corpus file (`specs.jsonl`, `egress.jsonl`)."""
    return read_cases(CORPUS_DIR / name)
