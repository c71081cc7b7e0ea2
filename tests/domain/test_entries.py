"""List entries as admins paste them: separators, comments, canonical names and reported errors."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.entries import parse_entries, split_entries
from domain.limits import MAX_TEXT


def names(language, value):
    found, errors = parse_entries(language, value, "python.allow")
    assert errors == []
    return found


@pytest.mark.parametrize(
    "value",
    [
        "pandas,numpy,requests",
        "pandas\nnumpy\nrequests",
        "pandas\r\nnumpy\r\nrequests",
        "pandas, numpy\nrequests",
        " pandas ,\n\n  numpy,,\r\n requests ,",
        "pandas\rnumpy\rrequests",
        ["pandas", "numpy", "requests"],
        ["pandas, numpy", "requests\n"],
    ],
)
def test_commas_newlines_and_lists_all_separate_entries(value):
    assert names("python", value) == ["pandas", "numpy", "requests"]


def test_blank_lines_and_comment_lines_are_skipped():
    text = "# data science\n\n   \npandas\n  # numpy is next\nnumpy  # pinned elsewhere\n"
    assert names("python", text) == ["pandas", "numpy"]


@pytest.mark.parametrize("line_break", ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_a_comment_ends_where_pip_ends_a_line_so_no_name_hides_in_one(line_break):
    """`pandas # x\u2028evil` had stored `pandas` alone, where pip (str.splitlines) reads `evil` on
    a line of its own: a comment holding such a character is no comment, the entry is refused."""
    for language, text in (("python", f"pandas # x{line_break}evil"), ("node", f"# x{line_break}evil")):
        found, errors = parse_entries(language, ["ok", text], "f")
        assert found == ["ok"] and [e.field for e in errors] == ["f[1]"], (language, errors)
        assert errors[0].message.startswith(repr(text)), errors[0].message
    assert names("python", "pandas # x\tevil\n# a\tcomment") == ["pandas"]  # a tab ends no line


def test_duplicates_collapse_to_the_first_seen_canonical_name():
    assert names("python", "Pandas, numpy, pandas==2.1, PANDAS, python_dateutil, Python-DateUtil") == [
        "pandas",
        "numpy",
        "python-dateutil",
    ]


@pytest.mark.parametrize(
    ("entry", "name"),
    [
        ("pandas==2.1", "pandas"),
        ('Django[argon2]>=4; python_version>"3"', "django"),
        ("requests[socks,security]>=2", "requests"),
        ("requests (>=2.0, <3)", "requests"),
        ("pandas; python_version in '3.8,3.9'", "pandas"),
        ("pandas ~= 2.1", "pandas"),
        ("numpy==1.*", "numpy"),  # a version's wildcard is no pattern
        ("numpy!=1.*", "numpy"),
    ],
)
def test_constraints_extras_and_markers_are_stripped(entry, name):
    assert names("python", entry) == [name]


def test_a_comma_before_a_version_operator_continues_the_python_entry():
    assert names("python", "pandas>=1,<2, numpy!=1.0,~=1.2, scipy") == ["pandas", "numpy", "scipy"]


def test_scoped_npm_names_keep_their_scope_and_lose_their_range():
    found, errors = parse_entries("node", "@scope/pkg@^1, lodash@latest\n@types/node@20\nLodash", "node.allow")
    assert (found, errors) == (["@scope/pkg", "lodash", "@types/node", "Lodash"], [])
    found, errors = parse_entries("node", "lodash@4.*, left-pad@*, @corp/x@*, @corp/*", "node.allow")
    assert (found, errors) == (["lodash", "left-pad", "@corp/x", "@corp/*"], [])


def test_every_bad_entry_is_reported_with_its_position_and_the_rule():
    found, errors = parse_entries(
        "python",
        "pandas\nhttps://x/y.tgz\nrequests@2.0, git+https://x/r.git#egg=r\n-r reqs.txt\n./local\n\u212aeras\nnumpy",
        "python.allow",
    )
    assert found == ["pandas", "numpy"]
    assert [e.field for e in errors] == [f"python.allow[{i}]" for i in range(1, 7)]
    assert errors[0].message.startswith("'https://x/y.tgz' is a url, not a package name")
    assert all("package name" in e.message for e in errors)
    assert "'requests@2.0'" in errors[1].message


def test_npm_aliases_and_nameless_specs_are_not_list_entries():
    found, errors = parse_entries("node", ["lodash", "x@npm:evil", "u/r", "_private"], "node.deny")
    assert found == ["lodash"]
    assert [e.field for e in errors] == ["node.deny[1]", "node.deny[2]", "node.deny[3]"]
    assert "alias" in errors[0].message


def test_list_positions_are_list_indexes_when_each_element_holds_one_entry():
    _, errors = parse_entries("python", ["pandas", "numpy", "https://x"], "python.allow")
    assert [e.field for e in errors] == ["python.allow[2]"]


def test_positions_count_on_across_elements_that_hold_several_entries():
    _, errors = parse_entries("python", ["pandas, numpy", "https://x"], "python.allow")
    assert [e.field for e in errors] == ["python.allow[2]"]


def test_a_string_and_a_list_of_the_same_entries_give_the_same_answer():
    as_text = parse_entries("python", "pandas\n./x\nnumpy", "f")
    as_list = parse_entries("python", ["pandas", "./x", "numpy"], "f")
    assert as_text == as_list


@pytest.mark.parametrize(
    ("element", "said"),
    [(3, "3"), (None, "null"), (True, "true"), ({"name": "x"}, "an object"), ([1], "an array")],
)
def test_a_non_string_list_element_is_an_error_not_a_crash_named_in_jsons_words(element, said):
    """Python's words had been sent back: `None is not a string but NoneType`, `True ... but bool`."""
    found, errors = parse_entries("python", ["pandas", element], "python.allow")
    assert found == ["pandas"]
    assert [e.field for e in errors] == ["python.allow[1]"]
    assert errors[0].message.startswith(f"must be a string, not {said}; ")


