"""Dependencies a version declares that are not registry packages, with real npm, pnpm, pip and uv.

The fixture registries offer `alpha` twice: 1.0 declares nothing, the newer ones declare `beta`
at a URL (or a git repository) on a plain web server of the test's own, which the index never
sees. `beta` is deny-listed, `alpha` is not. Whatever the client does, beta's bytes must never be
fetched from that server: the index hides the versions that declare it, refuses their files, and
records which dependency hid them.
"""

from __future__ import annotations

import json

import pytest

from domain.limits import MAX_RUN_DECISIONS, MAX_VERSION_DECISIONS
from domain.python_files import SDIST_ARCHIVES
from interface.gate import REFUSALS_SHOWN
from interface.gate.service import RUN_DECISIONS_READ
from tests.support import clients
from tests.support.fixture_server import FileHost
from tests.support.gate import Gate, sandbox_env
from tests.support.http_client import LiveServer
from tests.support.index_fixtures import run_decisions, set_policy, start_run
from tests.support.index_live import index_live_env, sqlite_store  # noqa: F401 - fixtures live_env, database_url
from tests.support.npm_upstream import NpmUpstream, Release, build_tarball
from tests.support.pypi_upstream import Dist, PyPIUpstream, build_sdist, build_wheel, pack
from tests.support.target_env import TargetEnv

BETA_TGZ = "/beta-1.0.0.tgz"
PTH_IMPORT = (  # as setuptools and pywin32 ship theirs
    ("vendor-precedence.pth", b"import os; os.environ.get('X')\n"),
    ("vendor-win.pth", b"# folders\nvendor_win32\nvendor_win32\\lib\n"),
    ("vendor_win32/lib/x.py", b""),
)
# Other ways a wheel makes a refused project installed: (files it holds, what the refusal names).
WHEEL_TRICKS = {
    "a .pth onto its vendored folder": (
        ("trick-vendor.pth", b"# comment\ntrick0/_vendor\n"),
        ("trick0/_vendor/beta-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: beta\nVersion: 1.0\n"),
    ),
    "a .pth line past its first 64 KiB": (
        ("trick-late.pth", b"#\n" * 40_000 + b"trick1/_vendor\n"),
        ("trick1/_vendor/beta-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: beta\nVersion: 1.0\n"),
    ),
    "a folder named otherwise than its Name": (
        ("trick2-1.0.data/purelib/gamma-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: beta\nVersion: 1\n"),
    ),
    "a .pth onto a zip": (("trick-zip.pth", b"trick3/_b.zip\n"), ("trick3/_b.zip", b"PK\x05\x06" + bytes(18))),
    "a .pth onto a folder it does not hold": (("trick-elsewhere.pth", b"hidden\n"),),
    "a .pth outside the site": (("trick-up.pth", b"../../../share/hide\n"),),
    # a reviewer's: site keeps a line's leading blanks, so `  trick6` is a folder of its own
    "a .pth line with leading blanks": (
        ("trick-blank.pth", b"  trick6\n"),
        ("trick6/README.txt", b""),
        ("  trick6/beta-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: beta\nVersion: 1.0\n"),
    ),
    # the other .data folders are on sys.path too (a Python's own lib/, a venv's bin/)
    "a dist-info in a stdlib folder": (
        ("trick7-1.0.data/data/lib/python3.11/beta-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: beta\n"),
    ),
    "a dist-info among the scripts": (
        ("trick8-1.0.data/scripts/beta-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: beta\n"),
    ),
}
PTH_UNREAD = {"a .pth onto a zip", "a .pth onto a folder it does not hold", "a .pth outside the site"}
# Where a wheel can carry another project so that pip and uv install it as one.
CARRIED_AT = {"root": "beta", "purelib": ".data/purelib/beta", "platlib": ".data/platlib/beta"}
BETA_WHEEL = "/beta-1.0-py3-none-any.whl"
GIT_BETA = "beta @ git+https://x.example/beta.git"
JSON_PAGE = {"Accept": "application/vnd.pypi.simple.v1+json"}
# Versions whose sdist the index is to refuse: gitdep 1.0's wheel and sdist both declare beta from
# git (a reviewer's); wheeldep 1.0's sdist says its Requires-Dist is dynamic, so only its wheel
# says it (0.9 declares nothing); carrysdist 1.0's wheel carries beta, its sdist says nothing.
SDIST_CASES = (
    Dist("gitdep", "1.0", requires=(GIT_BETA,)),
    Dist("wheeldep", "0.9"),
    Dist("wheeldep", "1.0", requires=(GIT_BETA,), sdist_dynamic=True),
    Dist("carrysdist", "1.0", carried=("beta",)),
)
# A build backend inside the sdist (backend-path), so that building it fetches only what its
# build-system.requires names.
BACKEND = """import os, zipfile
INFO = "PROJECT-1.0.dist-info/"
FILES = {"PROJECT.py": "", INFO + "RECORD": "",
         INFO + "METADATA": "Metadata-Version: 2.1\\nName: PROJECT\\nVersion: 1.0\\n",
         INFO + "WHEEL": "Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = "PROJECT-1.0-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as wheel:
        for path, text in FILES.items():
            wheel.writestr(path, text)
    return name
"""


def build_system(requires: str, project: str = "buildurl") -> tuple[tuple[str, bytes], ...]:
    """An sdist's pyproject.toml requiring `requires` (TOML) to build, with its backend (building
    `project`) inside it."""
    pyproject = f'[build-system]\nrequires = {requires}\nbuild-backend = "backend"\nbackend-path = ["."]\n'
    return (("pyproject.toml", pyproject.encode()), ("backend.py", BACKEND.replace("PROJECT", project).encode()))


# An sdist whose build requires beta from a URL (a reviewer's), one whose build requires beta by
# name (fetched through the index, judged then), one whose pyproject.toml is not TOML.
def build_cases(url: str) -> list[Dist]:
    return [
        Dist("buildurl", "1.0", files=("sdist",), sdist_more=build_system(f'["beta @ {url}"]')),
        Dist("buildreg", "1.0", files=("sdist",), sdist_more=build_system('["beta"]')),
        Dist("buildbad", "1.0", files=("sdist",), sdist_more=(("pyproject.toml", b"[build-system\nrequires = ["),)),
    ]


NOT_IN_ONE_FOLDER = "its members do not all sit in one top folder"  # why such an sdist is not read


