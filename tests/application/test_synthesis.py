"""Allowlists synthesised from the decision counts: the claimed coverage is re-checked by
replaying the period, each recorded allowed decision judged again under the synthesised list."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from domain.decision import judge
from domain.errors import InvalidInputError
from domain.specs import parse

INSTALLS = [  # (sandbox, specs) evaluated in denylist mode: all allowed but the invalid one
    ("s1", ["requests", "requests", "requests", "urllib3", "idna"]),
    ("s2", ["requests==2.32", "pandas", "numpy", "numpy"]),
    ("s3", ["pandas", "numpy", "django-rest-framework", "./local/dir", "$bad"]),
    ("s4", ["left-over"]),
]


def record_period(app, workspace):
    for sandbox, specs in INSTALLS:
        app.evaluation.evaluate(workspace, "python", specs, context={"sandbox": sandbox})
    app.evaluation.evaluate(workspace, "node", ["left-pad"], context={"sandbox": "s1"})


def allowed_decisions(app, workspace: str, since: str) -> list[dict]:
    start = datetime.fromisoformat(since).replace(tzinfo=UTC)
    return app.audit.decisions(workspace, {"language": "python", "allowed": True}, start, None, limit=1000)["decisions"]


def replayed_coverage(app, workspace: str, since: str, allow: list[str]) -> float:
    """Judge every recorded allowed decision of the period under the list, as an allowlist."""
    _, rules = app.policies.draft_rules(workspace, {"python": {"mode": "allowlist", "allow": allow}})
    recorded = allowed_decisions(app, workspace, since)
    again = [judge(rules["python"], parse("python", d["spec"]), workspace).allowed for d in recorded]
    return sum(again) / len(again)


@pytest.mark.parametrize("coverage", [0.5, 0.8, 0.99, 1.0])
def test_the_claimed_coverage_equals_the_coverage_replayed_under_the_list(app, workspace, coverage):
    record_period(app, workspace)
    answer = app.synthesis.synthesise(workspace, "python", days=30, coverage=coverage)
    assert answer["coverage"] == replayed_coverage(app, workspace, answer["from"], answer["allow"]) >= coverage
    # the smallest such list: without its lightest name it falls short of the share asked for
    weight = Counter(d["name"] for d in allowed_decisions(app, workspace, answer["from"]))
    lighter = sorted(answer["allow"], key=lambda name: weight[name])[1:]
    assert replayed_coverage(app, workspace, answer["from"], lighter) < coverage


def test_the_heaviest_names_come_first_and_sandboxes_weigh_once_each(app, workspace):
    record_period(app, workspace)
    by_installs = app.synthesis.synthesise(workspace, "python", coverage=0.5)
    assert by_installs["allow"] == ["numpy", "requests"] and by_installs["total"] == 13
    by_sandboxes = app.synthesis.synthesise(workspace, "python", coverage=0.5, by="sandboxes")
    assert by_sandboxes["allow"] == ["numpy", "pandas", "requests"]  # two sandboxes each: 6/10
    assert by_sandboxes["total"] == 10  # (sandbox, name) pairs: the path and the invalid spec were denied


def test_the_impact_is_what_impact_answers_for_the_draft(app, workspace):
    record_period(app, workspace)
    answer = app.synthesis.synthesise(workspace, "python", coverage=0.8)
    assert answer["impact"] == app.impacts.impact(workspace, answer["draft"], 30)
    denied = {p["name"] for p in answer["impact"]["would_deny"]}
    assert denied and not denied & set(answer["allow"])


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"language": "ruby"}, "language"),
        ({"language": "python", "coverage": 0}, "coverage"),
        ({"language": "python", "coverage": 1.5}, "coverage"),
        ({"language": "python", "days": 0}, "days"),
        ({"language": "python", "by": "vibes"}, "by"),
    ],
)
def test_bad_requests_name_the_field(app, workspace, kwargs, field):
    with pytest.raises(InvalidInputError) as refused:
        app.synthesis.synthesise(workspace, **kwargs)
    assert [e.field for e in refused.value.errors] == [field]


def test_a_period_with_nothing_allowed_synthesises_an_empty_list(app, workspace):
    answer = app.synthesis.synthesise(workspace, "node", days=1)
    assert (answer["allow"], answer["coverage"], answer["total"]) == ([], 1.0, 0)
    assert datetime.fromisoformat(answer["from"]).date() == (datetime.now(UTC) - timedelta(days=0)).date()


def test_a_host_allowlist_is_synthesised_from_the_recorded_egress_decisions(app, workspace):
    for host, times in (("api.github.com", 3), ("files.example.org", 1)):
        for _ in range(times):
            app.egress.evaluate_egress(workspace, f"https://{host}/", ["140.82.112.5"], context={"sandbox": "s1"})
    app.egress.evaluate_egress(workspace, "http://127.0.0.1/", ())  # denied: not counted
    answer = app.synthesis.synthesise(workspace, "egress", coverage=0.7)
    assert (answer["allow"], answer["covered"], answer["total"]) == (["api.github.com"], 3, 4)
    assert answer["impact"]["would_deny"] == [
        {"language": "egress", "name": "files.example.org", "installs": 1, "sandboxes": 1}
    ]
    app.save_policy(workspace, answer["draft"], by="alice")
    assert not app.egress.evaluate_egress(workspace, "https://files.example.org/", ["140.82.112.5"])["allowed"]
    assert app.egress.evaluate_egress(workspace, "https://api.github.com/", ["140.82.112.5"])["allowed"]


def test_a_name_the_draft_denies_is_never_proposed_nor_counted_as_covered(app, workspace):
    record_period(app, workspace)  # requests installed 4 times while allowed
    app.save_policy(workspace, {"python": {"mode": "denylist", "deny": ["requests"]}}, by="admin")
    answer = app.synthesis.synthesise(workspace, "python", coverage=1.0)
    assert "requests" not in answer["allow"] and answer["denied"] == ["requests"]
    assert answer["covered"] == answer["total"] - 4 and answer["coverage"] < 1  # requests' 4 installs
    _, rules = app.policies.draft_rules(workspace, answer["draft"])
    assert rules["python"].denies("requests")  # the draft keeps the deny list
    # a pattern in an unsaved draft's deny list counts the same
    drafted = {"python": {"mode": "denylist", "deny": "django-*\nrequests"}}
    answer = app.synthesis.synthesise(workspace, "python", coverage=1.0, draft=drafted)
    assert answer["denied"] == ["django-rest-framework", "requests"]
    assert not {"django-rest-framework", "requests"} & set(answer["allow"])


def test_a_direct_reference_naming_a_package_is_never_counted_as_covered(app, workspace):
    """Allowed under the deny list, refused under any allowlist (the allow list vouches for registry
    names only): in the total, never covered, so the claimed coverage is still the replayed one."""
    record_period(app, workspace)
    direct = ["urlpkg @ https://x.example/urlpkg-1.0-py3-none-any.whl", "numpy @ git+https://x.example/numpy.git"]
    for sandbox in ("s5", "s6"):
        app.evaluation.evaluate(workspace, "python", direct, context={"sandbox": sandbox})
    answer = app.synthesis.synthesise(workspace, "python", coverage=1.0)
    assert answer["total"] == 13 + 4 and answer["covered"] == 13 and "urlpkg" not in answer["allow"]
    assert answer["coverage"] == replayed_coverage(app, workspace, answer["from"], answer["allow"])
    by_sandboxes = app.synthesis.synthesise(workspace, "python", coverage=1.0, by="sandboxes")
    assert (by_sandboxes["covered"], by_sandboxes["total"]) == (10, 10 + 4)  # numpy's s5, s6 are not covered
    denied = {p["name"]: p["installs"] for p in answer["impact"]["would_deny"]}
    assert denied == {"urlpkg": 2, "numpy": 2}  # what the answer's own impact says Save would deny
