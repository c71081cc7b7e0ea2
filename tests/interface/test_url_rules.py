"""The app's URL rules compile their builders on first use: every URL built is the one Werkzeug's
own rules build (path arguments quoted, unknown arguments in the query string)."""

from __future__ import annotations

from werkzeug.routing import Map, Rule
from werkzeug.routing.converters import AnyConverter, NumberConverter

from interface import create_app
from interface.url_rules import LazyBuildRule


def _value(converter) -> str:
    """A value the argument's converter takes: one of an `any`'s choices, a number, else text to quote."""
    if isinstance(converter, AnyConverter):
        return sorted(converter.items)[0]
    return "7" if isinstance(converter, NumberConverter) else "a b/ü"


def test_every_route_builds_the_url_werkzeugs_own_rule_builds(tmp_path):
    app = create_app(env={"RUNCODE_POLICY_DATA_DIR": str(tmp_path)})
    rules = list(app.url_map.iter_rules())
    assert len(rules) > 70 and all(isinstance(rule, LazyBuildRule) for rule in rules)
    eager = Map([Rule(rule.rule, endpoint=rule.endpoint, methods=rule.methods) for rule in rules])
    ours, theirs = app.url_map.bind("localhost"), eager.bind("localhost")
    for rule in rules:
        values = {
            argument: _value(rule._converters[argument])
            for argument in rule.arguments
            if argument not in (rule.defaults or {})
        }
        method = sorted(rule.methods)[0]
        for extra in ({}, {"page": "2", "q": "x&y"}):
            built = ours.build(rule.endpoint, {**values, **extra}, method=method)
            assert built == theirs.build(rule.endpoint, {**values, **extra}, method=method), rule.rule
            assert built == ours.build(rule.endpoint, {**values, **extra}, method=method)  # compiled once, kept