# Sdists whose build requires beta from a URL in a pyproject.toml outside one top folder, which
# pip and uv build from (a reviewer's): all at the archive's root (a tarball, a zip), or a
# harmless one in `mixed-1.0/` and the URL's at the root.
def layout_cases(url: str) -> list[Dist]:
    requires = f'["beta @ {url}"]'
    flat = {"files": ("sdist",), "sdist_root": ""}
    inside = (("mixed-1.0/pyproject.toml", b'[build-system]\nrequires = ["setuptools"]\n'),)
    return [
        Dist("flat", "1.0", **flat, sdist_more=build_system(requires, "flat")),
        Dist("flatzip", "1.0", **flat, sdist_name="flatzip-1.0.zip", sdist_more=build_system(requires, "flatzip")),
        Dist("mixed", "1.0", **flat, sdist_more=(*build_system(requires, "mixed"), *inside)),
    ]


# The same build requirement in an sdist of each legacy format pip and uv build from (a
# reviewer's: a `.tgz` was served unread).
LEGACY_FORMATS = {
    ".tgz": "tgzpkg",
    ".tar.bz2": "bz2pkg",
    ".tbz": "tbzpkg",
    ".tar.xz": "xzpkg",
    ".txz": "txzpkg",
    ".tar": "tarpkg",
}


def format_cases(url: str) -> list[Dist]:
    requires = f'["beta @ {url}"]'
    return [
        Dist(
            project,
            "1.0",
            files=("sdist",),
            sdist_name=f"{project}-1.0{suffix}",
            sdist_more=build_system(requires, project),
        )
        for suffix, project in LEGACY_FORMATS.items()
    ]


# okpkg's page also lists beta's wheel and sdist (a reviewer's): files named for another project.
LISTED_ELSEWHERE = (
    Dist("okpkg", "1.0"),
    Dist("beta", "1.1", files=("wheel",), listed_under="okpkg"),
    Dist("beta", "1.2", files=("sdist",), listed_under="okpkg"),
)


@pytest.fixture
def url_host():
    host = FileHost(
        {BETA_TGZ: build_tarball(Release("beta", "1.0.0")), BETA_WHEEL: build_wheel(Dist("beta", "1.0"))[1]}
    )
    yield host
    host.close()


@pytest.fixture
def npm_upstream(url_host):
    upstream = NpmUpstream(
        [
            Release("alpha", "1.0.0"),
            Release("alpha", "1.1.0", dependencies={"beta": url_host.url + BETA_TGZ}),
            Release("alpha", "1.2.0", dependencies={"beta": f"git+{url_host.url}/beta.git"}),
            Release("beta", "1.0.0"),
            Release("bundler", "1.0.0"),
            Release("bundler", "1.1.0", dependencies={"beta": "^1.0.0"}, bundled=("beta",)),
            Release("carrier", "1.0.0", carried=("beta",)),
            Release("carrier", "1.1.0", carried=("@scope/ok", "beta")),
            Release("carrier", "1.2.0", carried=("@scope/ok",)),
        ]
    )
    yield upstream
    upstream.close()


@pytest.fixture
def pypi_upstream(url_host):
    url = url_host.url + BETA_WHEEL
    dists = [Dist("alpha", "1.0"), Dist("alpha", "1.1", requires=(f"beta @ {url}",))]
    carriers = [Dist(f"carrier{i}", "1.0", files=("wheel",), carried=(p,)) for i, p in enumerate(CARRIED_AT.values())]
    vendored = Dist("vendor", "1.0", carried=("vendor/_vendor/beta",), more=PTH_IMPORT)
    tricks = [Dist(f"trick{i}", "1.0", files=("wheel",), more=more) for i, more in enumerate(WHEEL_TRICKS.values())]
    built = [*build_cases(url), *layout_cases(url), *format_cases(url)]
    upstream = PyPIUpstream(
        [*dists, Dist("beta", "1.0"), *carriers, vendored, *tricks, *SDIST_CASES, *built, *LISTED_ELSEWHERE]
    )
    yield upstream
    upstream.close()


def hiding(decisions: list[dict]) -> dict[str, dict]:
    """The run's decisions on declared dependencies, by the version that declares them."""
    return {d["declared_by"]: d for d in decisions if d.get("declared_by")}


def refused_as_carried(found: dict, field: str) -> None:
    """The record of beta, denied, carried inside a download: refused there, named where it was."""
    assert (found["spec"], found["reason"], found["allowed"], found["request"]) == (
        "beta",
        "matches-the-deny-list",
        False,
        "download",
    )
    assert f"declares beta in {field}" in found["detail"]


def installed_node(tmp_path) -> dict[str, str]:
    import json

    modules = tmp_path / "project" / "node_modules"
    found = {}
    for package in [*modules.glob("*/package.json"), *modules.glob(".pnpm/*/node_modules/*/package.json")]:
        manifest = json.loads(package.read_text())
        found[manifest["name"]] = manifest["version"]
    return found


NODE_CLIENTS = {"npm": (clients.npm, "install"), "pnpm": (clients.pnpm, "add")}


@pytest.mark.parametrize("client", NODE_CLIENTS)
def test_an_npm_url_dependency_hides_its_version_and_an_older_one_installs(live, app, tmp_path, url_host, client):
    set_policy(app, "denylist", node=["beta"])
    run = start_run(live)
    command, verb = NODE_CLIENTS[client]
    outcome = command(tmp_path, run["npm"], run["token"], verb, "alpha")
    assert outcome.ok, outcome.output
    assert installed_node(tmp_path) == {"alpha": "1.0.0"}
    assert url_host.requests == []  # beta was never fetched from the URL it was declared at
    declared = hiding(run_decisions(live, run))
    assert set(declared) == {"alpha@1.1.0", "alpha@1.2.0"}
    url = declared["alpha@1.1.0"]
    assert (url["spec"], url["kind"], url["reason"], url["allowed"]) == (
        f"beta@{url_host.url}{BETA_TGZ}",
        "url",
        "direct-reference",
        False,
    )
    assert url["package_version"] == "1.1.0" and url["request"] == "page" and url["run"] == run["id"]
    assert url["message"].startswith("alpha@1.1.0 is not offered because of a dependency it declares in dependencies:")
    assert declared["alpha@1.2.0"]["kind"] == "vcs"


