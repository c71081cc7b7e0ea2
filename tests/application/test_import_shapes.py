"""Every import reader takes whatever its parser hands back: any value at any level of a file
may be of the wrong type. Each is either read or refused naming the content (422), never a
crash (a 500 that also lost the console's draft)."""

from __future__ import annotations

import json

import pytest
import yaml

from application.imports import imported_names
from domain.errors import InvalidInputError

WRONG = (5, "x", [1], {"a": 1}, True, [{"a": 1}], {"a": {"b": 1}})
VALID = {
    "package.json": {"name": "app", "dependencies": {"a": "^1"}, "devDependencies": {"b": "npm:c@^2"}},
    "package-lock.json": {
        "lockfileVersion": 3,
        "packages": {"": {"name": "app"}, "node_modules/a": {"version": "1.0.0", "name": "a"}},
    },
    "v1 package-lock.json": {
        "lockfileVersion": 1,
        "dependencies": {"a": {"version": "1.0.0", "dependencies": {"b": {"version": "2.0.0"}}}},
    },
    "pnpm-lock.yaml": {"lockfileVersion": "9.0", "packages": {"a@1.0.0": {"resolution": {"integrity": "x"}}}},
    "yarn.lock": {"__metadata": {"version": 6}, "a@npm:^1": {"version": "1.0.0", "resolution": "a@npm:1.0.0"}},
    "uv.lock": {"version": 1, "package": [{"name": "a", "version": "1", "source": {"registry": "https://x"}}]},
    "poetry.lock": {"package": [{"name": "a", "version": "1", "source": {"type": "legacy", "url": "x"}}]},
    "pylock.toml": {"lock-version": "1.0", "packages": [{"name": "a", "version": "1", "wheels": [{"name": "w"}]}]},
}


def _variants(document, path=()):
    """The document with the value at each path replaced by each wrong-typed value."""
    items = document.items() if isinstance(document, dict) else enumerate(document)
    for key, value in list(items):
        for wrong in WRONG:
            yield path + (key,), _replaced(document, key, wrong)
        if isinstance(value, dict | list):
            for inner_path, inner in _variants(value, path + (key,)):
                yield inner_path, _replaced(document, key, inner)


def _replaced(document, key, value):
    copy = dict(document) if isinstance(document, dict) else list(document)
    copy[key] = value
    return copy


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


def _text(fmt: str, document) -> str:
    if fmt.endswith("json"):
        return json.dumps(document)
    if fmt.endswith((".yaml", "yarn.lock")):
        return yaml.safe_dump(document)
    return "\n".join(f"{json.dumps(str(k))} = {_toml(v)}" for k, v in document.items())


@pytest.mark.parametrize("sample", sorted(VALID))
def test_a_wrong_type_at_any_level_is_read_or_refused_naming_the_content(sample):
    fmt = sample.split()[-1]
    language = "python" if fmt.endswith(("toml", "uv.lock", "poetry.lock")) else "node"
    assert imported_names(language, fmt, _text(fmt, VALID[sample]), "import-")  # the sample itself reads
    for path, document in _variants(VALID[sample]):
        try:
            imported_names(language, fmt, _text(fmt, document), "import-")
        except InvalidInputError as error:
            assert [e.field for e in error.errors] == ["import-content"], (path, error.detail)


@pytest.mark.parametrize(
    ("fmt", "content", "named"),
    [
        ("package.json", '{"dependencies": ["a", "b"]}', "dependencies must be an object"),
        ("package.json", '{"devDependencies": 5}', "devDependencies must be an object"),
        ("package-lock.json", '{"lockfileVersion": 1, "dependencies": [1]}', "dependencies must be an object"),
        ("yarn.lock", '__metadata:\n  version: 6\n"a@npm:^1":\n  version: 1\n  resolution: 5\n', "resolution of"),
        # a name npm would refuse is refused, not dropped: dropped, a name an admin meant to deny
        # went missing from the deny list without a word
        ("package.json", '{"dependencies": {"@/x": "1", "evil-one": "1"}}', "'@/x' is not a Node package name"),
        ("package.json", '{"dependencies": {"Bad Name": "1"}}', "'Bad Name' is not a Node package name"),
        ("package-lock.json", '{"dependencies": {"x*": {"version": "1.0.0"}}}', "'x*' is not a Node package name"),
        ("yarn.lock", 'evil-one@1:\n  version "1.0.0"\n"bad name@1":\n  version "1"\n', "line 3: 'bad name'"),
    ],
)
def test_the_reviewed_shapes_are_refused_in_words(fmt, content, named):
    with pytest.raises(InvalidInputError) as refused:
        imported_names("node", fmt, content, "import-")
    assert named in refused.value.detail


def test_local_git_and_url_sources_are_still_left_out():
    content = '{"dependencies": {"a": "workspace:*", "b": "file:../b", "c": "github:o/c", "d": "^1"}}'
    assert imported_names("node", "package.json", content) == ["d"]
