"""Imports: lockfiles and requirement files made here by the real clients (uv, pip, poetry, npm,
pnpm, yarn 1 and 4) from the fixture upstreams, pasted into POST /policy/changes, become the
allow list of every package they lock (or the direct ones of a manifest); bad content is a 422
naming the line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support import clients
from tests.support.closure_trees import (  # noqa: F401 - fixtures pypi_upstream, npm_upstream, live_env
    node_tree_upstream,
    python_tree_upstream,
    trees_live_env,
)
from tests.support.index_live import sqlite_store  # noqa: F401 - fixture database_url
from tests.support.node_clients import program
from tests.support.python_tools import tool_bin

P = "/api/v1/workspaces/acme"
# what webkit and app-a lock (see test_allowlist_closure: what pip and npm resolve)
PYTHON_TREE = ["certkit", "cycle-a", "cycle-b", "evil-thing", "idnakit", "urlkit", "webkit"]
NODE_TREE = ["app-a", "cyc-x", "cyc-y", "lib-b", "opt-d", "peer-c", "real-e"]


def import_file(live, language: str, fmt: str, content: str, role: str = "admin"):
    change = {"action": "import", "language": language, "list": "allow", "format": fmt, "content": content}
    return live.call("POST", P + "/policy/changes", live.tokens[role], {"note": f"from {fmt}", "changes": [change]})


def allowed_after(live, language: str, fmt: str, content: str) -> list[str]:
    reply = import_file(live, language, fmt, content)
    assert reply.status == 200, reply.body
    return reply.json[language]["allow"]


def python_project(tmp_path: Path) -> Path:
    project = tmp_path / "py"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "probe"\nversion = "1.0"\nrequires-python = ">=3.11"\ndependencies = ["webkit"]\n'
    )
    return project


def made(outcome, path: Path) -> str:
    assert outcome.ok, outcome.output
    return path.read_text()


def test_a_uv_lock_allows_every_locked_package_but_the_project(live, tmp_path, pypi_upstream):
    project, uv = python_project(tmp_path), Path(sys.executable).with_name("uv")
    env = clients.clean_env(tmp_path, UV_NO_CONFIG="1", UV_PYTHON_DOWNLOADS="never", UV_CACHE_DIR=str(tmp_path / "c"))
    argv = [str(uv), "lock", "--python", sys.executable, "--default-index", pypi_upstream.url + "/simple/"]
    lock = made(clients.run(argv, env, cwd=project), project / "uv.lock")
    assert 'name = "probe"' in lock  # the project is in the lockfile, and is no registry package
    assert allowed_after(live, "python", "uv.lock", lock) == PYTHON_TREE


def test_a_pylock_from_pip_lock_allows_every_locked_package(live, tmp_path, pypi_upstream):
    argv = [sys.executable, "-m", "pip", "lock", "--no-cache-dir", "--index-url", pypi_upstream.url + "/simple/"]
    argv += ["-o", str(tmp_path / "pylock.toml"), "webkit"]
    lock = made(clients.run(argv, clients.clean_env(tmp_path, PIP_CONFIG_FILE="/dev/null")), tmp_path / "pylock.toml")
    assert allowed_after(live, "python", "pylock.toml", lock) == PYTHON_TREE


def test_a_poetry_lock_allows_every_locked_package(live, tmp_path, pypi_upstream):
    poetry = tool_bin("poetry") / "poetry"
    project = python_project(tmp_path)
    with (project / "pyproject.toml").open("a") as pyproject:
        pyproject.write(
            f'[[tool.poetry.source]]\nname = "fixture"\nurl = "{pypi_upstream.url}/simple/"\npriority = "primary"\n'
        )
    env = clients.clean_env(tmp_path, POETRY_CACHE_DIR=str(tmp_path / "poetry-cache"))
    lock = made(clients.run([str(poetry), "lock", "--no-interaction"], env, cwd=project), project / "poetry.lock")
    assert allowed_after(live, "python", "poetry.lock", lock) == PYTHON_TREE


def test_a_requirements_file_allows_the_names_it_lists(live):
    content = (
        "# direct dependencies\n--index-url https://example.invalid/simple/\n"
        "WebKit[socks]>=1.0 ; python_version >= '3'  # the browser\n"
        "urlkit==2.0 \\\n    --hash=sha256:" + "0" * 64 + "\n\n"
    )
    assert allowed_after(live, "python", "requirements.txt", content) == ["urlkit", "webkit"]


def test_a_package_lock_allows_every_locked_package_and_the_manifest_its_direct_ones(live, tmp_path, npm_upstream):
    outcome = clients.npm(tmp_path, npm_upstream.url + "/", "unused", "install", "--package-lock-only", "app-a")
    lock = made(outcome, tmp_path / "project" / "package-lock.json")
    manifest = (tmp_path / "project" / "package.json").read_text()
    assert allowed_after(live, "node", "package.json", manifest) == ["app-a"]
    assert allowed_after(live, "node", "package-lock.json", lock) == NODE_TREE


def test_a_pnpm_lock_allows_every_locked_package(live, tmp_path, npm_upstream):
    outcome = clients.pnpm(tmp_path, npm_upstream.url + "/", "unused", "add", "--lockfile-only", "app-a")
    lock = made(outcome, tmp_path / "project" / "pnpm-lock.yaml")
    assert allowed_after(live, "node", "pnpm-lock.yaml", lock) == NODE_TREE


@pytest.mark.parametrize("client", ["yarn1", "yarn4"])
def test_a_yarn_lock_allows_every_locked_package(live, tmp_path, npm_upstream, client):
    project = clients.npm_project(tmp_path, {"app-a": "^1.0.0"})
    registry = npm_upstream.url + "/"
    (project / ".yarnrc.yml").write_text(
        f'npmRegistryServer: "{npm_upstream.url}"\nunsafeHttpWhitelist: ["127.0.0.1"]\n'
        "enableTelemetry: false\nnodeLinker: node-modules\nenableGlobalCache: false\n"
    )
    env = clients.clean_env(tmp_path, YARN_CACHE_FOLDER=str(tmp_path / "yarn-cache"), COREPACK_ENABLE_STRICT="0")
    argv = ["node", str(program(client))]
    argv += (
        ["install", "--registry", registry, "--ignore-scripts"]
        if client == "yarn1"
        else ["install", "--mode", "update-lockfile"]
    )
    lock = made(clients.run(argv, env, cwd=project), project / "yarn.lock")
    # yarn, unlike npm 7+ and pnpm, does not install peer dependencies: its lockfile has no peer-c
    assert allowed_after(live, "node", "yarn.lock", lock) == [n for n in NODE_TREE if n != "peer-c"]


@pytest.mark.parametrize(
    "language, fmt, content, line",
    [
        (
            "python",
            "requirements.txt",
            "webkit\n\n./vendor/thing\n",
            "line 3: './vendor/thing' is not a registry requirement",
        ),
        ("python", "uv.lock", 'version = 1\n[[package]]\nname = "x\n', "line 3"),
        ("node", "package-lock.json", '{\n  "packages": {\n    "node_modules/x": \n}', "line 4"),
        ("node", "pnpm-lock.yaml", "packages:\n  a: [\n", "line 3"),
        ("node", "yarn.lock", "# yarn lockfile v1\n\nleft-pad@^1.0.0:\nnot a header\n", "line 4"),
    ],
)
def test_bad_content_is_refused_naming_the_line_and_nothing_is_saved(live, app, language, fmt, content, line):
    version = app.policy("acme")["version"]
    reply = import_file(live, language, fmt, content)
    assert reply.status == 422, reply.body
    assert reply.json["errors"][0]["field"] == "changes[0].content" and line in reply.json["errors"][0]["message"]
    assert app.policy("acme")["version"] == version


DEEP = 5000  # past the parsers' recursion limit


@pytest.mark.parametrize(
    "language, fmt, content",
    [
        ("node", "package-lock.json", "[" * DEEP + "]" * DEEP),
        ("node", "package.json", '{"a":' * DEEP + "1" + "}" * DEEP),
        ("node", "pnpm-lock.yaml", "[" * DEEP + "]" * DEEP),
        ("python", "uv.lock", "a = " + "[" * DEEP + "]" * DEEP),
    ],
)
def test_content_nested_past_the_parsers_depth_is_refused_naming_it(live, app, language, fmt, content):
    version = app.policy("acme")["version"]
    reply = import_file(live, language, fmt, content)
    assert reply.status == 422, reply.body
    assert reply.json["errors"][0] == {"field": "changes[0].content", "message": "nested too deeply"}
    assert app.policy("acme")["version"] == version


def test_a_format_of_the_other_language_is_refused(live):
    reply = import_file(live, "python", "yarn.lock", "")
    assert reply.status == 422 and reply.json["errors"][0]["field"] == "changes[0].format"


def test_the_console_turns_a_pasted_file_into_an_unsaved_previewed_draft(live, app):
    from tests.interface.test_console import P as PAGE
    from tests.interface.test_console import signed_in

    app.save_policy("acme", {"python": {"mode": "allowlist", "allow": ["urlkit"]}}, by="founder")
    version = app.policy("acme")["version"]
    console = signed_in(live)
    form = console.get(PAGE).form()
    pasted = [("import-language", "python"), ("import-format", "requirements.txt")]
    pasted.append(("import-content", "webkit>=1\nurlkit\ncertkit  # certificates\n"))
    fields = [(n, v) for n, v in form.fields if not n.startswith("import-")] + pasted
    draft = console.post(PAGE + "/import", fields)
    assert draft.status == 200, draft.text
    assert "Added 2 of the 3 packages requirements.txt lists to the Python allow list above." in draft.plain
    assert "Nothing is saved yet" in draft.plain and "What this draft would change" in draft.plain
    assert draft.form().get("python-allow") == "urlkit\nwebkit\ncertkit"
    assert app.policy("acme")["version"] == version  # a draft, not a save
    saved = console.follow(console.submit(draft))
    assert "Saved." in saved.plain and app.policy("acme")["python"]["allow"] == ["certkit", "urlkit", "webkit"]


def test_the_console_names_the_bad_line_of_a_pasted_file(live, app):
    from tests.interface.test_console import P as PAGE
    from tests.interface.test_console import signed_in

    console = signed_in(live)
    fields = [(n, v) for n, v in console.get(PAGE).form().fields if not n.startswith("import-")]
    fields += [("import-language", "node"), ("import-format", "yarn.lock"), ("import-content", "a@1:\nnope\n")]
    refused = console.post(PAGE + "/import", fields)
    assert refused.status == 422 and "line 2: 'nope' is not a yarn.lock entry header" in refused.plain


def test_a_refused_import_keeps_the_pasted_file_and_what_was_chosen(live, app):
    from tests.interface.test_console import P as PAGE
    from tests.interface.test_console import signed_in

    console = signed_in(live)
    pasted = '{"dependencies":{"left-pad":"^1","Bad Name":"1","react":"^18"}}'
    requirements = "webkit\n./vendor/thing\nurlkit\n-e nope\n"
    for language, fmt, content, said in (
        ("node", "package.json", pasted, "'Bad Name' is not a Node package name"),
        ("python", "requirements.txt", requirements, "line 4: '-e nope' is not a registry requirement"),
    ):
        fields = [(n, v) for n, v in console.get(PAGE).form().fields if not n.startswith("import-")]
        fields += [("import-language", language), ("import-format", fmt), ("import-content", content)]
        refused = console.post(PAGE + "/import", fields)
        assert refused.status == 422 and "File content:" in refused.plain and said in refused.plain, refused.plain
        again = refused.form()  # as typed and chosen, to correct rather than paste and choose again
        assert [again.get(f"import-{k}") for k in ("language", "format", "content")] == [language, fmt, content]
    assert "line 2: './vendor/thing' is not a registry requirement" in refused.plain  # every bad line named


def test_every_bad_line_of_a_requirements_file_is_named_up_to_the_cap(live, app):
    from domain.limits import MAX_ERRORS

    reply = import_file(live, "python", "requirements.txt", "webkit\n./a\nurlkit\n-e b\n./c\n")
    assert reply.status == 422 and [e["message"].split(":")[0] for e in reply.json["errors"]] == [
        "line 2",
        "line 4",
        "line 5",
    ]
    assert "(and 2 more, named in errors)" in reply.json["detail"]
    reply = import_file(live, "python", "requirements.txt", "./x\n" * 5000)
    errors = reply.json["errors"]
    assert (
        reply.status == 422
        and len(errors) == MAX_ERRORS + 1
        and errors[MAX_ERRORS - 1]["message"].startswith(f"line {MAX_ERRORS}:")
    )
    assert f"only the first {MAX_ERRORS} errors are named" in errors[-1]["message"]


def test_the_console_names_the_language_field_of_an_unknown_language(live, app):
    from tests.interface.test_console import P as PAGE
    from tests.interface.test_console import signed_in

    console = signed_in(live)
    fields = [(n, v) for n, v in console.get(PAGE).form().fields if not n.startswith("import-")]
    fields += [("import-language", "ruby"), ("import-format", "requirements.txt"), ("import-content", "rails\n")]
    refused = console.post(PAGE + "/import", fields)
    assert refused.status == 422 and "Language of the file: must be python or node" in refused.plain, refused.plain


@pytest.mark.parametrize(
    "fmt, content",
    [
        ("package.json", '{"dependencies": ["a", "b"]}'),
        ("package.json", '{"devDependencies": 5}'),
        ("package-lock.json", '{"lockfileVersion": 1, "dependencies": [1]}'),
        ("yarn.lock", '__metadata:\n  version: 6\n"a@npm:^1":\n  version: 1\n  resolution: 5\n'),
    ],
)
def test_content_of_the_wrong_shape_is_refused_and_the_console_keeps_the_draft(live, app, fmt, content):
    from tests.interface.test_console import P as PAGE
    from tests.interface.test_console import signed_in

    reply = import_file(live, "node", fmt, content)
    assert reply.status == 422, reply.body
    assert reply.json["errors"][0]["field"] == "changes[0].content"
    console = signed_in(live)
    fields = [(n, v) for n, v in console.get(PAGE).form().fields if not n.startswith("import-")]
    fields = [(n, "pandas\nnumpy" if n == "python-allow" else v) for n, v in fields]
    fields += [("import-language", "node"), ("import-format", fmt), ("import-content", content)]
    refused = console.post(PAGE + "/import", fields)
    assert refused.status == 422, refused.text
    assert "The file cannot be imported" in refused.plain or "the file cannot be imported" in refused.plain
    assert "File content:" in refused.plain and "import-content" not in refused.plain
    assert refused.form().get("python-allow") == "pandas\nnumpy"  # the unsaved draft is kept
    assert app.policy("acme")["version"] == 0
