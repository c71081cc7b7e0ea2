"""Declared dependencies that are not registry packages: found in every field and spec kind a
client installs from, and judged exactly as the same spec on the command line."""

from __future__ import annotations

import pytest

from application.messages import render_message
from domain.decision import DecisionRecord, judge
from domain.declared import NPM_FIELDS, declared_record, declared_specs, judge_declared
from domain.policy import LanguageRules
from domain.specs import parse

DENYLIST = {
    "node": LanguageRules("node", "denylist", deny=frozenset({"beta"})),
    "python": LanguageRules("python", "denylist", deny=frozenset({"beta"})),
}

NPM_NON_REGISTRY = [
    ("http://host/beta-1.0.0.tgz", "url"),
    ("https://host/beta.tgz", "url"),
    ("git+https://github.com/user/beta.git", "vcs"),
    ("git://host/beta.git#v1", "vcs"),
    ("github:user/beta", "vcs"),
    ("user/beta#main", "vcs"),
    ("file:../beta", "path"),
    ("./beta-1.0.0.tgz", "path"),
    ("beta-1.0.0.tgz", "path"),
    ("~/beta", "path"),
    ("link:../beta", "invalid"),  # pnpm's protocol; npm rejects it
    ("workspace:*", "invalid"),
]
NPM_REGISTRY = ["^1.0.0", "1.x || >=2.5.0", "latest", "*", "", "~1.2", "npm:gamma@^1", "npm:@scope/gamma@1.0.0"]


def npm_found(value, field="dependencies", rules=DENYLIST["node"]):
    return judge_declared(rules, declared_specs("node", {field: {"beta": value}}), "acme")


@pytest.mark.parametrize("field", NPM_FIELDS)
@pytest.mark.parametrize("value, kind", NPM_NON_REGISTRY)
def test_every_npm_non_registry_spec_is_found_and_refused_in_every_field(field, value, kind):
    [found] = npm_found(value, field)
    assert (found.field, found.spec.text, found.spec.kind, found.verdict.allowed) == (
        field,
        f"beta@{value}",
        kind,
        False,
    )
    assert found.verdict == judge(DENYLIST["node"], parse("node", f"beta@{value}"), "acme")  # as on the command line


@pytest.mark.parametrize("value", NPM_REGISTRY)
def test_npm_registry_ranges_tags_and_aliases_pass_through(value):
    assert npm_found(value) == []


def test_an_npm_url_dependency_is_refused_whatever_the_mode_because_its_name_is_unknown():
    allowing = LanguageRules("node", "denylist")
    [found] = npm_found("http://host/anything.tgz", rules=allowing)
    assert found.verdict.reason == "direct-reference" and not found.verdict.allowed
    assert "its package name cannot be known" in shown(found)


@pytest.mark.parametrize(
    "manifest, why",
    [
        ({"dependencies": ["beta"]}, "not a map of names to specs"),
        ({"dependencies": {"beta": 1}}, "its spec is not a string"),
        ({"dependencies": {"beta": "x" * 5000}}, "longer than 4096 characters"),
    ],
)
def test_a_manifest_that_cannot_be_read_is_refused(manifest, why):
    [found] = judge_declared(DENYLIST["node"], declared_specs("node", manifest), "acme")
    assert found.spec.kind == "invalid" and why in found.spec.detail and found.verdict.reason == "invalid-spec"


def test_devdependencies_and_other_fields_are_not_installed_so_not_judged():
    manifest = {"devDependencies": {"beta": "http://host/b.tgz"}, "name": "alpha", "scripts": {"x": "beta"}}
    assert declared_specs("node", manifest) == []


@pytest.mark.parametrize(
    "manifest",
    [
        {"dependencies": {"beta": "^1.0.0"}, "bundleDependencies": ["beta"]},
        {"dependencies": {"beta": "^1.0.0"}, "bundledDependencies": ["beta"]},
        {"dependencies": {"beta": "^1.0.0"}, "bundleDependencies": True},  # every dependency bundled
    ],
)
def test_a_bundled_name_is_judged_by_name_as_it_installs_without_a_fetch(manifest):
    [found] = judge_declared(DENYLIST["node"], declared_specs("node", manifest), "acme")
    assert (found.spec.name, found.verdict.allowed, found.verdict.reason) == ("beta", False, "matches-the-deny-list")
    [allowed] = judge_declared(DENYLIST["node"], declared_specs("node", {"bundleDependencies": ["gamma"]}), "acme")
    assert allowed.verdict.allowed


PYTHON_NON_REGISTRY = [
    ("beta @ http://host/beta-1.0-py3-none-any.whl", "url", "beta", False),
    ("beta @ https://host/beta-1.0.tar.gz ; python_version < '3'", "url", "beta", False),  # markers not evaluated
    ("beta @ git+https://host/beta.git", "vcs", "beta", False),
    ("beta @ file:///tmp/beta", "path", "beta", False),
    ("other @ https://host/other-1.0.tar.gz ; extra == 'x'", "url", "other", True),  # denylist: a named URL passes
]


@pytest.mark.parametrize("text, kind, name, allowed", PYTHON_NON_REGISTRY)
def test_every_pep_508_direct_reference_is_judged_as_on_the_command_line(text, kind, name, allowed):
    [found] = judge_declared(DENYLIST["python"], declared_specs("python", [text]), "acme")
    assert (found.field, found.spec.kind, found.spec.name, found.verdict.allowed) == (
        "Requires-Dist",
        kind,
        name,
        allowed,
    )
    assert found.verdict == judge(DENYLIST["python"], parse("python", text), "acme")


def test_a_url_requirement_is_refused_in_allowlist_mode_even_for_an_allowed_name():
    rules = LanguageRules("python", "allowlist", allow=frozenset({"other"}))
    [found] = judge_declared(rules, declared_specs("python", ["other @ https://host/o.whl"]), "acme")
    assert not found.verdict.allowed and "the allow list vouches for registry names only" in shown(found)


@pytest.mark.parametrize("text", ["beta>=1.0", "beta (>=1.0)", "beta[x]>=1; extra == 'test'", "Beta_Pkg==2.*"])
def test_python_registry_requirements_pass_through(text):
    assert judge_declared(DENYLIST["python"], declared_specs("python", [text]), "acme") == []


def test_the_record_names_the_dependency_and_the_version_it_hides():
    [found] = npm_found("http://host/beta-1.0.0.tgz")
    record = declared_record(found, "alpha@1.1.0", 3, {"source": "index"}, "page", "run-1", None, "1.1.0").to_dict()
    assert record["spec"] == "beta@http://host/beta-1.0.0.tgz" and record["declared_by"] == "alpha@1.1.0"
    assert (record["kind"], record["reason"], record["allowed"], record["package_version"]) == (
        "url",
        "direct-reference",
        False,
        "1.1.0",
    )
    assert record["detail"].startswith("alpha@1.1.0 declares beta@http://host/beta-1.0.0.tgz in dependencies (url): ")
    message = render_message(DecisionRecord.from_dict(record), "acme")
    assert "message" not in record and record["params"]["field"] == "dependencies"
    assert message.startswith(
        "alpha@1.1.0 is not offered because of a dependency it declares in dependencies: "
        "'beta@http://host/beta-1.0.0.tgz' installs from a url source, which is refused in workspace acme"
    )


def shown(found) -> str:
    """What the command line would be told of the same spec."""
    return render_message(DecisionRecord.for_spec(found.spec, found.verdict, 1, None), "acme")
