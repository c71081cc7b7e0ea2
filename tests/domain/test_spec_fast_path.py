"""The parsers' shortcuts (`domain.specs.fast`) either decline or give the full parser's answer."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from domain.specs import fast, npm, pip
from tests.support.corpus import cases

PARSERS = {"python": (fast.pip_line, pip.parse_line), "node": (fast.npm_arg, npm.parse_arg)}


def agrees(language: str, text: str) -> bool:
    shortcut, full = PARSERS[language]
    answer = shortcut(text)
    return answer is None or answer == full(text)


@pytest.mark.parametrize("case", cases("specs.jsonl"), ids=lambda c: f"{c['ecosystem']}-{c['spec']!r}")
def test_the_shortcut_agrees_with_the_full_parser_on_every_corpus_case(case):
    assert agrees(case["ecosystem"], case["spec"])


TAKEN = [
    ("python", "requests"),
    ("python", "Foo_Bar.baz"),
    ("python", "requests==2.31.0"),
    ("python", "requests>=1,<3"),
    ("python", " requests ~= 2.31 "),
    ("python", "numpy==1.*"),
    ("node", "lodash"),
    ("node", "lodash@4.17.21"),
    ("node", "lodash@^4.17.0"),
    ("node", "lodash@latest"),
    ("node", "@babel/core@~7.24.0"),
    ("node", "@types/node@>=20"),
]


@pytest.mark.parametrize(("language", "text"), TAKEN)
def test_the_common_shapes_take_the_shortcut(language, text):
    """Not vacuous: the shapes the shortcut exists for are answered by it."""
    shortcut, full = PARSERS[language]
    assert shortcut(text) is not None and shortcut(text) == full(text)


# Pieces of the shortcuts' grammars and of everything next to them: separators at the ends of
# names, operators pip or npm read otherwise, versions node-semver or PEP 440 reject, markers,
# extras, URLs, paths, options, comments, tarball and archive suffixes, reserved names,
# lookalike and control characters.
FRAGMENTS = [
    *("requests", "Foo", "a", "z9", "lodash", "node_modules", "favicon.ico", "NODE_MODULES", "npm", "www."),
    *("github", "gitx", "git", "ssh", "https", "github.com", "gist", "file", "x", "X", "v", "latest"),
    *("-", "_", ".", "..", "-_.", "@", "/", "\\", ":", "~", "^", "*", "!", "'", "(", ")", "%20", "%", "+"),
    *("==", "===", "~=", "!=", ">=", "<=", "<", ">", "=", "=>", "~>", "||", " - ", ".*", "*.", "+local"),
    *("0", "1", "01", "1.2", "1.2.3", "1.0.0-rc.1", "1.x", "x.1", "9" * 16, "9" * 20, "1e3", "rc1", "post1"),
    *(" ", "  ", "\t", ",", " , ", ";", "; ", "; python_version<'3'", ";python_version>='3.8'", "[", "]"),
    *("[extra]", "[a,b]", "#", " #c", "#egg=x", "#v1", "git+", "git+https://h/r.git", "https://h/x.tgz"),
    *("npm:", "file:", "C:", "~/", "./", "../", "@scope/", "@types/node", "@.s/", "-e ", "--hash=sha256:00"),
    *(".tgz", ".tar.gz", ".tar", ".TGZ", ".zip", ".whl", ".tar.bz2", ".tbz", ".ZIP"),
    *("${", "${X}", "\u212a", "\u017f", "\u0435", "é", "\u00a0", "\u3000", "\ufeff", "\u2028", "\n", "\r", "\x00"),
    *("\x0b", "\x1f", "\x85", "\uff52", "\u0661"),
]
NAMES = st.one_of(
    st.text("aZ09-_.", min_size=1, max_size=10),
    st.text("aZ09-_.~!*'()@/", min_size=1, max_size=10),
    st.sampled_from(["lodash", "@s/p", "@a.b/c-d", "@types/node", "x.tgz", "favicon.ico"]),
)
PYTHON_OPS = ["==", "!=", "~=", ">=", "<=", "<", ">", "===", "=", ""]
NODE_OPS = ["", "^", "~", ">=", "<=", ">", "<", "=", "v", "~>", ">=v"]
RELEASES = st.lists(st.sampled_from(["0", "1", "01", "12", "9" * 16, "x", "*"]), min_size=1, max_size=3).map(".".join)
SUFFIXES = st.sampled_from(["", "", "", ".*", "*", ".x", "rc1", ".post1", "+local", "-1", "-rc.1", "+b", " ", "v"])
VERSIONS = st.builds("{}{}{}".format, st.sampled_from(["", "", "v"]), RELEASES, SUFFIXES)
ANY_PIECE = st.sampled_from(FRAGMENTS)
WHITE = st.sampled_from(["", "", "", " ", "\t", "  "])

# Fragments strung together: mostly near misses of the grammars, sometimes inside them.
FRAGMENTED = st.lists(ANY_PIECE, min_size=1, max_size=7).map("".join)


@st.composite
def shaped(draw, ops: list[str], separator: str, joiners: list[str]) -> str:
    """Text in or next to a shortcut's shape: a name, operator-version clauses, with a piece of
    anything spliced in at a random place now and then."""
    name = draw(NAMES)
    clauses = draw(st.lists(st.tuples(WHITE, st.sampled_from(ops), WHITE, VERSIONS), max_size=3))
    text = draw(WHITE) + name
    if clauses:
        joiner = draw(st.sampled_from(joiners))
        text += separator + joiner.join(f"{w1}{op}{w2}{version}" for w1, op, w2, version in clauses)
    text += draw(WHITE)
    if draw(st.booleans()):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(ANY_PIECE) + text[at:]
    return text


@settings(max_examples=1500, deadline=None)
@given(st.one_of(FRAGMENTED, shaped(PYTHON_OPS, "", [",", " , ", ";"]), st.text(max_size=12)))
@example("foo.zip")
@example("foo.zip==1")
@example("requests ==1 , >=2")
@example("a~=1")
@example("a>=1.*")
@example("a===1")
def test_the_pip_shortcut_declines_or_agrees(text):
    assert agrees("python", text)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(FRAGMENTED, shaped(NODE_OPS, "@", [" ", " || ", "||", " - "]), st.text(max_size=12)))
@example("node_modules")
@example("@scope/node_modules")
@example("foo.tgz@1")
@example("foo@x.tar")
@example("gitx")
@example("lodash@github")
@example("lodash@.1")
@example("lodash@^" + "9" * 16)
@example("lodash@^0")
@example("lodash@>=0")
def test_the_npm_shortcut_declines_or_agrees(text):
    assert agrees("node", text)
