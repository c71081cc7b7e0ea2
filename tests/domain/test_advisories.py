"""OSV `affected` entries as the OSV schema reads them: `versions` lists, and `ranges` whose
introduced / fixed / last_affected events are ordered by PEP 440 (PyPI) or SemVer (npm)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.advisories import read_records
from domain.errors import InvalidInputError
from domain.limits import MAX_ERRORS, MAX_QUOTED, MAX_TEXT

CORPUS = Path(__file__).parents[1] / "corpus" / "osv" / "malicious"


def affected(ecosystem: str, name: str, **entry) -> list:
    return read_records(
        [{"id": "MAL-TEST-1", "affected": [{"package": {"ecosystem": ecosystem, "name": name}, **entry}]}]
    )


def ranged(ecosystem: str, kind: str, *events: dict):
    return affected(ecosystem, "pkg", ranges=[{"type": kind, "events": list(events)}])[0]


@pytest.mark.parametrize("ecosystem, kind", [("npm", "SEMVER"), ("npm", "ECOSYSTEM"), ("PyPI", "ECOSYSTEM")])
def test_introduced_zero_affects_every_version(ecosystem, kind):
    entry = ranged(ecosystem, kind, {"introduced": "0"})
    assert all(entry.affects(v) for v in ("0.0.1", "1.0.0", "99.1.2"))


@pytest.mark.parametrize("ecosystem, kind", [("npm", "SEMVER"), ("PyPI", "ECOSYSTEM")])
def test_a_fixed_version_ends_the_range_and_is_not_affected(ecosystem, kind):
    entry = ranged(ecosystem, kind, {"introduced": "1.2.0"}, {"fixed": "1.4.0"})
    assert [entry.affects(v) for v in ("1.1.9", "1.2.0", "1.3.5", "1.4.0", "2.0.0")] == [
        False,
        True,
        True,
        False,
        False,
    ]


@pytest.mark.parametrize("ecosystem, kind", [("npm", "SEMVER"), ("PyPI", "ECOSYSTEM")])
def test_last_affected_is_included_and_what_follows_is_not(ecosystem, kind):
    entry = ranged(ecosystem, kind, {"introduced": "0"}, {"last_affected": "2.0.0"})
    assert entry.affects("2.0.0") and entry.affects("0.1.0") and not entry.affects("2.0.1")


def test_events_are_read_in_version_order_whatever_order_they_are_written_in():
    entry = ranged("npm", "SEMVER", {"fixed": "1.1.0"}, {"introduced": "2.0.0"}, {"introduced": "1.0.0"})
    assert [entry.affects(v) for v in ("0.9.0", "1.0.5", "1.1.0", "1.9.0", "2.3.0")] == [
        False,
        True,
        False,
        False,
        True,
    ]


def test_npm_orders_pre_releases_before_their_release_by_semver_precedence():
    entry = ranged("npm", "SEMVER", {"introduced": "1.0.0-alpha.2"}, {"fixed": "1.0.0"})
    assert not entry.affects("1.0.0-alpha.1")
    assert entry.affects("1.0.0-alpha.10")  # numeric identifiers compare as numbers
    assert entry.affects("1.0.0-beta")
    assert not entry.affects("1.0.0")
    released = ranged("npm", "SEMVER", {"introduced": "2.0.0"})
    assert not released.affects("2.0.0-rc.1") and released.affects("2.0.0+build.5")


def test_pypi_orders_by_pep_440_not_by_text():
    entry = ranged("PyPI", "ECOSYSTEM", {"introduced": "1.0rc1"}, {"fixed": "1.10"})
    assert not entry.affects("1.0b2")
    assert entry.affects("1.0") and entry.affects("1.9") and entry.affects("1.2.post1")
    assert not entry.affects("1.10") and not entry.affects("1.10.0")


def test_a_versions_list_affects_exactly_those_versions_pep_440_equal_for_pypi():
    [python] = affected("PyPI", "Some_Pkg", versions=["0.0.0.1"])
    assert python.name == "some-pkg"
    assert python.affects("0.0.0.1") and python.affects("0.0.0.1.0") and not python.affects("0.0.0.2")
    [node] = affected("npm", "some-pkg", versions=["1.0.0"])
    assert node.affects("1.0.0") and not node.affects("1.0.1")


def test_a_version_a_range_cannot_order_is_affected_fail_closed():
    entry = ranged("npm", "SEMVER", {"introduced": "1.0.0"}, {"fixed": "2.0.0"})
    assert entry.affects("not-a-version")


def test_other_ecosystems_and_git_ranges_are_left_out():
    assert affected("Go", "example.com/x", versions=["1.0.0"]) == []
    assert affected("Go", "example.com/x", versions=5, ranges=[{"type": "x"}]) == []  # not ours to judge
    git = {"type": "GIT", "repo": "r", "events": [{"introduced": "0"}, {"limit": "*"}]}
    [entry] = affected("npm", "pkg", versions=["1.0.0"], ranges=[git])
    assert entry.affects("1.0.0") and not entry.affects("1.0.1") and entry.ranges == ()
    released = ranged("npm", "SEMVER", {"introduced": "2.0.0"})
    assert not released.affects("2.0.0-rc.1") and released.affects("2.0.0+build.5")


def test_an_entry_whose_only_ranges_are_git_must_list_its_versions():
    """OSV: GIT ranges do "NOT remove the requirement to specify an explicitly enumerated versions
    list". Read alone they name commits, no version the index serves: it had been imported as
    affecting nothing."""
    git = {"type": "GIT", "repo": "r", "events": [{"introduced": "0"}]}
    with pytest.raises(InvalidInputError) as raised:
        affected("npm", "pkg", ranges=[git, git])
    [error] = raised.value.errors
    assert error.field == "records[0].affected[0]" and "GIT" in error.message and "versions" in error.message


def test_a_malformed_record_is_refused_naming_the_field():
    with pytest.raises(InvalidInputError) as raised:
        read_records([{"id": "MAL-X", "affected": [{"package": {"ecosystem": "npm", "name": "a"}, "versions": "1"}]}])
    assert raised.value.errors[0].field == "records[0].affected[0].versions"


@pytest.mark.parametrize(
    "entry, field",
    [
        ({"ranges": [{"type": "ECOSYSTEM", "events": []}]}, "records[0].affected[0].ranges[0].events"),
        ({"ranges": [{"type": "SEMVER", "events": [{"fixed": "9.0.0"}]}]}, "records[0].affected[0].ranges[0].events"),
        (
            {"versions": ["1.0.0"], "ranges": [{"type": "GIT", "repo": "r", "events": [{"fixed": "0"}]}]},
            "records[0].affected[0].ranges[0].events",
        ),
        ({}, "records[0].affected[0]"),
        ({"versions": [], "ranges": []}, "records[0].affected[0]"),
    ],
)
def test_what_osv_calls_invalid_is_refused_rather_than_read_as_affecting_no_version(entry, field):
    """OSV: a range holds an `introduced` event; a version is affected when listed or in a range,
    so an entry with neither names a package and affects none of it."""
    with pytest.raises(InvalidInputError) as raised:
        affected("npm", "pkg", **entry)
    assert [e.field for e in raised.value.errors] == [field]


@pytest.mark.parametrize("stamp", ["garbage", "false", "", 7, "2026-12-02"])
def test_withdrawn_is_an_instant_as_modified_is_so_no_other_text_withdraws_a_record(stamp):
    for field in ("withdrawn", "modified"):
        with pytest.raises(InvalidInputError) as raised:
            read_records([{"id": "MAL-X", field: stamp, "affected": []}])
        assert [e.field for e in raised.value.errors] == [f"records[0].{field}"]
    assert read_records([{"id": "MAL-X", "withdrawn": "2026-12-02T00:00:00Z", "affected": [{"package": {}}]}]) == []


def test_the_real_records_shipped_as_fixtures_are_read():
    records = [json.loads(p.read_text()) for p in sorted(CORPUS.rglob("MAL-*.json"))]
    found = {(a.advisory, a.language, a.name): a for a in read_records(records)}
    assert found[("MAL-2022-9", "node", "0-dns")].affects("1.0.0")
    assert found[("MAL-2025-2925", "python", "0-8")].affects("0.0.0.1")
    assert not found[("MAL-2025-2925", "python", "0-8")].affects("0.0.0.2")


@pytest.mark.parametrize("kind", ["semver", "Ecosystem", None, "", 5, True, {}, [], ["SEMVER"]])
def test_a_range_of_no_osv_type_is_refused_not_read_as_no_range(kind):
    """OSV's types are SEMVER, ECOSYSTEM and GIT. Any other had been skipped: the import said it
    succeeded (201) while its range hid nothing."""
    with pytest.raises(InvalidInputError) as raised:
        ranged("npm", kind, {"introduced": "0"})
    [error] = raised.value.errors
    assert error.field == "records[0].affected[0].ranges[0].type"
    assert "SEMVER, ECOSYSTEM, GIT" in error.message


WRONG_TYPES = [
    ({"ranges": 5}, "records[0].affected[0].ranges"),
    ({"ranges": True}, "records[0].affected[0].ranges"),
    ({"ranges": {"type": "SEMVER"}}, "records[0].affected[0].ranges"),
    ({"ranges": [5]}, "records[0].affected[0].ranges[0]"),
    ({"ranges": [{"type": "SEMVER", "events": 5}]}, "records[0].affected[0].ranges[0].events"),
    ({"ranges": [{"type": "SEMVER", "events": {"introduced": "0"}}]}, "records[0].affected[0].ranges[0].events"),
    (
        {"ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, 7]}]},
        "records[0].affected[0].ranges[0].events[1]",
    ),
    (
        {"ranges": [{"type": "SEMVER", "events": [{"introduced": 0}]}]},
        "records[0].affected[0].ranges[0].events[0].introduced",
    ),
    (
        {"ranges": [{"type": "SEMVER", "events": [{"introduced": "0", "fixed": "1"}]}]},
        "records[0].affected[0].ranges[0].events[0]",
    ),
    ({"versions": "1.0.0"}, "records[0].affected[0].versions"),
    ({"versions": ["1.0.0", None]}, "records[0].affected[0].versions[1]"),
    ({"versions": [["1.0.0"]]}, "records[0].affected[0].versions[0]"),
]


@pytest.mark.parametrize("entry, field", WRONG_TYPES)
def test_a_value_of_the_wrong_type_is_named_never_a_crash(entry, field):
    """`ranges: 5` had raised TypeError (a 500), `enumerate` over a number."""
    with pytest.raises(InvalidInputError) as raised:
        affected("npm", "pkg", **entry)
    assert [e.field for e in raised.value.errors] == [field]


@pytest.mark.parametrize("ecosystem", [["npm"], {"npm": 1}, None, 5, True, "", " "])
def test_an_ecosystem_that_is_no_name_is_refused_not_skipped_as_another_ones(ecosystem):
    """An unhashable one (an array, an object) had raised TypeError, a 500; null, 5, true and ""
    had been skipped as another ecosystem, so the record hid nothing."""
    with pytest.raises(InvalidInputError) as raised:
        affected(ecosystem, "pkg", versions=["1.0.0"])
    [error] = raised.value.errors
    assert error.field == "records[0].affected[0].package.ecosystem"


@pytest.mark.parametrize("ecosystem, spelled", [("NPM", "npm"), ("pypi", "PyPI"), ("Npm", "npm"), ("npm ", "npm")])
def test_a_served_ecosystem_misspelled_is_refused_not_skipped(ecosystem, spelled):
    with pytest.raises(InvalidInputError) as raised:
        affected(ecosystem, "pkg", versions=["1.0.0"])
    [error] = raised.value.errors
    assert error.field == "records[0].affected[0].package.ecosystem" and f"written {spelled}" in error.message


@pytest.mark.parametrize("ecosystem", ["npm", "PyPI"])
def test_a_name_longer_than_any_name_judged_is_refused_without_reading_it(ecosystem):
    """A name of 200,000 characters had been accepted (and read by the npm parser, ~4 µs a
    character): no name longer than MAX_TEXT is judged or asked of the index."""
    with pytest.raises(InvalidInputError) as raised:
        affected(ecosystem, "a" * 200_000, versions=["1.0.0"])
    [error] = raised.value.errors
    assert error.field == "records[0].affected[0].package.name" and str(MAX_TEXT) in error.message
    assert len(raised.value.detail) < 500
    [entry] = affected(ecosystem, "a" * MAX_TEXT, versions=["1.0.0"])
    assert len(entry.name) == MAX_TEXT


def test_every_bad_field_of_every_record_is_named_and_nothing_is_read():
    """It had named only the first (`records[0].id`), one field a round trip."""
    records = [
        {"id": "bad id!", "affected": 5},
        {"id": "MAL-2", "modified": "yesterday", "affected": [{"package": {"ecosystem": "npm", "name": "a@1"}}]},
        {
            "id": "MAL-2",
            "affected": [{"package": {"ecosystem": "npm", "name": "ok"}, "ranges": [{"type": "x", "events": []}]}],
        },
    ]
    with pytest.raises(InvalidInputError) as raised:
        read_records(records)
    assert [e.field for e in raised.value.errors] == [
        "records[0].id",
        "records[0].affected",
        "records[1].modified",
        "records[1].affected[0].package.name",
        "records[2].id",
        "records[2].affected[0].ranges[0].type",
    ]
    assert raised.value.detail.startswith("records[0].id ") and "(and 5 more, named in errors)" in raised.value.detail


def test_the_errors_named_stop_past_max_errors():
    records = [
        {"id": f"MAL-{i}", "affected": [{"package": {"ecosystem": "npm", "name": "x"}, "ranges": i}]}
        for i in range(1000)
    ]
    with pytest.raises(InvalidInputError) as raised:
        read_records(records)
    errors = raised.value.errors
    assert len(errors) == MAX_ERRORS + 1 and "only the first" in errors[-1].message
    assert "(and more, named in errors)" in raised.value.detail


def test_a_refusal_says_what_was_sent_in_json_words_and_quotes_no_more_than_max_quoted():
    """It had said `True`, `None`, `dict`; and echoed a value whole."""
    records = [
        {"id": "x" * 100_000, "affected": [{"package": {"ecosystem": True, "name": None}, "versions": {"a": 1}}]},
        {
            "id": "MAL-1",
            "affected": [{"package": {"ecosystem": "npm", "name": "p"}, "versions": [None, "v" * 100_000]}],
        },
    ]
    with pytest.raises(InvalidInputError) as raised:
        read_records(records)
    said = [raised.value.detail] + [e.message for e in raised.value.errors]
    assert all(len(text) < 2 * MAX_QUOTED + 300 for text in said), said
    words = set(re.findall(r"\w+", " ".join(said)))
    assert not words & {"True", "False", "None", "dict", "list", "int", "NoneType", "str"}, said
    assert {"true", "null", "object"} <= words, said


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _either(*good):
    """A well-formed value, or any JSON in its place."""
    return st.one_of(st.sampled_from(good), JSON)


EVENT = st.one_of(
    st.dictionaries(
        st.sampled_from(["introduced", "fixed", "last_affected", "limit"]), _either("0", "1.0.0", "*"), max_size=2
    ),
    JSON,
)
RANGE = st.one_of(
    st.fixed_dictionaries(
        {"type": _either("SEMVER", "ECOSYSTEM", "GIT"), "events": st.one_of(st.lists(EVENT, max_size=3), JSON)}
    ),
    JSON,
)
ENTRY = st.one_of(
    st.fixed_dictionaries(
        {
            "package": st.one_of(
                st.fixed_dictionaries({"ecosystem": _either("npm", "PyPI", "Go"), "name": _either("pkg", "a@1")}), JSON
            )
        },
        optional={
            "versions": st.one_of(st.lists(_either("1.0.0"), max_size=3), JSON),
            "ranges": st.one_of(st.lists(RANGE, max_size=3), JSON),
        },
    ),
    JSON,
)
RECORD = st.one_of(
    st.fixed_dictionaries(
        {"id": _either("MAL-1", "MAL-2")},
        optional={
            "affected": st.one_of(st.lists(ENTRY, max_size=3), JSON),
            "modified": _either("2026-12-01T00:00:00Z"),
            "withdrawn": _either("2026-12-01T00:00:00Z"),
        },
    ),
    JSON,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(RECORD, max_size=3))
def test_any_json_anywhere_in_a_record_is_read_or_refused_naming_a_field_of_it(records):
    """Whatever JSON a caller sends in whatever field: the records are read, or refused with the
    domain's InvalidInputError naming fields of them; never another exception (a 500)."""
    try:
        read_records(records)
    except InvalidInputError as refused:
        assert refused.errors and all(e.field.startswith("records[") for e in refused.errors)
