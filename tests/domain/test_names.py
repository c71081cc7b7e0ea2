"""domain.names: which names look alike, and which characters render as nothing."""

from __future__ import annotations

import pytest

from domain.errors import InvalidInputError
from domain.names import check_visible, is_ignorable, skeleton


@pytest.mark.parametrize(
    ("lookalike", "plain"),
    [
        ("\u0430lice", "alice"),  # Cyrillic a
        ("\u0410\u0412\u0415", "abe"),  # Cyrillic capitals
        ("\u0397ELLO", "hello"),  # Greek capital eta
        ("\u03bfscar", "oscar"),  # Greek omicron
        ("\uff41\uff4c\uff49\uff43\uff45", "alice"),  # fullwidth
        ("\U0001d41a\U0001d425ice", "alice"),  # mathematical bold
        ("ALICE", "alice"),
        ("b0b", "bob"),
        ("al\u200bice", "alice"),  # an ignorable is not part of what a name looks like
    ],
)
def test_lookalikes_share_a_skeleton(lookalike, plain):
    assert skeleton(lookalike) == skeleton(plain)


@pytest.mark.parametrize(("one", "other"), [("alice", "alicia"), ("Il", "ll"), ("\u043d", "h"), ("bob", "rob")])
def test_different_names_keep_different_skeletons(one, other):
    assert skeleton(one) != skeleton(other)


def test_the_ignorable_rule_is_category_cf_plus_the_default_ignorable_ranges():
    for char in "\u00ad\u200b\u200c\u200d\u2060\ufeff\u202e\u2066\U000e0041":  # Cf
        assert is_ignorable(char)
    for char in "\u034f\u115f\u3164\uffa0\ufe0f\U000e0100":  # Default_Ignorable_Code_Point, not Cf
        assert is_ignorable(char)
    for char in "a\u00e9 -_:.\u0430\u4e2d":
        assert not is_ignorable(char)


def test_check_visible_names_the_field_and_the_character():
    with pytest.raises(InvalidInputError) as refused:
        check_visible("al\u200bice", "name")
    assert refused.value.errors[0].field == "name" and "U+200B" in refused.value.errors[0].message
