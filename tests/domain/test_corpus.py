"""The project's corpora hold every case of the shared ones (when ../shared is beside the checkout)."""

from __future__ import annotations

import json

import pytest

from tests.support.corpus import CORPUS_DIR, SHARED_CORPUS_DIR, cases, read_cases


@pytest.mark.parametrize("name", ["specs.jsonl", "egress.jsonl"])
def test_the_projects_corpus_is_in_the_repository(name):
    assert len(cases(name)) >= 98, f"{CORPUS_DIR / name} lost its cases"


@pytest.mark.parametrize("name", ["specs.jsonl", "egress.jsonl"])
def test_every_shared_case_is_in_the_projects_corpus(name):
    shared = SHARED_CORPUS_DIR / name
    if not shared.exists():
        pytest.skip(f"no shared corpus at {shared}: nothing to compare")
    own = {json.dumps(case, sort_keys=True) for case in cases(name)}
    missing = [case for case in read_cases(shared) if json.dumps(case, sort_keys=True) not in own]
    assert not missing, f"{len(missing)} shared case(s) missing from tests/corpus/{name}: {missing[:3]}"