def test_a_version_bundling_a_denied_package_is_hidden_and_an_older_one_installs(live, app, tmp_path, url_host):
    """A bundled dependency comes inside the tarball, never fetched through the index: the
    version that bundles a denied name is not offered; the refusal hides that version and
    denies no project, so the run goes on."""
    set_policy(app, "denylist", node=["beta"])
    run = start_run(live)
    outcome = clients.npm(tmp_path, run["npm"], run["token"], "install", "bundler")
    assert outcome.ok, outcome.output
    assert installed_node(tmp_path) == {"bundler": "1.0.0"}
    bundled = hiding(run_decisions(live, run))["bundler@1.1.0"]
    assert (bundled["spec"], bundled["reason"], bundled["allowed"]) == ("beta", "matches-the-deny-list", False)
    assert "declares beta in bundleDependencies" in bundled["detail"]


@pytest.mark.parametrize("client", NODE_CLIENTS)
def test_a_tarball_carrying_a_denied_package_it_does_not_declare_is_refused(live, app, tmp_path, url_host, client):
    """What a tarball carries under node_modules is installed from it by every client, whatever
    the packument or its own manifest declares: the index reads each tarball before serving it,
    refuses one that carries a denied name, and records that name against the version."""
    set_policy(app, "denylist", node=["beta"])
    run = start_run(live)
    command, verb = NODE_CLIENTS[client]
    outcome = command(tmp_path, run["npm"], run["token"], verb, "carrier@1.1.0")
    assert not outcome.ok and "403" in outcome.output  # npm prints the reason, pnpm only the status
    assert "carrier" not in installed_node(tmp_path)
    refused_as_carried(hiding(run_decisions(live, run))["carrier@1.1.0"], "its tarball's node_modules")
    allowed = start_run(live)  # what it carries is allowed: served, and nothing more is recorded
    assert live.call("GET", "/npm/acme/carrier/-/carrier-1.2.0.tgz", allowed["token"]).status == 200
    assert hiding(run_decisions(live, allowed)) == {}


def test_a_tarball_the_index_cannot_read_is_refused(live, app, npm_upstream, url_host):
    """A tarball with no digest to verify it, or that is not a gzipped tar, cannot be read for
    what it carries: it is not served."""
    npm_upstream.add(Release("opaque", "1.0.0", digests=False))
    npm_upstream.add(Release("opaque", "1.1.0"))
    npm_upstream.tarballs["/opaque/-/opaque-1.1.0.tgz"] = b"not a tarball"
    run = start_run(live)
    for number in ("1.0.0", "1.1.0"):
        reply = live.call("GET", f"/npm/acme/opaque/-/opaque-{number}.tgz", run["token"])
        assert reply.status == 403 and "could not read" in reply.json["detail"], reply.body


