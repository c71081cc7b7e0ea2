"""Counts said in words: `1 checkpoint`, never `1 checkpoints`."""

from __future__ import annotations

from domain.limits import MAX_QUOTED
from domain.text import json_kind, noun_for, quoted


def test_a_noun_takes_the_singular_for_one_and_the_plural_otherwise():
    assert [noun_for(n, "checkpoint") for n in (0, 1, 2)] == ["checkpoints", "checkpoint", "checkpoints"]
    assert [noun_for(n, "dependency", "dependencies") for n in (1, 5)] == ["dependency", "dependencies"]


def test_a_value_is_quoted_back_in_json_words_and_cut_past_max_quoted():
    """A caller sends JSON: `null`, `true`, `{"a": 1}`, never Python's None, True or {'a': 1}."""
    assert [quoted(v) for v in (None, True, False, 5, 1.5, [], {"a": [1]})] == [
        "null",
        "true",
        "false",
        "5",
        "1.5",
        "[]",
        '{"a": [1]}',
    ]
    assert quoted("x") == "'x'" and quoted("x" * 500) == repr("x" * MAX_QUOTED) + "…"
    assert quoted(["y" * 500]) == '["' + "y" * (MAX_QUOTED - 2) + "…"
    assert [json_kind(v) for v in (None, True, 5, 1.5, "s", [], {})] == [
        "null",
        "true",
        "a number",
        "a number",
        "a string",
        "an array",
        "an object",
    ]
