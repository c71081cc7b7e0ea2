"""OSV `affected` entries as the OSV schema reads them: `versions` lists, and `ranges` whose
introduced / fixed / last_affected events are ordered by PEP 440 (PyPI) or SemVer (npm)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from domain.advisories import read_records
from domain.errors import InvalidInputError

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
    [entry] = affected("npm", "pkg", ranges=[{"type": "GIT", "repo": "r", "events": [{"introduced": "0"}]}])
    assert not entry.affects("1.0.0")
    released = ranged("npm", "SEMVER", {"introduced": "2.0.0"})
    assert not released.affects("2.0.0-rc.1") and released.affects("2.0.0+build.5")


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
