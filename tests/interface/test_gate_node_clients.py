"""Every Node client for real through the gate and the service's npm registry: npm (`install
NAME`, `install`, `ci`), pnpm, yarn 1, yarn 4 and bun, project installs above all.

Two fixture registries on loopback: the index's upstream, and a "public" one on another port
that stands for the public registry an agent's lockfile or .npmrc may name. Its request log must
stay empty during every gated run, as must that of a proxy a project's settings name. Both serve
alpha 1.0.0 (depends on beta), alpha 0.9.0 (no dependencies: the older release a resolver could
fall back to), beta, gamma and @evil/x.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import subprocess
import urllib.parse

import pytest

from tests.support.fixture_server import FileHost
from tests.support.gate import Gate, sandbox_env
from tests.support.index_fixtures import set_policy
from tests.support.index_live import sqlite_store  # noqa: F401 - fixture database_url: SQLite only
from tests.support.node_clients import bin_dir, program
from tests.support.npm_upstream import NpmUpstream, Release
from tests.support.upstream_network import ForwardProxy

RELEASES = (
    Release("alpha", "0.9.0"),
    Release("alpha", "1.0.0", dependencies={"beta": "^1.0.0"}),
    Release("beta", "1.0.0"),
    Release("gamma", "1.0.0"),
    Release("@evil/x", "1.0.0"),
)
PROJECT_INSTALLS = {  # client -> the project install the gate runs
    "npm": ("npm", "install"),
    "npm-ci": ("npm", "ci"),
    "pnpm": ("pnpm", "install"),
    "yarn1": ("yarn", "install"),
    "yarn4": ("yarn", "install"),
    "bun": ("bun", "install"),
}
CLIENTS = list(PROJECT_INSTALLS)
LOCKFILES = {"npm": "package-lock.json", "pnpm": "pnpm-lock.yaml", "yarn1": "yarn.lock", "yarn4": "yarn.lock"}
LOCKFILES.update({"npm-ci": LOCKFILES["npm"], "bun": "bun.lock"})
# A lockfile made against the public registry: rerouted through the index, or refused.
PUBLIC_LOCK = {"npm": "rerouted", "npm-ci": "rerouted", "pnpm": "rerouted", "yarn4": "rerouted"}
PUBLIC_LOCK.update({"yarn1": "refused", "bun": "refused"})


@pytest.fixture
def upstream():
    server = NpmUpstream(RELEASES)
    yield server
    server.close()


@pytest.fixture
def public(upstream):
    server = NpmUpstream(RELEASES)
    server.tarballs.update(upstream.tarballs)  # the same bytes (gzip stamps the time it ran)
    yield server
    server.close()


@pytest.fixture
def live_env(upstream) -> dict:
    return {"RUNCODE_POLICY_NPM_UPSTREAM": f"{upstream.url}/"}


@pytest.fixture
def env(live, tmp_path) -> dict:
    home = tmp_path / "home"
    home.mkdir()
    return sandbox_env(live, home)


def project(tmp_path, client: str, dependencies: dict, **fields) -> object:
    path = tmp_path / "project"
    path.mkdir(exist_ok=True)
    manifest = {"name": "project", "version": "1.0.0", "private": True, "dependencies": dependencies, **fields}
    (path / "package.json").write_text(json.dumps(manifest))
    if client == "yarn4":  # node_modules rather than Plug'n'Play, so that the tests can look
        (path / ".yarnrc.yml").write_text("nodeLinker: node-modules\n")
    return path


def gated(tmp_path, client: str, env: dict, path, *command: str):
    """`runcode-policy-gate -- <the client's project install>` (or `command`) in `path`."""
    gate = Gate(
        tmp_path / f"gate-{len(list(tmp_path.glob('gate-*')))}",
        installer_path=str(bin_dir(tmp_path, client.removesuffix("-ci"))),
    )
    return gate("--", *(command or PROJECT_INSTALLS[client]), env=env, cwd=path, timeout=300)


def prepared(tmp_path, client: str, env: dict, path):
    """The project as the client needs it before its install: npm ci needs a lockfile."""
    if client == "npm-ci":
        done = gated(tmp_path, "npm", env, path, "npm", "install")
        assert done.returncode == 0, done.stdout + done.stderr
        shutil.rmtree(path / "node_modules")
    return path


def versions(path) -> dict:
    """{name: version} of what the client put in node_modules (pnpm's links included)."""
    found = {}
    for manifest in (path / "node_modules").glob("**/package.json"):
        try:
            data = json.loads(manifest.read_text())
        except ValueError:
            continue
        if manifest.parent.name == data.get("name", "").rsplit("/", 1)[-1]:
            found[data["name"]] = data.get("version")
    return found


def decisions(live) -> list[dict]:
    reply = live.call("GET", "/api/v1/workspaces/acme/decisions?limit=1000", live.tokens["auditor"])
    assert reply.status == 200, reply.body
    return reply.json["decisions"]


def fetched_tarballs(server) -> set[str]:
    return {path.rsplit("/", 1)[-1] for _, path, _ in server.requests if path.endswith(".tgz")}


@pytest.mark.parametrize("client", CLIENTS)
def test_an_allowed_tree_installs_through_the_index_with_a_decision_for_every_fetched_package(
    live, app, env, tmp_path, upstream, client
):
    set_policy(app, "allowlist", node=["alpha", "beta"])
    upstream.requests.clear()  # npm ci's lockfile run fetches them; the index serves its ci run from its cache
    path = prepared(tmp_path, client, env, project(tmp_path, client, {"alpha": "^1.0.0"}))
    earlier = {d["id"] for d in decisions(live)}
    done = gated(tmp_path, client, env, path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert {"alpha": "1.0.0", "beta": "1.0.0"}.items() <= versions(path).items()
    downloads = {d["file"] for d in decisions(live) if d["request"] == "download" and d["id"] not in earlier}
    assert fetched_tarballs(upstream) == {"alpha-1.0.0.tgz", "beta-1.0.0.tgz"} <= downloads


def test_npm_install_with_names_installs_an_allowed_tree_through_the_index(live, app, env, tmp_path, upstream):
    set_policy(app, "allowlist", node=["alpha", "beta"])
    path = project(tmp_path, "npm", {})
    done = gated(tmp_path, "npm", env, path, "npm", "install", "alpha")
    assert done.returncode == 0, done.stdout + done.stderr
    assert {"alpha": "1.0.0", "beta": "1.0.0"}.items() <= versions(path).items()


@pytest.mark.parametrize("client", CLIENTS)
def test_a_denied_transitive_dependency_fails_the_install_and_nothing_older_is_installed(
    live, app, env, tmp_path, client
):
    set_policy(app, "allowlist", node=["alpha", "beta"])
    path = prepared(tmp_path, client, env, project(tmp_path, client, {"alpha": ">=0.9.0"}))
    set_policy(app, "allowlist", node=["alpha"])  # beta denied; alpha 0.9.0 would do without it
    done = gated(tmp_path, client, env, path)
    assert done.returncode == 3, done.stdout + done.stderr  # the gate's status for a denied project
    assert "denied: beta (node) \u2014 not-on-the-allow-list" in done.stderr, done.stdout + done.stderr
    assert "beta" not in versions(path) and versions(path).get("alpha") != "0.9.0"


def test_npm_install_with_names_fails_on_a_denied_transitive_dependency(live, app, env, tmp_path):
    set_policy(app, "allowlist", node=["alpha"])
    path = project(tmp_path, "npm", {})
    done = gated(tmp_path, "npm", env, path, "npm", "install", "alpha@>=0.9.0")
    assert done.returncode == 3, done.stdout + done.stderr  # the gate's status for a denied project
    assert "denied: beta (node) \u2014 not-on-the-allow-list" in done.stderr
    assert "beta" not in versions(path) and versions(path).get("alpha") != "0.9.0"


def lock_against(tmp_path, client: str, path, registry: str) -> None:
    """Make the client's lockfile with the real client against `registry`, as an agent would
    outside the gate, then remove what it installed."""
    home, tools = tmp_path / "lock-home", tmp_path / "lock-tools"
    home.mkdir(exist_ok=True)
    base = {"PATH": "/usr/bin:/bin", "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    name = client.removesuffix("-ci")
    tool = str(program(name))
    argv = {
        "npm": [tool, "install", f"--registry={registry}", f"--cache={tools}"],
        "pnpm": [tool, "install", f"--registry={registry}", f"--store-dir={tools}"],
        "yarn1": [tool, "install", "--no-default-rc", "--registry", registry, "--cache-folder", str(tools)],
        "yarn4": [tool, "install"],
        "bun": [tool, "install", f"--config={tmp_path / 'lock-bunfig.toml'}"],
    }[name]
    extra = {
        "YARN_NPM_REGISTRY_SERVER": registry,
        "YARN_UNSAFE_HTTP_WHITELIST": "127.0.0.1",
        "YARN_ENABLE_GLOBAL_CACHE": "0",
        "YARN_ENABLE_TELEMETRY": "0",
    }
    (tmp_path / "lock-bunfig.toml").write_text(
        f'[install]\nregistry = "{registry}"\n[install.cache]\ndir = "{tools}"\n'
    )
    done = subprocess.run(argv, env={**base, **extra}, cwd=path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (path / LOCKFILES[client]).exists()
    for made in ("node_modules", ".yarn", ".pnp.cjs"):
        shutil.rmtree(path / made, ignore_errors=True)


@pytest.mark.parametrize("client", CLIENTS)
def test_a_lockfile_made_against_the_public_registry_is_rerouted_or_refused_and_public_sees_nothing(
    live, app, env, tmp_path, public, upstream, client
):
    set_policy(app, "allowlist", node=["alpha", "beta"])
    path = project(tmp_path, client, {"alpha": "^1.0.0"})
    lock_against(tmp_path, client, path, f"{public.url}/")
    assert f"127.0.0.1:{public.port}" in (path / LOCKFILES[client]).read_text() or client in ("pnpm", "yarn4")
    public.requests.clear()
    done = gated(tmp_path, client, env, path)
    assert public.requests == [], public.requests
    if PUBLIC_LOCK[client] == "rerouted":
        assert done.returncode == 0, done.stdout + done.stderr
        assert {"alpha": "1.0.0", "beta": "1.0.0"}.items() <= versions(path).items()
        assert {"alpha-1.0.0.tgz", "beta-1.0.0.tgz"} <= {d.get("file") for d in decisions(live)}
    else:
        assert done.returncode == 4 and not versions(path), done.stdout + done.stderr
        assert f"fetches http://127.0.0.1:{public.port}/alpha/-/alpha-1.0.0.tgz" in done.stderr
        assert "which is not the package index" in done.stderr
        assert f"delete {path / LOCKFILES[client]} and run `runcode-policy-gate --" in done.stderr


def integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


@pytest.mark.parametrize(
    "source", ["file:beta-1.0.0.tgz", "type: git", "type: directory"], ids=["tarball", "git", "directory"]
)
def test_a_pnpm_lockfile_that_installs_a_denied_package_from_beside_the_registry_is_refused(
    live, app, env, tmp_path, upstream, source
):
    """A lockfile pnpm installs as it is (`--frozen-lockfile`): alpha from the registry, and beta,
    denied, from a tarball beside the project, a git repository or a directory: the index would
    never see beta."""
    set_policy(app, "denylist", node=["beta"])
    path = project(tmp_path, "pnpm", {"alpha": "1.0.0"})
    alpha, beta = upstream.tarballs["/alpha/-/alpha-1.0.0.tgz"], upstream.tarballs["/beta/-/beta-1.0.0.tgz"]
    (path / "beta-1.0.0.tgz").write_bytes(beta)
    resolution = {
        "file:beta-1.0.0.tgz": f"{{integrity: {integrity(beta)}, tarball: file:beta-1.0.0.tgz}}",
        "type: git": "{type: git, repo: ./beta-repo, commit: 0123456789abcdef0123456789abcdef01234567}",
        "type: directory": "{type: directory, directory: ./beta-dir}",
    }[source]
    key = "beta@file:beta-1.0.0.tgz"
    (path / "pnpm-lock.yaml").write_text(
        "lockfileVersion: '9.0'\n\nsettings:\n  autoInstallPeers: true\n  excludeLinksFromLockfile: false\n\n"
        "importers:\n\n  .:\n    dependencies:\n      alpha:\n        specifier: 1.0.0\n        version: 1.0.0\n\n"
        f"packages:\n\n  alpha@1.0.0:\n    resolution: {{integrity: {integrity(alpha)}}}\n\n"
        f"  {key}:\n    resolution: {resolution}\n    version: 1.0.0\n\n"
        f"snapshots:\n\n  alpha@1.0.0:\n    dependencies:\n      beta: file:beta-1.0.0.tgz\n\n  {key}: {{}}\n"
    )
    done = gated(tmp_path, "pnpm", env, path, "pnpm", "install", "--frozen-lockfile")
    assert done.returncode == 4 and "beta" not in versions(path), done.stdout + done.stderr
    assert "pnpm-lock.yaml line" in done.stderr and "not from the package index" in done.stderr


@pytest.fixture
def elsewhere(upstream):
    """A web host off the index holding beta's tarball: a URL dependency's."""
    host = FileHost({"/beta-1.0.0.tgz": upstream.tarballs["/beta/-/beta-1.0.0.tgz"]})
    yield host
    host.close()


def workspace(tmp_path, client: str, patterns: list[str], **fields):
    """A workspace root listing `patterns`, as the client reads them."""
    root = project(tmp_path, client, {}, **({} if client == "pnpm" else {"workspaces": patterns}), **fields)
    if client == "pnpm":
        listed = "".join(f"  - '{p}'\n" for p in patterns)
        (root / "pnpm-workspace.yaml").write_text(f"packages:\n{listed}sharedWorkspaceLockfile: false\n")
    return root


def member(root, where: str, dependencies: dict):
    path = root / where
    path.mkdir(parents=True)
    manifest = {"name": path.name, "version": "1.0.0", "dependencies": dependencies}
    (path / "package.json").write_text(json.dumps(manifest))
    return path


@pytest.mark.parametrize("client", ["npm", "pnpm", "yarn1", "yarn4", "bun"])
def test_a_workspace_whose_packages_reach_outside_its_root_is_refused(live, app, env, tmp_path, client, elsewhere):
    """The gate reads every package of a workspace before the client installs it; one listed
    outside the root (`../sib`) was installed with its URL dependency and never read."""
    set_policy(app, "denylist", node=["beta"])
    root = workspace(tmp_path, client, ["../sib"])
    member(tmp_path, "sib", {"beta": f"{elsewhere.url}/beta-1.0.0.tgz"})
    done = gated(tmp_path, client, env, root)
    assert done.returncode == 4 and elsewhere.requests == [], done.stdout + done.stderr
    assert "the workspace package pattern '../sib' is not one the gate follows inside" in done.stderr


@pytest.mark.parametrize("client", ["npm", "pnpm", "yarn1"])
def test_another_workspace_packages_url_dependency_is_judged_from_any_member(
    live, app, env, tmp_path, client, elsewhere
):
    """Run in one member, the client installs the whole workspace: a sibling's URL dependency
    is asked about too, before the client fetches it."""
    set_policy(app, "denylist", node=["beta"])
    root = workspace(tmp_path, client, ["packages/*"])
    here = member(root, "packages/here", {"alpha": "^1.0.0"})
    member(root, "packages/sibling", {"beta": f"{elsewhere.url}/beta-1.0.0.tgz"})
    done = gated(tmp_path, client, env, here)
    assert done.returncode == 3 and elsewhere.requests == [], done.stdout + done.stderr
    assert "installs from a url source" in done.stderr and "not running" in done.stderr


def test_a_pnpm_projects_own_lockfile_from_beside_the_registry_is_refused(live, app, env, tmp_path, elsewhere):
    """With `sharedWorkspaceLockfile: false` each project has its own pnpm-lock.yaml, which pnpm
    installs as it is; one below the working directory is checked like the root's."""
    set_policy(app, "denylist", node=["beta"])
    root = workspace(tmp_path, "pnpm", ["packages/*"])
    sub = member(root, "packages/sub", {"alpha": "^1.0.0"})
    (sub / "pnpm-lock.yaml").write_text(
        "lockfileVersion: '9.0'\n\npackages:\n\n  beta@1.0.0:\n"
        f"    resolution: {{tarball: {elsewhere.url}/beta-1.0.0.tgz}}\n"
    )
    done = gated(tmp_path, "pnpm", env, root, "pnpm", "install", "--frozen-lockfile")
    assert done.returncode == 4 and elsewhere.requests == [], done.stdout + done.stderr
    assert f"{sub / 'pnpm-lock.yaml'} line 6 fetches {elsewhere.url}/" in done.stderr
    (sub / "pnpm-lock.yaml").unlink()
    (root / "pnpm-workspace.yaml").write_text("packages: ['packages/*']\nlockfileDir: ../elsewhere\n")
    done = gated(tmp_path, "pnpm", env, root)
    assert done.returncode == 4 and "pnpm's lockfileDir is set ('../elsewhere')" in done.stderr, done.stderr


TRICKS = {
    "escaped scope": '"\\u0040evil:registry"={url}/\n',
    "byte-order mark": "\ufeff@evil:registry={url}/\n",
    "upper-case scope": "@EVIL:registry={url}/\n@evil:registry={url}/\n",
}


@pytest.mark.parametrize("trick", TRICKS)
@pytest.mark.parametrize("client", CLIENTS)
def test_an_npmrc_scope_trick_installs_nothing_unjudged(live, app, env, tmp_path, public, client, trick):
    set_policy(app, "denylist", node=["gamma"])
    path = prepared(tmp_path, client, env, project(tmp_path, client, {"@evil/x": "1.0.0"}))
    (path / ".npmrc").write_text(TRICKS[trick].format(url=public.url), encoding="utf-8")
    public.requests.clear()
    done = gated(tmp_path, client, env, path)
    assert public.requests == [], public.requests
    judged = {d["name"] for d in decisions(live) if d["context"].get("source") == "index"}
    if done.returncode == 0:
        assert versions(path).get("@evil/x") == "1.0.0" and "@evil/x" in judged
    else:  # refused before anything ran
        assert done.returncode == 4 and not versions(path), done.stdout + done.stderr


def test_a_pnpm_workspace_registries_entry_cannot_send_a_scope_elsewhere(live, app, env, tmp_path, public):
    set_policy(app, "denylist", node=["gamma"])
    path = project(tmp_path, "pnpm", {"@evil/x": "1.0.0"})
    (path / "pnpm-workspace.yaml").write_text(f'registries:\n  {public.url}/:\n    scopes: ["@evil"]\n')
    done = gated(tmp_path, "pnpm", env, path)
    assert public.requests == []
    assert done.returncode == 0, done.stdout + done.stderr
    assert "@evil/x" in {d["name"] for d in decisions(live)}


def test_a_yarn4_scope_registry_is_refused(live, app, env, tmp_path, public):
    set_policy(app, "denylist", node=["gamma"])
    path = project(tmp_path, "yarn4", {"@evil/x": "1.0.0"})
    rc = f'nodeLinker: node-modules\nnpmScopes:\n  evil:\n    npmRegistryServer: "{public.url}/"\n'
    (path / ".yarnrc.yml").write_text(rc)
    done = gated(tmp_path, "yarn4", env, path)
    assert public.requests == [] and done.returncode == 4, done.stdout + done.stderr
    assert f"npmScopes.evil.npmRegistryServer = {public.url}/" in done.stderr


def test_a_pnpm_run_asks_nothing_about_pnpm_itself(live, app, env, tmp_path):
    set_policy(app, "allowlist", node=["alpha", "beta"])
    path = project(tmp_path, "pnpm", {"alpha": "^1.0.0"})
    done = gated(tmp_path, "pnpm", env, path)
    assert done.returncode == 0, done.stdout + done.stderr
    names = {d["name"] for d in decisions(live)}
    assert "alpha" in names and "pnpm" not in names


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize(
    "field",
    [
        {"dependencies": {"gamma": "http://127.0.0.1:9/gamma-1.0.0.tgz"}},
        {"dependencies": {"alpha": "^1.0.0"}, "overrides": {"beta": "github:evil/beta"}},
        {"dependencies": {"alpha": "^1.0.0"}, "resolutions": {"**/beta": "file:../beta"}},
        {"dependencies": {"alpha": "^1.0.0"}, "pnpm": {"overrides": {"alpha>beta": "git+https://127.0.0.1:9/b.git"}}},
        {"dependencies": {"gamma": ".."}},  # a path without `file:`, which npm and yarn 1 install as one
    ],
    ids=["url dependency", "npm override", "yarn resolution", "pnpm override", "implicit path"],
)
def test_a_non_registry_spec_in_package_json_is_refused_before_the_client_runs(live, app, env, tmp_path, client, field):
    set_policy(app, "allowlist", node=["alpha", "beta", "gamma"])
    path = project(tmp_path, client, {})
    manifest = {**json.loads((path / "package.json").read_text()), **field}
    (path / "package.json").write_text(json.dumps(manifest))
    done = gated(tmp_path, client, env, path)
    assert done.returncode == 3 and not versions(path), done.stdout + done.stderr
    assert "direct-reference" in done.stderr or "not allowed" in done.stderr or "denied:" in done.stderr


def test_a_yarn4_resolution_with_a_percent_encoded_archive_url_elsewhere_is_refused(live, app, env, tmp_path, public):
    """yarn 4 fetches a lockfile resolution's `::__archiveUrl=` (percent-encoded) as it is,
    whatever registry is configured: beta, denied, would come from the public registry."""
    set_policy(app, "allowlist", node=["alpha"])
    path = project(tmp_path, "yarn4", {"alpha": "^1.0.0"})
    lock_against(tmp_path, "yarn4", path, f"{public.url}/")
    lock, archive = path / "yarn.lock", f"{public.url}/beta/-/beta-1.0.0.tgz"
    plain = 'resolution: "beta@npm:1.0.0"'
    assert plain in lock.read_text()
    encoded = urllib.parse.quote(archive, safe="")
    lock.write_text(lock.read_text().replace(plain, f'{plain[:-1]}::__archiveUrl={encoded}"'))
    public.requests.clear()
    done = gated(tmp_path, "yarn4", env, path)
    assert public.requests == [] and "beta" not in versions(path), public.requests
    assert done.returncode == 4, done.stdout + done.stderr
    number = next(n for n, line in enumerate(lock.read_text().split("\n"), 1) if "__archiveUrl" in line)
    assert f"yarn.lock line {number} fetches {archive} (percent-encoded there)" in done.stderr, done.stderr


# A URL on another host as a lockfile may spell it, `{place}` being its host and path: pnpm and
# yarn 4 read each one as a WHATWG URL parser does, as http://{place}.
URL_ON_ONE_LINE = {
    "no slashes": "http:{place}",
    "one slash": "http:/{place}",
    "upper-case scheme": "HTTP:{place}",
    "a tab in the scheme": "ht\ttp:{place}",
}
# ...and as a YAML value over lines (`{at}` is where a key puts the name, `{indent}` is where its
# lines go on): a line break read where a blank line is, or kept by a block scalar, which the
# parser then drops.
URL_OVER_LINES = {
    "over a blank line": '"{at}http:\n\n{indent}//{place}"',
    "block scalar": "|-\n{indent}{at}http:\n{indent}//{place}",
}
GAMMA_TARBALL = "/gamma/-/gamma-1.0.0.tgz"


def pnpm_lock(spelt: str, place: str, tarball: bytes) -> str:
    """A pnpm-lock.yaml installing gamma from the URL `spelt` (a template as in URL_OVER_LINES)
    at `place`; its keys are explicit (`? key`), so that they may go on over lines too."""

    def url(at: str, indent: int) -> str:
        return spelt.format(at=at, indent=" " * indent, place=place)

    key = url("gamma@", 4)
    return (
        "lockfileVersion: '9.0'\n\nsettings:\n  autoInstallPeers: true\n  excludeLinksFromLockfile: false\n\n"
        "importers:\n\n  .:\n    dependencies:\n      gamma:\n        specifier: ^1.0.0\n"
        f"        version: {url('', 10)}\n\n"
        f"packages:\n\n  ? {key}\n  : resolution:\n      integrity: {integrity(tarball)}\n"
        f"      tarball: {url('', 8)}\n    version: 1.0.0\n\n"
        f"snapshots:\n\n  ? {key}\n  : {{}}\n"
    )


def yarn4_lock_from(tmp_path, path, public, name: str, url: str) -> str:
    """The yarn.lock yarn 4 makes for `name` against the public registry, its resolution then
    pointed at `url` and its checksum removed (yarn fetches an entry without one as it is)."""
    lock_against(tmp_path, "yarn4", path, f"{public.url}/")
    text, plain = (path / "yarn.lock").read_text(), f'resolution: "{name}@npm:1.0.0"'
    assert plain in text
    return re.sub(r"\n  checksum: [^\n]*", "", text.replace(plain, f'resolution: "{name}@{url}"'))


@pytest.mark.parametrize(
    ("client", "spelling"),
    [(client, spelling) for client in ("pnpm", "yarn4") for spelling in URL_ON_ONE_LINE]
    + [("pnpm", spelling) for spelling in URL_OVER_LINES],
)
def test_a_lockfile_url_on_another_host_is_refused_however_it_is_spelt(
    live, app, env, tmp_path, public, upstream, client, spelling
):
    """gamma, denied, from the public registry, the lockfile's URL to it spelt so that a URL
    parser reads it as `http://HOST/...` (`http:HOST/...`, a tab, a value over lines...)."""
    set_policy(app, "denylist", node=["gamma"])
    place = f"127.0.0.1:{public.port}{GAMMA_TARBALL}"
    path = project(tmp_path, client, {"gamma": "^1.0.0"})
    command = PROJECT_INSTALLS[client]
    if client == "pnpm":
        spelt = URL_OVER_LINES.get(spelling) or f"'{{at}}{URL_ON_ONE_LINE[spelling]}'"
        (path / "pnpm-lock.yaml").write_text(pnpm_lock(spelt, place, upstream.tarballs[GAMMA_TARBALL]))
        command = (*command, "--frozen-lockfile")
    else:
        url = URL_ON_ONE_LINE[spelling].format(place=place)
        (path / "yarn.lock").write_text(yarn4_lock_from(tmp_path, path, public, "gamma", url))
    public.requests.clear()
    done = gated(tmp_path, client, env, path, *command)
    assert public.requests == [] and "gamma" not in versions(path), public.requests
    assert done.returncode == 4, done.stdout + done.stderr
    why = "starts a YAML block scalar" if spelling == "block scalar" else f"fetches http://{place}"
    assert why in done.stderr and "package index" in done.stderr, done.stderr


def test_a_yarn4_lockfile_cannot_install_another_packages_tarball_under_an_allowed_name(
    live, app, env, tmp_path, public
):
    """beta, allowed, resolved by yarn.lock to gamma's tarball (denied) on the public registry,
    with the checksum yarn wrote for it: `--immutable` would install gamma's files as beta."""
    set_policy(app, "denylist", node=["gamma"])
    path = project(tmp_path, "yarn4", {"beta": "^1.0.0"})
    url = f"http:127.0.0.1:{public.port}{GAMMA_TARBALL}"
    (path / "yarn.lock").write_text(yarn4_lock_from(tmp_path, path, public, "beta", url))
    lock_against(tmp_path, "yarn4", path, f"{public.url}/")  # yarn writes the entry's checksum
    assert "checksum: " in (path / "yarn.lock").read_text().split(url)[1].split("\n\n")[0]
    public.requests.clear()
    done = gated(tmp_path, "yarn4", env, path, "yarn", "install", "--immutable")
    assert public.requests == [] and not (path / "node_modules" / "beta").exists(), public.requests
    assert done.returncode == 4, done.stdout + done.stderr
    assert f"fetches http://127.0.0.1:{public.port}{GAMMA_TARBALL} (written {url!r})" in done.stderr


def test_a_yarn1_offline_mirror_cannot_install_a_denied_package_unasked(live, app, env, tmp_path, upstream):
    """yarn 1 takes a tarball from its offline mirror (`yarn-offline-mirror` in .yarnrc) instead
    of fetching the lockfile's URL: beta, denied since the lockfile was made, was planted there."""
    set_policy(app, "allowlist", node=["alpha", "beta"])
    path = project(tmp_path, "yarn1", {"alpha": "^1.0.0"})
    done = gated(tmp_path, "yarn1", env, path)
    assert done.returncode == 0, done.stdout + done.stderr
    shutil.rmtree(path / "node_modules")
    set_policy(app, "allowlist", node=["alpha"])
    (path / "mirror").mkdir()
    (path / "mirror" / "beta-1.0.0.tgz").write_bytes(upstream.tarballs["/beta/-/beta-1.0.0.tgz"])
    (path / ".yarnrc").write_text('yarn-offline-mirror "./mirror"\n')
    done = gated(tmp_path, "yarn1", env, path)
    assert done.returncode == 3 and "beta" not in versions(path), done.stdout + done.stderr
    assert "denied: beta (node)" in done.stderr


def test_a_bun_workspace_roots_npmrc_above_the_working_directory_is_refused(live, app, env, tmp_path, public):
    """bun, run in a workspace's package, reads the workspace root's .npmrc: its scope registry
    would have sent @evil/x to the public registry, unjudged."""
    set_policy(app, "denylist", node=["gamma"])
    root = project(tmp_path, "bun", {}, workspaces=["pkgs/*"])
    member = root / "pkgs" / "a"
    member.mkdir(parents=True)
    (member / "package.json").write_text(
        json.dumps({"name": "a", "version": "1.0.0", "dependencies": {"@evil/x": "1.0.0"}})
    )
    (root / ".npmrc").write_text(f"@evil:registry={public.url}/\n")
    done = gated(tmp_path, "bun", env, member)
    assert public.requests == [], public.requests
    assert done.returncode == 4 and not (root / "node_modules").exists(), done.stdout + done.stderr
    assert f"{root / '.npmrc'} mentions 'registry'" in done.stderr


PNPMFILE_HOOK = """module.exports = {{ hooks: {{ readPackage(pkg) {{
  if (pkg.name === "project") pkg.dependencies = {{ ...pkg.dependencies, gamma: "{url}/gamma/-/gamma-1.0.0.tgz" }};
  return pkg;
}} }} }};
"""


@pytest.mark.parametrize("where", [".pnpmfile.cjs", "pnpmfile setting"])
def test_a_pnpmfile_hook_cannot_add_a_dependency_from_elsewhere(live, app, env, tmp_path, public, where):
    """A pnpmfile's readPackage hook adds gamma, denied, as a URL on the public registry: pnpm
    runs with --ignore-pnpmfile, so the hook never runs and the allowed tree installs."""
    set_policy(app, "allowlist", node=["alpha", "beta"])
    path = project(tmp_path, "pnpm", {"alpha": "^1.0.0"})
    hooks = path / ".pnpmfile.cjs" if where == ".pnpmfile.cjs" else path / "hooks" / "extra.cjs"
    hooks.parent.mkdir(exist_ok=True)
    hooks.write_text(PNPMFILE_HOOK.format(url=public.url))
    if where == "pnpmfile setting":
        (path / "pnpm-workspace.yaml").write_text("pnpmfile: hooks/extra.cjs\n")
    done = gated(tmp_path, "pnpm", env, path)
    assert public.requests == [] and "gamma" not in versions(path), public.requests
    assert done.returncode == 0, done.stdout + done.stderr
    assert {"alpha": "1.0.0", "beta": "1.0.0"}.items() <= versions(path).items()


@pytest.mark.parametrize(
    "setting",
    [
        'overrides:\n  beta: "{url}/beta/-/beta-1.0.0.tgz"\n',
        'packageExtensions:\n  "alpha@*":\n    dependencies:\n      gamma: "{url}/gamma/-/gamma-1.0.0.tgz"\n',
        'catalog:\n  alpha: "{url}/alpha/-/alpha-1.0.0.tgz"\n',
    ],
    ids=["overrides", "packageExtensions", "catalog"],
)
def test_a_pnpm_workspace_setting_that_adds_a_url_dependency_is_refused(live, app, env, tmp_path, public, setting):
    set_policy(app, "allowlist", node=["alpha"])
    path = project(tmp_path, "pnpm", {"alpha": "catalog:" if "catalog" in setting else "^1.0.0"})
    (path / "pnpm-workspace.yaml").write_text(setting.format(url=public.url))
    done = gated(tmp_path, "pnpm", env, path)
    assert public.requests == [] and not versions(path), public.requests
    assert done.returncode == 4, done.stdout + done.stderr
    line = 4 if "packageExtensions" in setting else 2
    assert f"{path / 'pnpm-workspace.yaml'} line {line}: " in done.stderr and "not a registry version" in done.stderr


def test_pnpm_catalog_specs_resolve_through_the_workspace_file(live, app, env, tmp_path):
    set_policy(app, "allowlist", node=["alpha", "beta"])
    path = project(tmp_path, "pnpm", {"alpha": "catalog:"}, devDependencies={"beta": "catalog:old"})
    (path / "pnpm-workspace.yaml").write_text("catalog:\n  alpha: ^1.0.0\ncatalogs:\n  old:\n    beta: 1.0.0\n")
    done = gated(tmp_path, "pnpm", env, path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert {"alpha": "1.0.0", "beta": "1.0.0"}.items() <= versions(path).items()
    (path / "pnpm-workspace.yaml").write_text("catalog:\n  alpha: ^1.0.0\n")
    done = gated(tmp_path, "pnpm", env, path)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "devDependencies.beta is 'catalog:old', but catalog 'old' has no entry for beta" in done.stderr


def test_a_yarn4_package_extension_with_a_url_dependency_is_refused(live, app, env, tmp_path, public):
    """.yarnrc.yml `packageExtensions` adds gamma, denied, to alpha as a URL on the public registry."""
    set_policy(app, "allowlist", node=["alpha", "beta"])
    path = project(tmp_path, "yarn4", {"alpha": "^1.0.0"})
    gamma = f"{public.url}/gamma/-/gamma-1.0.0.tgz"
    extension = f'packageExtensions:\n  "alpha@*":\n    dependencies:\n      gamma: "{gamma}"\n'
    (path / ".yarnrc.yml").write_text((path / ".yarnrc.yml").read_text() + extension)
    done = gated(tmp_path, "yarn4", env, path)
    assert public.requests == [] and not versions(path), public.requests
    assert done.returncode == 4, done.stdout + done.stderr
    expected = f"{path / '.yarnrc.yml'} line 5: packageExtensions.alpha@*.dependencies.gamma is '{public.url}/gamma"
    assert expected in done.stderr, done.stderr


@pytest.fixture
def project_proxy():
    """A proxy a project's settings name, standing in for one that answers for the index itself (a
    mirror): it passes on what it is sent, and logs it."""
    server = ForwardProxy()
    yield server
    server.close()


# Proxy settings in a project's files as each client reads them, `{proxy}` the project's proxy:
# (client, file, what it adds). Each sent the client's requests for the index through the proxy.
PROJECT_PROXIES = {
    "npm .npmrc": ("npm", ".npmrc", "noproxy=x.invalid\nproxy={proxy}/\nhttps-proxy={proxy}/\n"),
    "pnpm .npmrc": (
        "pnpm",
        ".npmrc",
        "noproxy=x.invalid\nno-proxy=x.invalid\nproxy={proxy}/\nhttp-proxy={proxy}/\nhttps-proxy={proxy}/\n",
    ),
    "pnpm-workspace.yaml": (
        "pnpm",
        "pnpm-workspace.yaml",
        'httpProxy: "{proxy}/"\nhttpsProxy: "{proxy}/"\nnoProxy: x.invalid\nnoproxy: x.invalid\n',
    ),
    "yarn1 .yarnrc": ("yarn1", ".yarnrc", 'proxy "{proxy}/"\n'),
    "yarn1 .yarnrc flag": ("yarn1", ".yarnrc", '--install.proxy "{proxy}/"\n'),
    "yarn1 .npmrc": ("yarn1", ".npmrc", "proxy={proxy}/\n"),
    "yarn4 .yarnrc.yml": ("yarn4", ".yarnrc.yml", 'httpProxy: "{proxy}"\nhttpsProxy: "{proxy}"\n'),
    "yarn4 networkSettings": ("yarn4", ".yarnrc.yml", 'networkSettings:\n  "127.0.0.1":\n    httpProxy: "{proxy}"\n'),
    "bun .npmrc": ("bun", ".npmrc", "noproxy=x.invalid\nproxy={proxy}/\nhttps-proxy={proxy}/\n"),
}
# What the gate says of those it refuses (the client cannot be told otherwise): (file line, setting).
REFUSED_PROXIES = {
    "yarn1 .yarnrc": (".yarnrc line 1: ", "yarn's proxy is"),
    "yarn1 .yarnrc flag": (".yarnrc line 1: ", "yarn's --install.proxy is"),
    "yarn1 .npmrc": (".npmrc line 1: ", "yarn's proxy is"),
    "yarn4 networkSettings": (".yarnrc.yml line 4: ", "networkSettings.127.0.0.1.httpProxy is"),
}


@pytest.mark.parametrize("sandbox", ["with its own proxy", "without a proxy"])
@pytest.mark.parametrize("setting", PROJECT_PROXIES)
def test_a_project_proxy_never_carries_a_request_for_the_index(
    live, app, env, tmp_path, project_proxy, setting, sandbox
):
    """The project's proxy (a mirror, say) answered the client's requests for the index itself:
    beta, denied, installed unjudged, and the run token went to it. The setting is overridden (the
    client reaches the index directly, which refuses beta) or refused, naming where it is written."""
    set_policy(app, "denylist", node=["beta"])
    client, name, added = PROJECT_PROXIES[setting]
    path = project(tmp_path, client, {"alpha": "1.0.0"})
    written = path / name
    written.write_text((written.read_text() if written.exists() else "") + added.format(proxy=project_proxy.url))
    if sandbox == "without a proxy":
        env = {variable: value for variable, value in env.items() if not variable.endswith("_PROXY")}
    done = gated(tmp_path, client, env, path)
    assert project_proxy.seen == [] and "beta" not in versions(path), project_proxy.seen
    if setting in REFUSED_PROXIES:
        assert done.returncode == 4, done.stdout + done.stderr
        line, said = REFUSED_PROXIES[setting]
        assert f"{path}/{line}{said} '{project_proxy.url}" in done.stderr, done.stderr
    else:
        assert done.returncode == 3 and "denied: beta (node)" in done.stderr, done.stdout + done.stderr