def test_surrounding_blanks_are_stripped_from_entries_but_not_inner_ones():
    assert names("node", ["  lodash\t", " Lodash "]) == ["lodash", "Lodash"]
    _, errors = parse_entries("node", "lo dash", "f")
    assert [e.field for e in errors] == ["f[0]"]


def test_empty_input_gives_no_names_and_no_errors():
    assert parse_entries("node", "", "f") == ([], [])
    assert parse_entries("node", [], "f") == ([], [])
    assert parse_entries("python", "\n\n# only a comment\n", "f") == ([], [])


def test_an_entry_longer_than_any_spec_judged_is_refused_naming_it():
    """/evaluate and the index judge specs of at most MAX_TEXT characters: a longer entry could
    never be asked about, and the console's package page could not show it."""
    longest = "a" * MAX_TEXT
    found, errors = parse_entries("python", [longest, longest + "a"], "python.deny")
    assert found == [longest]
    assert [e.field for e in errors] == ["python.deny[1]"]
    assert f"has {MAX_TEXT + 1} characters; a list entry may have at most {MAX_TEXT}" in errors[0].message


HUGE = 1024 * 1024 - 64  # about the largest body a Save or a draft's test takes


@pytest.mark.parametrize(
    ("language", "text", "length"),
    [
        ("python", "a" + ",<1" * (HUGE // 3), 1 + HUGE // 3 * 3),
        ("python", "a" + " , <1" * (HUGE // 5), 1 + HUGE // 5 * 3),  # the blanks around commas go
        ("python", "(a" * (HUGE // 2), HUGE // 2 * 2),
        ("python", "'a" * (HUGE // 2), HUGE // 2 * 2),
        ("node", "a" * HUGE, HUGE),
    ],
    ids=["specifiers", "spaced-specifiers", "open-brackets", "open-quotes", "one-name"],
)
def test_a_pasted_entry_is_kept_no_further_than_any_list_takes(language, text, length):
    """A 1 MiB line of `,<1` was joined into its entry a fragment at a time, copying the entry
    whole each time (8 s before its refusal): an entry is kept no further than MAX_TEXT + 1
    characters, as much as any length check needs, and its refusal names its whole length."""
    assert max(len(e) for e in split_entries(language, text) if isinstance(e, str)) == MAX_TEXT + 1
    _, (error,) = parse_entries(language, text, "python.deny")
    assert error.field == "python.deny[0]" and f"has {length} characters;" in error.message


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 60), st.integers((MAX_TEXT - 120) // 3, (MAX_TEXT + 60) // 3))
def test_an_entry_joined_from_specifiers_is_whole_up_to_max_text_and_its_start_past_it(name, specifiers):
    whole = "a" * name + ",<1" * specifiers
    (entry,) = split_entries("python", whole.replace(",", " , "))
    assert entry == (whole if len(whole) <= MAX_TEXT else whole[: MAX_TEXT + 1])
    if len(whole) > MAX_TEXT:
        _, (error,) = parse_entries("python", whole, "f")
        assert f"has {len(whole)} characters; a list entry may have at most {MAX_TEXT}" in error.message


# -- every fragment is judged: an unclosed bracket or quote hides nothing after it -------------
@pytest.mark.parametrize(
    ("value", "kept", "refused"),
    [
        ("ok, evil[x, evil-two", ["ok", "evil-two"], ["evil[x"]),
        (["evil[x"], [], ["evil[x"]),
        ('evil; python_version == "3', [], ['evil; python_version == "3']),
        ("ok, evil (>=1, evil-two", ["ok", "evil-two"], ["evil (>=1"]),
        ("ok, pandas; python_version in '3.8, evil", ["ok", "evil"], ["pandas; python_version in '3.8"]),
        # whole, its tail is an option's value pip reads past: `evil` would hide in it as `pandas`
        ("pandas --hash=[x, evil", ["evil"], ["pandas --hash=[x"]),
    ],
)
def test_an_unclosed_python_bracket_or_quote_hides_no_entry_after_it(value, kept, refused):
    found, errors = parse_entries("python", value, "python.deny")
    assert found == kept
    assert [e.message.split(" is not ")[0] for e in errors] == [repr(r) for r in refused]


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ("a(b, evil, other", ["a(b", "evil", "other"]),
        ("foo'bar, evil", ["foo'bar", "evil"]),
        ("bad\nx(y, evil-one\nleft'pad", ["bad", "x(y", "evil-one", "left'pad"]),
    ],
)
def test_node_names_with_brackets_or_quotes_are_names_and_split_at_every_comma(value, kept):
    """npm's old names may hold ( ) and ' (validate-npm-package-name's validForOldPackages): they
    are no brackets or quotes there, and nothing npm reads holds a comma."""
    assert parse_entries("node", value, "node.deny") == (kept, [])


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(["python", "node"]), st.text(alphabet="ab-=<>!~;[](),'\" \t\n.*@/", max_size=40))
def test_every_character_typed_lands_in_an_entry(language, text):
    """The splitting is total: the entries and the separators between them (commas, blanks,
    line breaks) make up the whole input, so no fragment escapes being judged."""
    entries = list(split_entries(language, text))
    assert re.sub(r"[\s,]", "", "".join(entries)) == re.sub(r"[\s,]", "", text)


# -- refusals say what is wrong, on one line ----------------------------------------------------
@pytest.mark.parametrize(
    ("entry", "said"),
    [("https://evil/x.whl", "is a url, not a package name"), ("git+https://x/y.whl", "is a version-control source")],
)
def test_a_url_entry_is_refused_as_a_url_even_when_pip_could_not_fetch_it(entry, said):
    _, (error,) = parse_entries("python", entry, "python.deny")
    assert error.message.startswith(f"{entry!r} {said}") and "wheel filename" not in error.message


@pytest.mark.parametrize("language", ["python", "node"])
def test_a_look_alike_letter_is_named_with_its_place(language):
    _, (error,) = parse_entries(language, "r\u0435quests", "f")
    assert error.message.startswith("'r\u0435quests' is not a valid ")
    assert (
        "package name: it holds '\u0435' (U+0435 CYRILLIC SMALL LETTER IE), a look-alike of 'e', at character 2, "
        "and names are ASCII only; " in error.message
    )
    _, (error,) = parse_entries(language, "\u041aeras", "f")
    assert "a look-alike of 'K', at character 1" in error.message


@pytest.mark.parametrize("entry", ["requests 2.0", "evil[x", "foo (>=1", 'evil; python_version == "3', "foo[a,]"])
def test_a_refusal_from_packaging_is_one_line_quoting_the_place(entry):
    _, (error,) = parse_entries("python", entry, "f")
    assert "\n" not in error.message and "^" not in error.message
    assert re.search(r"\(at (the end|'[^']+')\)\)", error.message), error.message


@pytest.mark.parametrize(
    "entry", ["pandas --hash=sha256:x evil", "pandas --hash=[x, evil]", "pandas==2.1 --no-binary :all:"]
)
def test_an_entry_carrying_installer_options_is_refused_not_read_as_its_name_alone(entry):
    """pip drops the words after an option: `evil` typed there would have vanished from the list."""
    names, errors = parse_entries("python", entry, "deny")
    assert names == [] and len(errors) == 1 and "carries installer options" in errors[0].message
