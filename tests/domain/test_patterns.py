"""Deny patterns that shadow allow entries (`domain.patterns.shadowed`): what a draft shows, and
the work it takes to find them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from domain import patterns
from domain.patterns import is_pattern, patterns_for, shadowed
from domain.specs import deny_key


def straightforward(language: str, allow: list[str], deny: list[str]) -> list[dict]:
    """Every deny pattern compared with every allow entry: the answer `shadowed` must give."""

    def covers(wide: str, narrow: str) -> bool:  # every name `narrow` (a pattern) matches also matches `wide`
        wide_key, narrow_key = deny_key(language, wide), deny_key(language, narrow)
        return wide_key == narrow_key or (language == "python" and narrow_key.startswith(wide_key[:-1]))

    def matches(pattern: str, name: str) -> bool:
        return deny_key(language, pattern) in {deny_key(language, p) for p in patterns_for(language, name)}

    found = []
    for pattern in sorted(p for p in deny if is_pattern(p)):
        hits = [e for e in sorted(allow) if (covers(pattern, e) if is_pattern(e) else matches(pattern, e))]
        if hits:
            found.append({"pattern": pattern, "shadows": hits})
    return found


def test_a_deny_pattern_shadows_the_names_and_narrower_patterns_of_the_allow_list():
    allow = {"django-rest-framework", "django-rest-*", "django", "djangox", "flask", "flask-login", "django-*"}
    deny = {"django-*", "django-rest-*", "flask-*", "requests", "numpy-*"}
    assert shadowed("python", allow, deny) == [
        {"pattern": "django-*", "shadows": ["django-*", "django-rest-*", "django-rest-framework"]},
        {"pattern": "django-rest-*", "shadows": ["django-rest-*", "django-rest-framework"]},
        {"pattern": "flask-*", "shadows": ["flask-login"]},
    ]


def test_node_deny_patterns_shadow_their_scope_in_any_case_each_named_as_listed():
    allow = {"@corp/api", "@Corp/ui", "@corp/*", "@other/x", "corp", "@corpx/y"}
    deny = {"@corp/*", "@CORP/*", "@none/*", "left-pad"}
    assert shadowed("node", allow, deny) == [
        {"pattern": "@CORP/*", "shadows": ["@Corp/ui", "@corp/*", "@corp/api"]},
        {"pattern": "@corp/*", "shadows": ["@Corp/ui", "@corp/*", "@corp/api"]},
    ]


def test_nothing_is_shadowed_without_a_deny_pattern():
    assert shadowed("python", {"django-rest", "flask-*"}, {"django-rest", "flask"}) == []


def test_each_allow_entry_looks_its_patterns_up_once_not_once_per_deny_pattern():
    """Every deny pattern was compared with every allow entry, each comparison working out the
    entry's patterns again: 10,000 of each took 89 s in a draft's test and impact. The patterns a
    short name's are remembered (`patterns_for`), so the memo's lookups count the work."""
    count = 300
    deny = {f"p{i}-*" for i in range(count)}
    allow = {f"p{i}-x" for i in range(count)}
    patterns._remembered_patterns.cache_clear()
    found = shadowed("python", allow, deny)
    looked_up = patterns._remembered_patterns.cache_info()
    assert len(found) == count and all(f["shadows"] == [f["pattern"][:-1] + "x"] for f in found)
    assert looked_up.hits + looked_up.misses <= len(allow)  # was len(allow) * len(deny)


SEGMENTS = st.sampled_from(["a", "b", "ab", "A", "a_b"])
PYTHON_NAMES = st.lists(SEGMENTS, min_size=1, max_size=4).map("-".join)
PYTHON_ENTRIES = st.one_of(PYTHON_NAMES, PYTHON_NAMES.map(lambda n: n + "-*"))
SCOPES = st.sampled_from(["@a", "@A", "@b", "@ab"])
NODE_ENTRIES = st.one_of(
    st.sampled_from(["a", "A", "a-b", "@a", "ab"]),
    st.builds(lambda s, n: f"{s}/{n}", SCOPES, st.sampled_from(["x", "X", "x-y"])),
    SCOPES.map(lambda s: s + "/*"),
)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_shadowed_answers_as_comparing_every_pattern_with_every_entry(data):
    language = data.draw(st.sampled_from(["python", "node"]))
    entries = PYTHON_ENTRIES if language == "python" else NODE_ENTRIES
    allow = data.draw(st.frozensets(entries, max_size=12))
    deny = data.draw(st.frozensets(entries, max_size=12))
    assert shadowed(language, allow, deny) == straightforward(language, list(allow), list(deny))
