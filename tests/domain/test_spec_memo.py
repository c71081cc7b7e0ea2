"""`parse` answers repeated specs from a bounded memo: the same answers as the parser itself."""

from __future__ import annotations

from domain.specs import MEMO_MAX_TEXT, parse, parse_uncached
from tests.support.corpus import cases


def test_the_memo_gives_every_corpus_spec_the_parsers_own_answer_first_and_second_time():
    for case in cases("specs.jsonl"):
        language, text = case["ecosystem"], case["spec"]
        assert parse(language, text) == parse_uncached(language, text) == parse(language, text)


def test_a_repeated_spec_is_answered_from_the_memo_and_a_long_one_is_never_kept():
    assert parse("python", "pandas==2.1") is parse("python", "pandas==2.1")
    long_text = "pandas" + ",>=1" * MEMO_MAX_TEXT
    assert parse("python", long_text) is not parse("python", long_text)
    assert parse("python", long_text) == parse_uncached("python", long_text)
