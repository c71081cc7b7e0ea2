"""Counts said in words: `1 checkpoint`, never `1 checkpoints`."""

from __future__ import annotations

from domain.text import noun_for


def test_a_noun_takes_the_singular_for_one_and_the_plural_otherwise():
    assert [noun_for(n, "checkpoint") for n in (0, 1, 2)] == ["checkpoints", "checkpoint", "checkpoints"]
    assert [noun_for(n, "dependency", "dependencies") for n in (1, 5)] == ["dependency", "dependencies"]
