"""Files the gate reads before an installer reads them again (interface.gate.files): anything but
a regular file is refused, since a pipe or a device can give the installer other bytes than the
gate judged. Each pipe here has a writer, as an attacker's would: without the check the gate
would read it (and judge the harmless first write)."""

from __future__ import annotations

import contextlib
import json
import os
import threading

import pytest

from interface.gate.clients.node.project import is_registry_spec, manifests, workspace_patterns, workspace_root
from interface.gate.clients.python.projects import requirements
from interface.gate.files import NotARegularFile, read_regular
from interface.gate.installers import Unresolvable
from interface.gate.service import CannotVerify


@contextlib.contextmanager
def written_pipe(path, text: bytes):
    """A named pipe at `path` that a writer fills once a reader opens it."""
    os.mkfifo(path)

    def writer():
        with contextlib.suppress(OSError), open(path, "wb") as handle:
            handle.write(text)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        yield path
    finally:
        reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # held open until a writer still waiting ends
        thread.join(timeout=5)
        os.close(reader)


def test_a_regular_file_is_read_and_a_missing_one_is_not_found(tmp_path):
    (tmp_path / "r.txt").write_bytes(b"alpha\n")
    assert read_regular(str(tmp_path / "r.txt")) == b"alpha\n"
    with pytest.raises(FileNotFoundError):
        read_regular(str(tmp_path / "missing.txt"))


@pytest.mark.parametrize("kind", ["pipe", "folder", "device"])
def test_a_pipe_a_folder_or_a_device_is_refused(tmp_path, kind):
    path = {"folder": str(tmp_path), "device": "/dev/zero"}.get(kind, str(tmp_path / "r.txt"))
    with written_pipe(path, b"alpha\n") if kind == "pipe" else contextlib.nullcontext(), pytest.raises(NotARegularFile):
        read_regular(path)


def test_a_package_json_that_is_a_pipe_is_refused(tmp_path):
    with written_pipe(tmp_path / "package.json", b'{"dependencies": {"left-pad": "1"}}'):
        with pytest.raises(Unresolvable, match="not a regular file"):
            manifests(str(tmp_path))


def test_a_package_json_above_that_is_a_pipe_is_refused(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "package.json").write_text("{}")
    with written_pipe(tmp_path / "package.json", b"{}"):
        with pytest.raises(Unresolvable, match="not a regular file"):
            manifests(str(tmp_path / "app"))


def test_a_pyproject_that_is_a_pipe_is_refused(tmp_path):
    with written_pipe(tmp_path / "pyproject.toml", b'[project]\nname = "app"\ndependencies = ["alpha"]\n'):
        with pytest.raises(CannotVerify, match="not a regular file"):
            requirements(str(tmp_path))


@pytest.mark.parametrize("spec", ["..", ".git", "./x", "~/x", "/abs", "\\\\host\\x", "C:x"])
def test_a_spec_npm_reads_as_a_path_is_not_a_registry_spec(spec):
    assert not is_registry_spec(spec)


@pytest.mark.parametrize("spec", ["^1.0.0", "1.x", "latest", ">=1 <2", "*", ""])
def test_ranges_and_tags_are_registry_specs(spec):
    assert is_registry_spec(spec)


@pytest.mark.parametrize(
    ("text", "patterns"),
    [
        ("packages:\n  - 'a/*'\n  - \"b\"  # comment\n  - c\ncatalog:\n  x: ^1\n", ["a/*", "b", "c"]),
        ("packages: [a, 'b/*']\n", ["a", "b/*"]),
        ("# packages: [../x]\nonlyBuiltDependencies: [x]\n", []),
        ('"packages":\n  - "../x"\n', ["../x"]),  # a quoted key is the same key
        ("%YAML 1.2\n---\npackages: [a]\n", ["a"]),
    ],
)
def test_pnpm_workspace_packages_are_read_in_both_list_shapes(tmp_path, text, patterns):
    (tmp_path / "pnpm-workspace.yaml").write_text(text)
    assert [p for _, p in workspace_patterns(str(tmp_path))] == patterns


@pytest.mark.parametrize(
    "text",
    ["packages: *anchor\n", "packages:\n  [a,\n   b]\n", "{packages: [../x]}\n", "packages: ['{../x,a}']\n"],
)
def test_a_pnpm_workspace_packages_shape_it_cannot_read_is_refused(tmp_path, text):
    (tmp_path / "pnpm-workspace.yaml").write_text(text)
    with pytest.raises(Unresolvable, match="the gate can read"):
        workspace_patterns(str(tmp_path))


@pytest.mark.parametrize(
    "pattern",
    ["../sib", "packages/../../x", "/abs/*", "~/x", "!../x", "C:/x", "{../x,packages/*}", "[.][.]/x", "@(..)/x"]
    + [".hidden/*", "packages/?", "a\\..\\..\\x"],
)
def test_a_workspace_pattern_the_gate_cannot_follow_inside_the_root_is_refused(tmp_path, pattern):
    (tmp_path / "package.json").write_text(json.dumps({"workspaces": {"packages": [pattern]}}))
    with pytest.raises(Unresolvable, match="is not one the gate follows inside"):
        workspace_root(str(tmp_path))


@pytest.mark.parametrize(
    "pattern",
    ["packages/*", "./packages/*", "packages/**", "apps/*-web", "!packages/old", "a/", "packages/ä", "my pkgs/*"],
)
def test_plain_workspace_patterns_are_followed(tmp_path, pattern):
    (tmp_path / "package.json").write_text(json.dumps({"workspaces": [pattern]}))
    assert workspace_root(str(tmp_path)) == str(tmp_path)


def test_a_folder_linked_outside_the_workspace_is_refused(tmp_path):
    (tmp_path / "root" / "packages").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "root" / "package.json").write_text(json.dumps({"workspaces": ["packages/*"]}))
    (tmp_path / "root" / "packages" / "link").symlink_to(tmp_path / "outside")
    with pytest.raises(Unresolvable, match="links to .*outside, outside the workspace"):
        manifests(str(tmp_path / "root"))


def test_links_the_walk_would_not_enter_or_without_a_workspace_are_left_alone(tmp_path):
    (tmp_path / "outside").mkdir()
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "package.json").write_text(json.dumps({"workspaces": ["packages/*"]}))
    for skipped in ("node_modules", ".venv"):  # a cache volume, a virtualenv: never a member
        (tmp_path / "ws" / skipped).symlink_to(tmp_path / "outside")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "package.json").write_text("{}")
    (tmp_path / "plain" / "data").symlink_to(tmp_path / "outside")  # no workspace: no folder installed
    assert str(tmp_path / "ws" / "package.json") in manifests(str(tmp_path / "ws"))
    assert str(tmp_path / "plain" / "package.json") in manifests(str(tmp_path / "plain"))


def test_the_workspace_root_is_the_outermost_folder_declaring_one(tmp_path):
    (tmp_path / "pnpm-workspace.yaml").write_text("packages: ['packages/*']\n")
    inner = tmp_path / "packages" / "a"
    inner.mkdir(parents=True)
    (inner / "package.json").write_text('{"workspaces": ["x"]}')
    sibling = tmp_path / "packages" / "b"
    sibling.mkdir()
    (sibling / "package.json").write_text('{"dependencies": {"beta": "file:../x"}}')
    assert workspace_root(str(inner)) == str(tmp_path)
    assert str(sibling / "package.json") in manifests(str(inner))