def test_the_gate_names_a_denial_its_run_made_after_ten_thousand_refusals_and_counts_them(
    live, app, npm_upstream, tmp_path
):
    """A reviewer's: a run refused 12,000 hidden versions, then `beta`, the optional dependency
    of a dependency; the gate printed 10,000 `hidden:` lines, never beta, and exited with npm's
    own status. Each packument records at most MAX_VERSION_DECISIONS of its versions' refusals,
    so here 201 packuments of 50 make the run's 10,050, then beta is asked for."""
    set_policy(app, "denylist", node=["beta"])
    packages = [f"p{i:03}" for i in range(MAX_RUN_DECISIONS // MAX_VERSION_DECISIONS + 1)]
    for name in packages:
        git = {f"{name}-{i}": f"git+https://x.example/{name}-{i}.git" for i in range(MAX_VERSION_DECISIONS)}
        npm_upstream.add(Release(name, "1.0.0"))
        npm_upstream.add(Release(name, "1.1.0", dependencies=git))  # hidden: npm takes 1.0.0
    npm_upstream.add(Release("zopt", "1.0.0", optional_dependencies={"beta": "^1.0.0"}))
    npm_upstream.add(Release("hb", "2.0.0", dependencies={**dict.fromkeys(packages, "^1.0.0"), "zopt": "^1.0.0"}))
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    (project / "package.json").write_text(
        json.dumps({"name": "p", "version": "1.0.0", "dependencies": {"hb": "^2.0.0"}})
    )
    done = Gate(tmp_path / "gate", installer_path="/usr/bin:/bin")(
        "--", "npm", "install", env=sandbox_env(live, home), cwd=project, timeout=600
    )
    said = done.stderr
    assert done.returncode == 3 and "runcode-policy-gate: denied: beta (node)" in said, said[-3000:]
    assert said.count("runcode-policy-gate: hidden: ") == REFUSALS_SHOWN, said[-3000:]
    unsaid = RUN_DECISIONS_READ - 1 - REFUSALS_SHOWN  # beta's denial came first
    assert f"runcode-policy-gate: and {unsaid} more such refusal(s) (and more the gate did not read): " in said


def test_npm_asked_for_exactly_a_hidden_version_fails_with_the_reason(live, app, tmp_path, url_host):
    set_policy(app, "denylist", node=["beta"])
    run = start_run(live)
    outcome = clients.npm(tmp_path, run["npm"], run["token"], "install", "alpha@1.1.0")
    assert not outcome.ok
    assert "E403" in outcome.output and "alpha@1.1.0 is not offered because of a dependency" in outcome.output
    assert installed_node(tmp_path) == {} and url_host.requests == []


def test_the_packument_hides_the_versions_and_moves_latest(live, app, url_host):
    set_policy(app, "denylist", node=["beta"])
    document = live.call("GET", "/npm/acme/alpha", live.tokens["sandbox"]).json
    assert list(document["versions"]) == ["1.0.0"] and document["dist-tags"] == {"latest": "1.0.0"}
    assert set(document["policyRestrictions"]["versions"]) == {"1.1.0", "1.2.0"}


def test_a_hidden_versions_tarball_fetched_directly_is_403_and_recorded(live, app, url_host):
    set_policy(app, "denylist", node=["beta"])
    run = start_run(live)
    reply = live.call("GET", "/npm/acme/alpha/-/alpha-1.1.0.tgz", run["token"])
    assert reply.status == 403 and "alpha@1.1.0 is not offered" in reply.json["error"]
    assert "installs from a url source" in reply.json["detail"]
    declared = hiding(run_decisions(live, run))
    assert declared["alpha@1.1.0"]["request"] == "download" and declared["alpha@1.1.0"]["file"] == "alpha-1.1.0.tgz"
    assert live.call("GET", "/npm/acme/alpha/-/alpha-1.0.0.tgz", run["token"]).status == 200
    assert url_host.requests == []


def test_hidden_versions_are_in_the_workspace_decisions_and_no_denial_of_the_project(live, app, url_host):
    set_policy(app, "denylist", node=["beta"])
    run = start_run(live)
    assert live.call("GET", "/npm/acme/alpha", run["token"]).status == 200
    decisions = live.call("GET", "/api/v1/workspaces/acme/decisions", live.tokens["auditor"]).json["decisions"]
    declared = hiding(decisions)
    assert set(declared) == {"alpha@1.1.0", "alpha@1.2.0"}
    project = [d for d in decisions if d["name"] == "alpha" and not d.get("declared_by")]
    assert [d["allowed"] for d in project] == [True]


PYTHON_CLIENTS = {"pip": clients.pip_install, "uv": clients.uv_install}


@pytest.mark.parametrize("installer", PYTHON_CLIENTS)
@pytest.mark.parametrize("place", CARRIED_AT)
def test_a_wheel_carrying_a_denied_project_is_refused_and_recorded(live, app, tmp_path, url_host, installer, place):
    """A wheel installs whatever `.dist-info` it holds where installed projects live: an allowed
    wheel carrying a denied project, dist-info and all, installed it unrecorded."""
    set_policy(app, "denylist", python=["beta"])
    run = start_run(live)
    carrier = f"carrier{list(CARRIED_AT).index(place)}"
    outcome = PYTHON_CLIENTS[installer](tmp_path, run["pypi"], run["token"], carrier)
    assert not outcome.ok and "403" in " ".join(outcome.output.split()), outcome.output
    assert not list((tmp_path / "site").glob("beta*")), outcome.output
    refused_as_carried(hiding(run_decisions(live, run))[f"{carrier}==1.0"], "its wheel's .dist-info")


@pytest.mark.parametrize("trick", WHEEL_TRICKS)
def test_a_wheel_that_makes_a_refused_project_installed_otherwise_is_refused(live, app, url_host, trick):
    """pip then lists beta as installed: through a `.pth` line that puts the wheel's own vendored
    folder on sys.path (what such a line names is not read: refused whatever it holds), or a
    dist-info folder whose METADATA says `Name: beta`."""
    set_policy(app, "denylist", python=["beta"])
    run = start_run(live)
    wheel = f"trick{list(WHEEL_TRICKS).index(trick)}-1.0-py3-none-any.whl"
    reply = live.call("GET", f"/pypi/acme/files/{wheel.split('-')[0]}/{wheel}", run["token"])
    assert reply.status == 403, reply.body
    (found,) = hiding(run_decisions(live, run)).values()
    assert found["allowed"] is False and "its wheel's .dist-info" in found["detail"]
    if trick in PTH_UNREAD:  # what the line names is not read: refused whatever it holds
        assert "to sys.path" in found["detail"] and found["reason"] == "invalid-spec", found
    else:  # read like the site: the project it carries is judged by name
        assert (found["spec"], found["reason"]) == ("beta", "matches-the-deny-list")


def test_a_project_vendored_inside_a_packages_own_folder_is_its_code_not_a_project_carried(live, app, url_host):
    """`pkg/_vendor/x.dist-info` (as setuptools ships) is not installed as a project of its own;
    a `.pth` of `import` lines only (setuptools' distutils-precedence.pth) adds no path, and one
    naming folders the wheel installs with no project in them (pywin32's `win32`) is served."""
    set_policy(app, "denylist", python=["beta"])
    run = start_run(live)
    wheel = "vendor-1.0-py3-none-any.whl"
    assert live.call("GET", f"/pypi/acme/files/vendor/{wheel}", run["token"]).status == 200
    assert hiding(run_decisions(live, run)) == {}


@pytest.mark.parametrize("installer", PYTHON_CLIENTS)
def test_a_wheel_requiring_a_refused_url_stops_the_install_and_nothing_is_fetched_from_the_url(
    live, app, tmp_path, url_host, installer
):
    set_policy(app, "denylist", python=["beta"])
    run = start_run(live)
    outcome = PYTHON_CLIENTS[installer](tmp_path, run["pypi"], run["token"], "alpha")
    site = tmp_path / "site"
    assert not list(site.glob("beta*")), outcome.output
    assert url_host.requests == []
    declared = hiding(run_decisions(live, run))["alpha==1.1"]
    assert (declared["spec"], declared["name"], declared["kind"], declared["reason"], declared["allowed"]) == (
        f"beta @ {url_host.url}{BETA_WHEEL}",
        "beta",
        "url",
        "direct-reference",
        False,
    )
    assert "alpha==1.1 is not offered because of a dependency it declares in Requires-Dist" in declared["message"]
    # Neither falls back to alpha 1.0 on a refused .metadata: both stop, uv with the reason.
    assert not outcome.ok and not list(site.glob("*.dist-info")), outcome.output
    said = " ".join(outcome.output.split())  # uv wraps its lines
    assert "403" in said and "alpha-1.1-py3-none-any.whl.metadata" in said
    if installer == "uv":
        assert "alpha==1.1 is not offered because of a dependency" in said
    # Known from then on: the page offers alpha 1.1 no more, and a later install takes 1.0.
    later, again = start_run(live), tmp_path / "again"
    again.mkdir()
    assert PYTHON_CLIENTS[installer](again, later["pypi"], later["token"], "alpha").ok
    assert [p.name for p in (again / "site").glob("alpha-*.dist-info")] == ["alpha-1.0.dist-info"]
    assert url_host.requests == []


def test_a_hidden_versions_metadata_and_wheel_fetched_directly_are_403(live, app, pypi_upstream, url_host):
    set_policy(app, "denylist", python=["beta"])
    run = start_run(live)
    base = "/pypi/acme/files/alpha/alpha-1.1-py3-none-any.whl"
    for path in (base + ".metadata", base):
        reply = live.call("GET", path, run["token"])
        assert reply.status == 403, reply.body
        assert "alpha==1.1 is not offered because of a dependency it declares in Requires-Dist" in reply.json["detail"]
    recorded = [d for d in run_decisions(live, run) if d.get("declared_by") == "alpha==1.1"]
    assert {d["request"] for d in recorded} == {"metadata", "download"}
    plain = live.call("GET", "/pypi/acme/files/alpha/alpha-1.0-py3-none-any.whl", run["token"])
    assert plain.status == 200 and plain.body == pypi_upstream.file("alpha-1.0-py3-none-any.whl").data
    assert url_host.requests == []


def test_a_url_requirement_on_a_name_the_policy_allows_is_served_and_recorded(live, app, url_host):
    set_policy(app, "denylist", python=["gamma"])  # as `pip install "beta @ URL"` is, in denylist mode
    run = start_run(live)
    reply = live.call("GET", "/pypi/acme/files/alpha/alpha-1.1-py3-none-any.whl.metadata", run["token"])
    assert reply.status == 200 and b"Requires-Dist: beta @ " in reply.body
    declared = hiding(run_decisions(live, run))["alpha==1.1"]
    assert declared["allowed"] is True and declared["reason"] == "direct-reference"


def test_a_wheel_larger_than_the_bound_is_refused_clearly(live, app, url_host, monkeypatch):
    from interface.index import streaming

    monkeypatch.setattr(streaming, "MAX_INDEX_FILE_BYTES", 100)
    set_policy(app, "denylist")
    reply = live.call("GET", "/pypi/acme/files/alpha/alpha-1.0-py3-none-any.whl", live.tokens["sandbox"])
    assert reply.status == 403 and "the wheel is larger than 100 bytes" in reply.json["detail"]


@pytest.mark.parametrize(
    ("names", "found"),
    [
        (["carrier-1.0.dist-info/METADATA", "carrier/__init__.py"], []),
        (["beta-1.0.dist-info/METADATA"], ["beta"]),
        (["./beta-1.0.dist-info/RECORD", "x/../Beta_Two-2.dist-info/METADATA"], ["beta", "beta-two"]),
        (["carrier-1.0.data/purelib/beta-1.0.dist-info/METADATA"], ["beta"]),
        (["carrier-1.0.data/platlib/beta.egg-info/PKG-INFO", "beta-1.0.egg-info"], ["beta"]),
        (["carrier-1.0.data/data/lib/python3.11/site-packages/beta-1.0.dist-info/METADATA"], ["beta"]),
        (["carrier/_vendor/beta-1.0.dist-info/METADATA"], []),  # its own code
        # the other .data folders land on sys.path too: a stdlib folder, a venv's bin/ (a reviewer's)
        (["carrier-1.0.data/data/lib/python3.11/beta-1.0.dist-info/METADATA"], ["beta"]),
        (
            ["carrier-1.0.data/scripts/beta-1.0.dist-info/METADATA", "carrier-1.0.data/scripts/beta/__init__.py"],
            ["beta"],
        ),
        (["carrier-1.0.data/scripts/beta.egg-info"], ["beta"]),
        (["carrier-1.0.data/data/share/hid/beta-1.0.dist-info/METADATA"], ["beta"]),
        (["gamma-1.0.DIST-INFO/METADATA"], ["gamma"]),
    ],
)
def test_the_projects_a_wheel_carries_are_read_where_pip_installs_them(names, found):
    import io
    import zipfile

    from interface.index.core_metadata import carried

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            archive.writestr(name, b"Metadata-Version: 2.1\n")  # says no Name: the folder's is judged
    with zipfile.ZipFile(buffer) as archive:
        assert carried(archive, "carrier-1.0.dist-info") == (found, [])


def test_only_metadata_and_pth_files_are_read_whole_a_large_module_is_not_judged():
    import io
    import zipfile

    from interface.index.core_metadata import MAX_READ_BYTES, carried

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("big.py", b"#" * (MAX_READ_BYTES + 1))
        archive.writestr("huge.pth", b"#" * (MAX_READ_BYTES + 1))
    with zipfile.ZipFile(buffer) as archive:
        assert carried(archive, "carrier-1.0.dist-info") == (
            [],
            [f"huge.pth is larger than {MAX_READ_BYTES} bytes, the most read of it"],
        )


def sdist_refused(live, run: dict, project: str, words: str) -> None:
    reply = live.call("GET", f"/pypi/acme/files/{project}/{project}-1.0.tar.gz", run["token"])
    assert reply.status == 403, reply.body
    assert words in reply.json["detail"], reply.json


def test_what_a_wheel_declares_hides_its_versions_sdist_and_the_page_drops_the_version(live, app, pypi_upstream):
    """A reviewer's: the wheel's .metadata was 403 for a dependency it declares, yet the sdist of
    the same version was served in the same run (and pip built it)."""
    set_policy(app, "denylist", python=["beta"])
    run = start_run(live)
    base = "/pypi/acme/files/wheeldep/wheeldep-1.0"
    assert live.call("GET", base + ".tar.gz", run["token"]).status == 200  # its PKG-INFO says nothing: not known yet
    assert live.call("GET", base + "-py3-none-any.whl.metadata", run["token"]).status == 403
    sdist_refused(
        live,
        run,
        "wheeldep",
        f"wheeldep==1.0 is not offered because of a dependency it declares in Requires-Dist: '{GIT_BETA}'",
    )
    page = live.call("GET", "/pypi/acme/simple/wheeldep/", run["token"], headers=JSON_PAGE).json
    assert [f["filename"] for f in page["files"]] == ["wheeldep-0.9-py3-none-any.whl", "wheeldep-0.9.tar.gz"]
    assert page["versions"] == ["0.9"]
    recorded = {
        (d["request"], d.get("file")) for d in run_decisions(live, run) if d.get("declared_by") == "wheeldep==1.0"
    }
    assert recorded == {
        ("metadata", "wheeldep-1.0-py3-none-any.whl"),
        ("download", "wheeldep-1.0.tar.gz"),
        ("page", None),
    }


def test_a_project_a_wheel_carries_hides_its_versions_sdist(live, app):
    set_policy(app, "denylist", python=["beta"])
    run = start_run(live)
    assert live.call("GET", "/pypi/acme/files/carrysdist/carrysdist-1.0-py3-none-any.whl", run["token"]).status == 403
    sdist_refused(
        live,
        run,
        "carrysdist",
        "carrysdist==1.0 is not offered because of a dependency it declares in its wheel's .dist-info",
    )


def test_an_sdists_own_pkg_info_declaring_a_refused_url_hides_it(live, app):
    set_policy(app, "denylist", python=["beta"])
    run = start_run(live)
    sdist_refused(
        live,
        run,
        "gitdep",
        f"gitdep==1.0 is not offered because of a dependency it declares in Requires-Dist: '{GIT_BETA}'",
    )


def test_what_one_worker_read_hides_the_version_on_another_and_in_a_later_run(live, app, open_app, tmp_path, live_env):
    """Workers share the index's cache, not their memories: what one read is known to the next."""
    from interface import create_app

    set_policy(app, "denylist", python=["beta"])
    metadata = "/pypi/acme/files/wheeldep/wheeldep-1.0-py3-none-any.whl.metadata"
    assert live.call("GET", metadata, start_run(live)["token"]).status == 403
    other = LiveServer(create_app(env={"RUNCODE_POLICY_DATA_DIR": str(tmp_path), **live_env}, governance=open_app()))
    other.tokens = live.tokens
    try:
        run = start_run(other)
        sdist_refused(other, run, "wheeldep", "wheeldep==1.0 is not offered because of a dependency it declares")
        page = other.call("GET", "/pypi/acme/simple/wheeldep/", run["token"], headers=JSON_PAGE).json
        assert page["versions"] == ["0.9"]
    finally:
        other.close()


@pytest.mark.parametrize("project", ["gitdep", "wheeldep"])
def test_pip_through_the_gate_gets_no_sdist_of_a_hidden_version_pinned_by_its_hash(
    live, app, tmp_path, pypi_upstream, project
):
    """A reviewer's: `gitdep==1.0 --hash=sha256:<the sdist's>` passed and pip built the sdist.
    gitdep's own PKG-INFO says it; wheeldep's wheel said it to an earlier run."""
    set_policy(app, "denylist", python=["beta"])
    if project == "wheeldep":
        wheel = "/pypi/acme/files/wheeldep/wheeldep-1.0-py3-none-any.whl"
        assert live.call("GET", wheel, start_run(live)["token"]).status == 403
    digest = pypi_upstream.file(f"{project}-1.0.tar.gz").sha256
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"{project}==1.0 --hash=sha256:{digest}\n")
    target = TargetEnv(tmp_path / "venv")
    gate = Gate(tmp_path / "gate", installer_path=f"{target.bin}:/usr/bin:/bin")
    home, dest = tmp_path / "home", tmp_path / "dest"
    home.mkdir()
    env = sandbox_env(live, home, VIRTUAL_ENV=str(target.root), PATH=f"{target.bin}:/usr/bin:/bin")
    done = gate("--", "pip", "download", "--no-deps", "-d", str(dest), "-r", str(requirements), env=env, cwd=home)
    said = done.stdout + done.stderr
    assert done.returncode != 0 and not list(dest.glob("*")), said
    assert f"{project}==1.0 is not offered because of a dependency it declares" in done.stderr, said
    if project == "gitdep":  # nothing known before: pip fetched the sdist, which its PKG-INFO had refused
        assert f"HTTP error 403 while getting {live.url}/pypi/acme/files/gitdep/gitdep-1.0.tar.gz" in said
    else:  # known: the page offers it no more
        assert "wheeldep==1.0 (from versions: 0.9)" in said


@pytest.mark.parametrize("installer", PYTHON_CLIENTS)
def test_an_sdist_whose_build_requires_a_refused_url_is_not_built_and_nothing_is_fetched_from_the_url(
    live, app, tmp_path, url_host, installer
):
    """A reviewer's: pip's (and uv's) build environment fetched denied beta straight from the URL
    an sdist's `build-system.requires` names, and the sdist was installed."""
    set_policy(app, "denylist", python=["beta"])
    run = start_run(live)
    outcome = PYTHON_CLIENTS[installer](tmp_path, run["pypi"], run["token"], "buildurl")
    assert url_host.requests == [], outcome.output
    assert not outcome.ok and not list((tmp_path / "site").glob("*.dist-info")), outcome.output
    assert "403" in " ".join(outcome.output.split()) and "buildurl-1.0.tar.gz" in outcome.output
    declared = hiding(run_decisions(live, run))["buildurl==1.0"]
    assert (declared["spec"], declared["kind"], declared["reason"], declared["allowed"], declared["request"]) == (
        f"beta @ {url_host.url}{BETA_WHEEL}",
        "url",
        "direct-reference",
        False,
        "download",
    )
    assert declared["message"].startswith(
        "buildurl==1.0 is not offered because of a dependency it declares in build-system.requires:"
    )
    page = live.call("GET", "/pypi/acme/simple/buildurl/", start_run(live)["token"], headers=JSON_PAGE).json
    assert page["files"] == [] and page["versions"] == []  # known from then on: offered no more


def test_an_sdist_building_with_registry_names_is_served_and_one_whose_pyproject_is_unreadable_is_not(live, app):
    """A build requirement by name is fetched through the index, and judged then; a pyproject.toml
    that is not TOML says nothing that can be judged (fail closed)."""
    set_policy(app, "denylist", python=["beta"])
    run = start_run(live)
    assert live.call("GET", "/pypi/acme/files/buildreg/buildreg-1.0.tar.gz", run["token"]).status == 200
    sdist_refused(live, run, "buildbad", "buildbad==1.0 is not offered because of a dependency it declares in build")
    refused = hiding(run_decisions(live, run))["buildbad==1.0"]
    assert refused["reason"] == "invalid-spec" and refused["spec"].startswith("pyproject.toml is not TOML"), refused
    assert set(hiding(run_decisions(live, run))) == {"buildbad==1.0"}


@pytest.mark.parametrize("installer", PYTHON_CLIENTS)
@pytest.mark.parametrize("project", ["flat", "flatzip", "mixed"])
def test_an_sdist_not_in_one_top_folder_is_not_built_and_nothing_is_fetched_from_the_url(
    live, app, tmp_path, url_host, pypi_upstream, installer, project
):
    """A reviewer's: the index read only what sits in an sdist's top folder, while pip and uv build
    one whose members are not all in one folder from the archive's root, whose pyproject.toml
    required beta from a URL: fetched into the build, the sdist installed, nothing recorded."""
    set_policy(app, "denylist", python=["beta"])
    run = start_run(live)
    outcome = PYTHON_CLIENTS[installer](tmp_path, run["pypi"], run["token"], project)
    assert url_host.requests == [], outcome.output
    assert not outcome.ok and not list((tmp_path / "site").glob("*.dist-info")), outcome.output
    [sdist] = pypi_upstream.projects[project].files
    assert "403" in " ".join(outcome.output.split()) and sdist.filename in outcome.output
    refused = hiding(run_decisions(live, run))[f"{project}==1.0"]
    assert (refused["reason"], refused["allowed"], refused["request"], refused["file"]) == (
        "invalid-spec",
        False,
        "download",
        sdist.filename,
    )
    assert refused["spec"].startswith(f"{sdist.filename} is not read: {NOT_IN_ONE_FOLDER}"), refused
    assert refused["message"].startswith(
        f"{project}==1.0 is not offered because of a dependency it declares in build-system.requires:"
    )
    page = live.call("GET", f"/pypi/acme/simple/{project}/", start_run(live)["token"], headers=JSON_PAGE).json
    assert page["files"] == [] and page["versions"] == []  # known from then on: offered no more


@pytest.mark.parametrize("suffix", LEGACY_FORMATS)
def test_an_sdist_in_a_legacy_format_is_read_and_nothing_is_fetched_from_the_url_its_build_requires(
    live, app, tmp_path, url_host, suffix
):
    """A reviewer's: `tgzpkg-1.0.tgz`, requiring beta from a URL to build, was served unread (only
    a `.tar.gz` or a `.zip` was read), and pip fetched beta into its build. (uv 0.13 builds only
    a `.tar.gz` or a `.zip`, PEP 625's names: the layouts above.)"""
    set_policy(app, "denylist", python=["beta"])
    run = start_run(live)
    project = LEGACY_FORMATS[suffix]
    outcome = clients.pip_install(tmp_path, run["pypi"], run["token"], project)
    assert url_host.requests == [], outcome.output
    assert not outcome.ok and not list((tmp_path / "site").glob("*.dist-info")), outcome.output
    filename = f"{project}-1.0{suffix}"
    assert f"HTTP error 403 while getting {live.url}/pypi/acme/files/{project}/{filename}" in outcome.output
    refused = [d for d in run_decisions(live, run) if d.get("declared_by") and d["file"] == filename]
    assert [(d["spec"], d["reason"], d["allowed"], d["request"]) for d in refused] == [
        (f"beta @ {url_host.url}{BETA_WHEEL}", "direct-reference", False, "download")
    ]


def test_a_file_named_for_another_project_is_not_offered_nor_served_under_its_page(live, app, tmp_path):
    """A reviewer's: okpkg's page listed beta's wheel, which was served (and installed by its URL)
    as okpkg's, recorded as an allowed download of okpkg."""
    set_policy(app, "denylist", python=["beta"])
    run = start_run(live)
    for accept in (JSON_PAGE, {"Accept": "text/html"}):
        page = live.call("GET", "/pypi/acme/simple/okpkg/", run["token"], headers=accept)
        assert b"beta-1." not in page.body, page.body
    page = live.call("GET", "/pypi/acme/simple/okpkg/", run["token"], headers=JSON_PAGE).json
    assert page["versions"] == ["1.0"]
    for filename in ("beta-1.1-py3-none-any.whl", "beta-1.1-py3-none-any.whl.metadata", "beta-1.2.tar.gz"):
        reply = live.call("GET", f"/pypi/acme/files/okpkg/{filename}", run["token"])
        assert reply.status == 403, reply.body
        assert "but its name names another project" in reply.json["detail"], reply.json
    url = clients.with_token(f"{live.url}/pypi/acme/files/okpkg/beta-1.1-py3-none-any.whl", run["token"])
    outcome = clients.pip_install(tmp_path, run["pypi"], run["token"], url)
    assert not outcome.ok and not list((tmp_path / "site").glob("beta*")), outcome.output
    recorded = {
        (d["name"], d["file"], d["request"], d["allowed"], d["reason"])
        for d in run_decisions(live, run)
        if (d.get("file") or "").startswith("beta-")
    }
    assert recorded == {
        ("okpkg", "beta-1.1-py3-none-any.whl", "download", False, "version-unknown"),
        ("okpkg", "beta-1.1-py3-none-any.whl", "metadata", False, "version-unknown"),
        ("okpkg", "beta-1.2.tar.gz", "download", False, "version-unknown"),
    }
    again = tmp_path / "again"  # no project denial: okpkg itself installs in the same run
    again.mkdir()
    assert clients.pip_install(again, run["pypi"], run["token"], "okpkg").ok


@pytest.mark.parametrize(
    ("dist", "said"),
    [
        (Dist("p", "1.0", requires=(GIT_BETA, "gamma>=1")), [GIT_BETA, "gamma>=1"]),
        (Dist("p", "1.0", requires=(GIT_BETA,), sdist_dynamic=True), []),  # dynamic: says none
        (Dist("p", "1.0", requires=(GIT_BETA,), sdist_name="p-1.0.tar.bz2"), [GIT_BETA]),  # a legacy format
    ],
)
def test_an_sdists_pkg_info_is_read_for_its_requires_dist(dist, said):
    import io

    from interface.index.core_metadata import sdist_requires

    filename, data = build_sdist(dist)
    assert sdist_requires(io.BytesIO(data), filename).requires == said


@pytest.mark.parametrize("suffix", [s for s in SDIST_ARCHIVES if s != ".tar.zst"])
def test_an_sdist_is_read_in_every_format_pip_and_uv_build_from(suffix):
    """pip's SUPPORTED_EXTENSIONS and uv's source distribution extensions (a reviewer's: a `.tgz`
    was served unread); uv's `.tar.zst` is not read (below)."""
    import io

    from domain.declared import Requires
    from interface.index.core_metadata import sdist_requires

    pyproject = f'[build-system]\nrequires = ["{GIT_BETA}"]\n'.encode()
    dist = Dist(
        "p", "1.0", requires=(GIT_BETA,), sdist_name=f"p-1.0{suffix}", sdist_more=(("pyproject.toml", pyproject),)
    )
    filename, data = build_sdist(dist)
    assert sdist_requires(io.BytesIO(data), filename) == Requires([GIT_BETA], build=(GIT_BETA,))


def unread_cases() -> dict[str, tuple[str, bytes, str]]:
    """{case: (an sdist's name, its bytes, why the index does not read it)}."""
    inside = {"p-1.0/PKG-INFO": b"Name: p\n", "p-1.0/pyproject.toml": b""}
    return {
        "flat": ("p-1.0.tar.gz", build_sdist(Dist("p", "1.0", sdist_root=""))[1], NOT_IN_ONE_FOLDER),
        "flat zip": (
            "p-1.0.zip",
            build_sdist(Dist("p", "1.0", sdist_root="", sdist_name="p-1.0.zip"))[1],
            NOT_IN_ONE_FOLDER,
        ),
        "a file beside the folder": (
            "p-1.0.tar.gz",
            pack("p-1.0.tar.gz", {**inside, "pyproject.toml": b""}),
            NOT_IN_ONE_FOLDER,
        ),
        "two folders": ("p-1.0.zip", pack("p-1.0.zip", {**inside, "q-1.0/pyproject.toml": b""}), NOT_IN_ONE_FOLDER),
        "nothing": ("p-1.0.tar", pack("p-1.0.tar", {}), "it holds nothing"),
        "a dot path": ("p-1.0.zip", pack("p-1.0.zip", {"./p-1.0/PKG-INFO": b""}), "a member path that is not a clean"),
        "a gzip named bz2": ("p-1.0.tar.bz2", pack("p-1.0.tar.gz", inside), "it is not a readable archive ("),
        "not an archive": ("p-1.0.tar.gz", b"not a tarball", "it is not a readable archive ("),
        "zstd": ("p-1.0.tar.zst", b"", "it is compressed with zst, which the index does not read"),
        "an egg": ("p-1.0-py3.11.egg", pack("p-1.0.zip", inside), "it is in no archive format pip or uv builds an"),
    }


@pytest.mark.parametrize("case", unread_cases())
def test_an_sdist_the_index_does_not_read_says_why_and_declares_nothing_else(case):
    """Fail closed: what an sdist not read would fetch to build is not known, and its version is
    hidden (`build-system.requires` unread)."""
    import io

    from interface.index.core_metadata import sdist_requires

    filename, data, why = unread_cases()[case]
    found = sdist_requires(io.BytesIO(data), filename)
    assert (found.requires, found.build, len(found.build_unread)) == ([], (), 1), found
    assert found.build_unread[0].startswith(f"{filename} is not read: {why}"), found


def test_a_zip_sdist_is_read_within_the_tarballs_bounds(monkeypatch):
    import io
    import stat
    import zipfile

    from application.index import facts
    from interface.index.core_metadata import sdist_requires

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("p-1.0/PKG-INFO", f"Requires-Dist: {GIT_BETA}\n")
        link = zipfile.ZipInfo("p-1.0/pyproject.toml")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16  # a link: not read, as a tarball's
        archive.writestr(link, "../elsewhere/pyproject.toml")
    found = sdist_requires(buffer, "p-1.0.zip")
    assert (found.requires, found.build_unread) == (
        [GIT_BETA],
        ("pyproject.toml is not a file of at most 1048576 bytes, the most read of it",),
    )
    monkeypatch.setattr(facts, "MAX_MEMBERS", 1)
    assert sdist_requires(buffer, "p-1.0.zip").build_unread == (
        "p-1.0.zip is not read: more members than any package holds",
    )


@pytest.mark.parametrize(
    ("pyproject", "build", "unread"),
    [
        (
            b'[build-system]\nrequires = ["setuptools", "beta @ https://h/b.whl"]\n',
            ("setuptools", "beta @ https://h/b.whl"),
            "",
        ),
        (b'[project]\nname = "p"\n', (), ""),  # no build-system: pip builds with setuptools, by name
        (b"[build-system\n", (), "pyproject.toml is not TOML: "),
        (b'[build-system]\nrequires = "beta @ https://h/b.whl"\n', (), "pyproject.toml has a build-system.requires"),
        (b"[build-system]\nrequires = [1]\n", (), "pyproject.toml has a build-system.requires"),
        (b"build-system = 1\n", (), "pyproject.toml has a build-system.requires"),
        (b"\xff\xfe", (), "pyproject.toml is not TOML: "),
        (b"#" * (1024 * 1024 + 1), (), "pyproject.toml is not a file of at most 1048576 bytes"),
    ],
)
def test_an_sdists_pyproject_is_read_for_its_build_requirements(pyproject, build, unread):
    import io

    from interface.index.core_metadata import sdist_requires

    filename, data = build_sdist(Dist("p", "1.0", sdist_more=(("pyproject.toml", pyproject),)))
    found = sdist_requires(io.BytesIO(data), filename)
    assert found is not None and found.build == build
    assert [why[: len(unread)] for why in found.build_unread] == ([unread] if unread else [])


def test_an_sdists_pkg_info_is_read_wherever_the_archive_holds_it_and_not_past_its_bound(monkeypatch):
    import io
    import tarfile
    import zipfile

    from domain.declared import Requires
    from interface.index import core_metadata

    pkg_info = f"Metadata-Version: 2.2\nName: p\nVersion: 1.0\nRequires-Dist: {GIT_BETA}\n".encode()
    members = {"p-1.0/setup.py": b"#" * 5000, "p-1.0/p/PKG-INFO": b"Requires-Dist: x @ https://h/x.whl\n"}
    members["p-1.0/pyproject.toml"] = f'[build-system]\nrequires = ["{GIT_BETA}"]\n'.encode()
    members["p-1.0/PKG-INFO"] = pkg_info  # last, as hatchling and flit write it; one deeper is not the sdist's
    tar, zipped = io.BytesIO(), io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w:gz") as archive:
        for path, data in members.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    with zipfile.ZipFile(zipped, "w") as archive:
        for path, data in members.items():
            archive.writestr(path, data)
    for filename, file in (("p-1.0.tar.gz", tar), ("p-1.0.zip", zipped)):
        assert core_metadata.sdist_requires(file, filename) == Requires([GIT_BETA], build=(GIT_BETA,))
        monkeypatch.setattr(core_metadata, "MAX_METADATA_BYTES", len(pkg_info) - 1)
        # a PKG-INFO past its bound is not read; the build requirements still are
        assert core_metadata.sdist_requires(file, filename) == Requires([], build=(GIT_BETA,))
        monkeypatch.undo()
