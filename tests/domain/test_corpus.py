"""The project's corpora hold every case of the shared ones. CI has ../shared beside the checkout,
so there the comparison is required; locally without it the test skips loudly."""

from __future__ import annotations

import json
import os

import pytest

from tests.support.corpus import CORPUS_DIR, SHARED_CORPUS_DIR, cases, read_cases


@pytest.mark.parametrize("name", ["specs.jsonl", "egress.jsonl"])
def test_the_projects_corpus_is_in_the_repository(name):
    assert len(cases(name)) >= 98, f"{CORPUS_DIR / name} lost its cases"


@pytest.mark.parametrize("name", ["specs.jsonl", "egress.jsonl"])
def test_every_shared_case_is_in_the_projects_corpus(name):
    shared = SHARED_CORPUS_DIR / name
    if not shared.exists():
        message = f"no shared corpus at {shared}"
        if os.environ.get("CI"):
            pytest.fail(f"{message}; CI must compare the project's corpus with it", pytrace=False)
        pytest.skip(f"SKIPPING THE SHARED CORPUS COMPARISON: {message}")
    own = {json.dumps(case, sort_keys=True) for case in cases(name)}
    missing = [case for case in read_cases(shared) if json.dumps(case, sort_keys=True) not in own]
    assert not missing, f"{len(missing)} shared case(s) missing from tests/corpus/{name}: {missing[:3]}"
