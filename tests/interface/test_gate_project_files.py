"""What the gate reads of a Python project's files before any client runs: every table that adds
a requirement (a dependency given as a URL, a file, a path or a repository becomes `name @ ...`,
which the service refuses as a direct reference), every file that names an index, and a lock
that would fetch from elsewhere. Each case is one a review got past the gate with a real client."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from interface.gate.clients.python import projects, settings
from interface.gate.installers import Unresolvable
from interface.gate.service import CannotVerify
from tests.support.python_tools import tool_bin
from tests.support.third_party import require

EVIL = "http://evil.example/beta-1.0-py3-none-any.whl"
INDEX = "http://127.0.0.1:8000/pypi/acme/simple/"
PROJECT = '[project]\nname = "app"\nversion = "0"\ndependencies = ["alpha"]\n'

TABLES = {
    "uv overrides": PROJECT + f'[tool.uv]\noverride-dependencies = ["beta @ {EVIL}"]\n',
    "uv constraints": PROJECT + f'[tool.uv]\nconstraint-dependencies = ["beta @ {EVIL}"]\n',
    "pdm overrides": PROJECT + f'[tool.pdm.resolution.overrides]\nbeta = "{EVIL}"\n',
    "poetry url": f'[tool.poetry]\nname = "app"\n[tool.poetry.dependencies]\npython = "3"\nbeta = {{url = "{EVIL}"}}\n',
    "poetry git": '[tool.poetry]\nname = "app"\n[tool.poetry.group.dev.dependencies]\nbeta = {git = "https://evil.example/b.git"}\n',
    "poetry path": '[tool.poetry]\nname = "app"\n[tool.poetry.dependencies]\nbeta = {path = "../beta"}\n',
    "poetry plugin": f'[tool.poetry]\nname = "app"\n[tool.poetry.requires-plugins]\nbeta = {{url = "{EVIL}"}}\n',
}


@pytest.mark.parametrize("table", TABLES)
def test_a_dependency_from_elsewhere_in_any_table_is_a_requirement_the_service_judges(tmp_path, table):
    (tmp_path / "pyproject.toml").write_text(TABLES[table])
    direct = [r for r in projects.requirements(str(tmp_path)) if r.startswith("beta @ ")]
    assert len(direct) == 1, projects.requirements(str(tmp_path))


def test_a_pipfile_package_from_a_file_or_repository_is_a_requirement_the_service_judges(tmp_path):
    (tmp_path / "Pipfile").write_text(f'[packages]\ngamma = "*"\nbeta = {{file = "{EVIL}"}}\n')
    assert projects.requirements(str(tmp_path)) == ["gamma", f"beta @ {EVIL}"]


def test_a_project_without_a_project_table_is_refused_its_backend_decides(tmp_path):
    build = '[build-system]\nrequires = []\nbuild-backend = "mine"\nbackend-path = ["_backend"]\n'
    (tmp_path / "pyproject.toml").write_text(build)
    with pytest.raises(CannotVerify, match="no \\[project\\] table"):
        projects.requirements(str(tmp_path))


def test_a_project_pdm_toml_naming_another_index_is_refused(tmp_path):
    (tmp_path / "pdm.toml").write_text('[pypi.evil]\nurl = "http://evil.example/simple/"\n')
    with pytest.raises(Unresolvable, match="pdm.toml \\[pypi.evil\\] names the index"):
        settings.check_sources("pdm", INDEX, str(tmp_path))


@pytest.mark.parametrize(
    "package",
    [
        f'source = {{ registry = "{INDEX}" }}\nwheels = [{{ url = "{EVIL}", hash = "sha256:00" }}]',
        'source = { git = "https://evil.example/beta.git?rev=1#0123" }',
        f'source = {{ url = "{EVIL}" }}',
        'source = { directory = "betadir" }',  # a local project built and installed as it is
        'source = { editable = "betadir" }',  # not the project, nor a member of its workspace
    ],
    ids=["a wheel elsewhere", "git", "url", "a directory", "an editable path"],
)
def test_a_uv_lock_naming_this_index_but_fetching_elsewhere_is_refused(tmp_path, package):
    (tmp_path / "uv.lock").write_text(f'version = 1\n[[package]]\nname = "beta"\nversion = "1.0"\n{package}\n')
    with pytest.raises(Unresolvable, match="uv.lock installs beta from"):
        settings.check_sources("uv-project", INDEX, str(tmp_path))


FILES = INDEX.rsplit("/", 2)[0] + "/files/beta/beta-1.0-py3-none-any.whl"
OF_THIS_INDEX = (
    f'[[package]]\nname = "beta"\nversion = "1.0"\nsource = {{ registry = "{INDEX}" }}\n'
    f'wheels = [{{ url = "{FILES}", hash = "sha256:00" }}]\n'
)
OF_ANOTHER_INDEX = (
    '[[package]]\nname = "gamma"\nversion = "1.0"\nsource = { registry = "https://pypi.org/simple" }\n'
    'wheels = [{ url = "https://files.pythonhosted.org/g.whl", hash = "sha256:00" }]\n'
)
OWN = (
    '[[package]]\nname = "app"\nversion = "0"\nsource = { editable = "." }\n'
    '[[package]]\nname = "lib"\nversion = "0"\nsource = { editable = "packages/lib" }\n'
    '[[package]]\nname = "docs"\nversion = "0"\nsource = { virtual = "packages/docs" }\n'
)


def uv_workspace(root, members: dict, workspace: str = '[tool.uv.workspace]\nmembers = ["packages/*"]\n'):
    """A uv workspace in `root`: {folder: its pyproject.toml} beside the root's (PROJECT)."""
    (root / "pyproject.toml").write_text(PROJECT + workspace)
    for folder, text in members.items():
        (root / folder).mkdir(parents=True)
        (root / folder / "pyproject.toml").write_text(text)


MEMBER = '[project]\nname = "{name}"\nversion = "0"\ndependencies = {deps}\n'
MEMBERS = {"packages/lib": MEMBER.format(name="lib", deps="[]"), "packages/docs": MEMBER.format(name="docs", deps="[]")}


@pytest.mark.parametrize("packages", [OF_THIS_INDEX, OF_ANOTHER_INDEX], ids=["this index", "wholly another"])
def test_a_uv_lock_of_this_index_or_wholly_of_another_one_passes(tmp_path, packages):
    """Locked wholly against another index, uv resolves it again through this one."""
    (tmp_path / "uv.lock").write_text("version = 1\n" + packages + OWN)
    uv_workspace(tmp_path, MEMBERS)
    settings.check_sources("uv-project", INDEX, str(tmp_path / "packages" / "lib"))  # uv finds the root's lock


def test_a_uv_lock_naming_a_folder_the_workspace_excludes_as_its_own_is_refused(tmp_path):
    """An excluded folder is no member (the gate never read its requirements), whatever the
    `members` pattern that would match it."""
    (tmp_path / "uv.lock").write_text("version = 1\n" + OWN)
    uv_workspace(tmp_path, MEMBERS, '[tool.uv.workspace]\nmembers = ["packages/*"]\nexclude = ["packages/d*"]\n')
    with pytest.raises(Unresolvable, match="uv.lock installs docs from a virtual source"):
        settings.check_sources("uv-project", INDEX, str(tmp_path))


def test_a_uv_lock_of_this_index_with_a_package_of_another_is_refused(tmp_path):
    """Taken as it is (it has this index), its package of another index is fetched from there."""
    (tmp_path / "uv.lock").write_text("version = 1\n" + OF_THIS_INDEX + OF_ANOTHER_INDEX)
    with pytest.raises(Unresolvable, match=r"installs gamma from a another index's \(https://pypi.org/simple\)"):
        settings.check_sources("uv-project", INDEX, str(tmp_path))


LOCKS = {
    "pdm url": ("pdm", "pdm.lock", f'[[package]]\nname = "beta"\nversion = "1.0"\nurl = "{EVIL}"\n'),
    "pdm path": (
        "pdm",
        "pdm.lock",
        '[[package]]\nname = "beta"\nversion = "1.0"\npath = "./beta-1.0-py3-none-any.whl"\n',
    ),
    "pdm git": ("pdm", "pdm.lock", '[[package]]\nname = "beta"\nversion = "1.0"\ngit = "https://evil.example/b.git"\n'),
    # PEP 751's format: pdm reads it by its content, in pdm.lock (whatever its lock format) or pylock.toml
    "pdm, pylock format, url": (
        "pdm",
        "pdm.lock",
        f'lock-version = "1.0"\n[[packages]]\nname = "beta"\nwheels = [{{ name = "b.whl", url = "{EVIL}" }}]\n',
    ),
    "pdm, pylock.toml, vcs": (
        "pdm",
        "pylock.toml",
        'lock-version = "1.0"\n[[packages]]\nname = "beta"\nvcs = { type = "fossil", url = "https://evil.example" }\n',
    ),
    "pdm, pylock.toml, directory": (
        "pdm",
        "pylock.toml",
        'lock-version = "1.0"\n[[packages]]\nname = "beta"\ndirectory = { path = "../beta" }\n',
    ),
    "pdm, pylock.toml, archive path": (
        "pdm",
        "pylock.toml",
        'lock-version = "1.0"\n[[packages]]\nname = "beta"\narchive = { path = "beta.tar.gz" }\n',
    ),
    "pipenv file": ("pipenv", "Pipfile.lock", '{"default": {"beta": {"file": "' + EVIL + '"}}}'),
    "pipenv path": ("pipenv", "Pipfile.lock", '{"develop": {"beta": {"path": "./beta-1.0-py3-none-any.whl"}}}'),
    "pipenv git": ("pipenv", "Pipfile.lock", '{"default": {"beta": {"git": "https://evil.example/b.git"}}}'),
}


PROJECT_FILE = {"pdm": ("pyproject.toml", PROJECT), "pipenv": ("Pipfile", '[packages]\nalpha = "*"\n')}


@pytest.mark.parametrize("below", ["", "src/deep"], ids=["in the project", "in a folder below it"])
@pytest.mark.parametrize("case", LOCKS)
def test_a_pdm_or_pipenv_lock_entry_from_elsewhere_than_the_index_is_refused(tmp_path, case, below):
    """Each installed the denied beta with the gate's exit 0: the lock named its file, and the
    installer fetched it as written, past the index. pdm and pipenv find the project (and its
    lock) from any folder below it."""
    kind, lock, text = LOCKS[case]
    name, project = PROJECT_FILE[kind]
    (tmp_path / name).write_text(project)
    (tmp_path / lock).write_text(text)
    (tmp_path / below).mkdir(parents=True, exist_ok=True)
    with pytest.raises(Unresolvable, match=f"{tmp_path / lock} installs beta from"):
        settings.check_sources(kind, INDEX, str(tmp_path / below))


def test_a_poetry_lock_above_naming_another_index_is_refused(tmp_path):
    source = f'[[tool.poetry.source]]\nname = "policy"\nurl = "{INDEX}"\npriority = "primary"\n'
    (tmp_path / "pyproject.toml").write_text(PROJECT + source)
    (tmp_path / "poetry.lock").write_text(
        '[[package]]\nname = "beta"\nversion = "1.0"\n[package.source]\ntype = "legacy"\nurl = "http://evil.example/simple"\n'
    )
    (tmp_path / "src").mkdir()
    with pytest.raises(Unresolvable, match=f"{tmp_path / 'poetry.lock'} names the index 'http://evil.example/simple'"):
        settings.check_sources("poetry", INDEX, str(tmp_path / "src"))


def test_a_pdm_workspace_is_judged_whole_from_a_member_with_the_roots_lock(tmp_path):
    """`pdm add` in a member locks every member into the root's pdm.lock: each member's
    requirements and sources are read, and the root's lock checked."""
    (tmp_path / "pyproject.toml").write_text(
        MEMBER.format(name="app", deps='["alpha", "lib"]') + PDM_WORKSPACE_OF("packages/*")
    )
    for name, deps in (("lib", '["gamma"]'), ("docs", f'["beta @ {EVIL}"]')):
        (tmp_path / "packages" / name).mkdir(parents=True)
        (tmp_path / "packages" / name / "pyproject.toml").write_text(MEMBER.format(name=name, deps=deps))
    lib = str(tmp_path / "packages" / "lib")
    assert sorted(projects.project_requirements("pdm", lib)) == ["alpha", f"beta @ {EVIL}", "gamma"]
    (tmp_path / "packages" / "docs" / "pdm.toml").write_text('[pypi]\nurl = "http://evil.example/simple/"\n')
    with pytest.raises(Unresolvable, match="docs/pdm.toml pypi.url names the index"):
        settings.check_sources("pdm", INDEX, lib)
    (tmp_path / "packages" / "docs" / "pdm.toml").unlink()
    (tmp_path / "pdm.lock").write_text(LOCKS["pdm url"][2])
    with pytest.raises(Unresolvable, match=f"{tmp_path / 'pdm.lock'} installs beta from"):
        settings.check_sources("pdm", INDEX, lib)


@pytest.mark.parametrize("kind", ["pdm", "poetry"])
def test_a_dangling_link_named_pyproject_toml_stops_the_gate_which_refuses_it(tmp_path, kind):
    """pdm and poetry walk past it (Path.exists follows the link); the gate stops there, as at
    any name there, and cannot read it: it refuses rather than read another project than theirs."""
    (tmp_path / "pyproject.toml").write_text(PROJECT)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "pyproject.toml").symlink_to(tmp_path / "nothing")
    with pytest.raises(CannotVerify, match="cannot read .*src/pyproject.toml"):
        projects.project_requirements(kind, str(tmp_path / "src"))


def test_a_lock_naming_the_project_itself_or_the_indexs_files_passes(tmp_path):
    files = INDEX.rsplit("/", 2)[0] + "/files/beta/beta-1.0-py3-none-any.whl"
    (tmp_path / "pdm.lock").write_text(f'[[package]]\nname = "beta"\nversion = "1.0"\nurl = "{files}"\n')
    (tmp_path / "pylock.toml").write_text(  # PEP 751's: the index's files, the project's own folder
        f'lock-version = "1.0"\n[[packages]]\nname = "beta"\nwheels = [{{ name = "b.whl", url = "{files}" }}]\n'
        '[[packages]]\nname = "app"\ndirectory = { path = ".", editable = true }\n'
    )
    settings.check_sources("pdm", INDEX, str(tmp_path))
    (tmp_path / "Pipfile.lock").write_text(
        '{"default": {"app": {"editable": true, "path": "."}, "beta": {"version": "==1.0"}}}'
    )
    settings.check_sources("pipenv", INDEX, str(tmp_path))


# --- which projects uv reads: the gate finds the workspace as real uv does -------------------

APP, EX = MEMBER.format(name="app", deps="[]"), MEMBER.format(name="ex", deps="[]")
WORKSPACE_OF = '[tool.uv.workspace]\nmembers = ["{0}"]\n'.format
PDM_WORKSPACE_OF = '[tool.pdm.workspace]\nmembers = ["{0}"]\n'.format
# uv's exclude `*` matches a `/`: `m/a*` leaves out m/a/ex, `**/ey` m/b/ey; m/b/ez is the member left
EXCLUDED_ACROSS = {
    "pyproject.toml": APP + WORKSPACE_OF("m/*/*") + 'exclude = ["m/a*", "**/ey"]\n',
    "m/a/ex/pyproject.toml": EX,
    "m/b/ey/pyproject.toml": MEMBER.format(name="ey", deps="[]"),
    "m/b/ez/pyproject.toml": MEMBER.format(name="ez", deps="[]"),
}
# (files, the folder uv runs in): each a layout where uv's project or workspace is not the working folder's
LAYOUTS = {
    "a folder below the project": ({"pyproject.toml": APP}, "src/deep"),
    "the nearest pyproject.toml, whatever it declares": (
        {"pyproject.toml": APP, "src/pyproject.toml": "[tool.black]\n"},
        "src/deep",
    ),
    "a folder whose pyproject.toml is a folder": ({"pyproject.toml": APP, "src/pyproject.toml/x": ""}, "src"),
    "a project inside another project": ({"pyproject.toml": APP, "ex/pyproject.toml": EX}, "ex"),
    "a member, from a folder inside it": (
        {
            "pyproject.toml": APP + WORKSPACE_OF("m/*"),
            "m/ex/pyproject.toml": EX,
            "m/ex2/pyproject.toml": MEMBER.format(name="ex2", deps="[]"),
            "m/.hidden/pyproject.toml": MEMBER.format(name="hidden", deps="[]"),
        },
        "m/ex/src",
    ),
    "a project the members do not include": (
        {"pyproject.toml": APP + WORKSPACE_OF("m/*"), "ex/pyproject.toml": EX},
        "ex",
    ),
    "a project the workspace excludes": (
        {
            "pyproject.toml": APP + WORKSPACE_OF("m/*") + 'exclude = ["m/e*"]\n',
            "m/ex/pyproject.toml": EX,
            "m/lib/pyproject.toml": MEMBER.format(name="lib", deps="[]"),
        },
        "m/ex",
    ),
    "a project excluded by a pattern across folders (uv's exclude * matches a /)": (EXCLUDED_ACROSS, "m/a/ex"),
    "a member excluded by a pattern across folders": (EXCLUDED_ACROSS, ""),
    "a project deeper than the members pattern (its * stays within a folder)": (
        {"pyproject.toml": APP + WORKSPACE_OF("m/*"), "m/a/ex/pyproject.toml": EX},
        "m/a/ex",
    ),
    "a project a members ? would match across a /": (
        {"pyproject.toml": APP + WORKSPACE_OF("m?ex"), "m/ex/pyproject.toml": EX},
        "m/ex",
    ),
    "a project matched by ** as no folder": (
        {"pyproject.toml": APP + WORKSPACE_OF("**/ex"), "ex/pyproject.toml": EX},
        "ex",
    ),
    "a pyproject.toml between the member and the root": (
        {
            "pyproject.toml": APP + WORKSPACE_OF("m/*/x"),
            "m/a/pyproject.toml": "[tool.black]\n",
            "m/a/x/pyproject.toml": EX,
        },
        "m/a/x",
    ),
    "a workspace root without a project": (
        {"pyproject.toml": WORKSPACE_OF("m/*"), "m/ex/pyproject.toml": EX},
        "m/ex",
    ),
}


@pytest.fixture
def uv_lock_in(tmp_path):
    """Real uv's `uv lock` (offline: nothing to fetch) run in a folder: (the folder it wrote
    uv.lock in, the names of the workspace's projects it locked)."""
    found = shutil.which("uv", path=str(Path(sys.executable).parent))
    require("uv", found is not None, "pip install -e '.[dev]'")

    def lock(cwd: Path) -> tuple[str, set]:
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "UV_OFFLINE": "1", "UV_NO_CONFIG": "1"}
        env.update(UV_CACHE_DIR=str(tmp_path / "uv-cache"), UV_PYTHON=sys.executable, UV_PYTHON_DOWNLOADS="never")
        done = subprocess.run([found, "lock"], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        (written,) = [str(p.parent) for p in (tmp_path / "tree").rglob("uv.lock")]
        names = {p["name"] for p in projects.toml(os.path.join(written, "uv.lock")).get("package", ())}
        return written, names

    return lock


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_gate_reads_the_workspace_real_uv_locks_from_the_working_folder(tmp_path, uv_lock_in, layout):
    files, cwd = LAYOUTS[layout]
    for path, text in files.items():
        (tmp_path / "tree" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tree" / path).write_text(text)
    (tmp_path / "tree" / cwd).mkdir(parents=True, exist_ok=True)
    root, found = projects.uv_workspace(str(tmp_path / "tree" / cwd))
    names = {d["project"]["name"] for d in found.values() if "project" in d}
    assert (root, names) == uv_lock_in(tmp_path / "tree" / cwd)


def test_a_url_requirement_of_a_workspace_member_is_judged_and_a_member_named_by_the_root_is_not(tmp_path):
    uv_workspace(tmp_path, {"packages/lib": MEMBER.format(name="lib", deps=f'["beta @ {EVIL}"]')})
    (tmp_path / "pyproject.toml").write_text(
        MEMBER.format(name="app", deps='["alpha", "Lib>=0", "lib @ file:///elsewhere"]') + WORKSPACE_OF("packages/*")
    )
    found = projects.project_requirements("uv", str(tmp_path / "packages"))
    assert found == ["alpha", "lib @ file:///elsewhere", f"beta @ {EVIL}"]


MAX_MEMBERS = projects.MAX_MEMBERS


@pytest.mark.parametrize(
    ("kind", "tree"),
    [
        ("uv", {"pyproject.toml": PROJECT + WORKSPACE_OF("m/*"), **{f"m/{n}/x": "" for n in range(MAX_MEMBERS + 1)}}),
        (
            "pdm",
            {"pyproject.toml": PROJECT + PDM_WORKSPACE_OF("m/*"), **{f"m/{n}/x": "" for n in range(MAX_MEMBERS + 1)}},
        ),
        ("uv", {"pyproject.toml": PROJECT + "#" * projects.MAX_PYPROJECT_BYTES}),
    ],
    ids=["too many uv members", "too many pdm members", "too large a pyproject.toml"],
)
def test_a_workspace_past_the_bounds_is_refused(tmp_path, kind, tree):
    for path, text in tree.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    with pytest.raises(CannotVerify, match="more than|larger than"):
        projects.project_requirements(kind, str(tmp_path))


# --- which project pdm, pipenv and poetry read: the gate finds it as each real client does ------

PIPFILE = "[packages]\n"
DEEP = "/".join(str(n) for n in range(1, 10))  # nine folders: pipenv looks at the working one and 9 above
# (files, the folder the client runs in); a file "-> TARGET" is a link to TARGET
CLIENT_LAYOUTS = {
    "pipenv": {
        "a folder below the project": ({"Pipfile": PIPFILE}, "src/deep"),
        "nine folders below": ({"Pipfile": PIPFILE}, DEEP),
        "ten folders below (past pipenv's depth: none found)": ({"Pipfile": PIPFILE}, DEEP + "/10"),
        "a folder named Pipfile": ({"Pipfile": PIPFILE, "src/Pipfile/x": ""}, "src"),
        "a link to a Pipfile (its folder is the project's)": (
            {"other/Pipfile": PIPFILE, "src/Pipfile": "-> ../other/Pipfile"},
            "src",
        ),
        "a pyproject.toml nearer than the Pipfile": ({"Pipfile": PIPFILE, "src/pyproject.toml": APP}, "src"),
    },
    "poetry": {
        "a folder below the project": ({"pyproject.toml": APP}, "src/deep"),
        "a project inside another project": ({"pyproject.toml": APP, "ex/pyproject.toml": EX}, "ex/src"),
        "a link to a pyproject.toml": (
            {"other/pyproject.toml": EX, "pyproject.toml": APP, "src/pyproject.toml": "-> ../other/pyproject.toml"},
            "src/deep",
        ),
    },
    "pdm": {
        "a folder below the project": ({"pyproject.toml": APP}, "src/deep"),
        "the nearest pyproject.toml, whatever it declares": (
            {"pyproject.toml": APP, "src/pyproject.toml": "[tool.black]\n"},
            "src/deep",
        ),
        "a member, from a folder inside it": (
            {
                "pyproject.toml": APP + PDM_WORKSPACE_OF("packages/*"),
                "packages/lib/pyproject.toml": MEMBER.format(name="lib", deps="[]"),
                "packages/.hidden/pyproject.toml": MEMBER.format(name="hidden", deps="[]"),
                "packages/empty/x": "",  # no pyproject.toml: no member
            },
            "packages/lib/src",
        ),
        "a project the members do not include": (
            {"pyproject.toml": APP + PDM_WORKSPACE_OF("packages/*"), "ex/pyproject.toml": EX},
            "ex",
        ),
        "a workspace above a project between (pdm looks at every folder up)": (
            {
                "pyproject.toml": APP + PDM_WORKSPACE_OF("a/b"),
                "a/pyproject.toml": "[tool.black]\n",
                "a/b/pyproject.toml": EX,
            },
            "a/b",
        ),
        "a member through a link": (
            {"pyproject.toml": APP + PDM_WORKSPACE_OF("linked"), "real/pyproject.toml": EX, "linked": "-> real"},
            "real",
        ),
        "a recursive glob (the root is a member of itself)": (
            {"pyproject.toml": APP + PDM_WORKSPACE_OF("**"), "a/b/pyproject.toml": EX},
            "",
        ),
    },
}

PDM_FINDS = """import os
from pdm.core import Core
project = Core().create_project(None, global_config=os.environ["PDM_CONFIG_FILE"])  # as `pdm CMD` does
root = project.workspace_project or project
print(project.root, root.root, *sorted(str(m) for m in root.iter_members()), sep="\\n")
"""


@pytest.fixture
def client_finds(tmp_path):
    """What the real client finds from a folder: pipenv's `--where`, poetry's `version` (the
    project's name), pdm's project, workspace root and members (its own code, as its commands
    call it): each with the gate's settings, none of its variables set."""

    def finds(kind: str, cwd: Path) -> list[str]:
        program = tool_bin(kind) / kind
        (tmp_path / "pdm.toml").touch()
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PDM_CONFIG_FILE": str(tmp_path / "pdm.toml")}
        env["COLUMNS"] = "4000"  # pipenv's console would wrap a long path
        if kind == "pdm":  # pdm's own interpreter, beside its command
            python = program.resolve().parent / "python"
            command = [str(python), "-c", PDM_FINDS]
        else:
            command = [str(program), "--where" if kind == "pipenv" else "version"]
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
        if kind == "pipenv" and "No Pipfile present" in done.stderr:
            return [str(cwd)]  # pipenv's project is the working folder (`install` writes a Pipfile there)
        assert done.returncode == 0, done.stderr
        return done.stdout.split() if kind == "poetry" else done.stdout.splitlines()

    return finds


def tree_of(root: Path, files: dict, cwd: str) -> Path:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        if text.startswith("-> "):
            (root / path).symlink_to(text[3:])
        else:
            (root / path).write_text(text)
    (root / cwd).mkdir(parents=True, exist_ok=True)
    return root / cwd


@pytest.mark.parametrize(("kind", "layout"), [(k, name) for k, layouts in CLIENT_LAYOUTS.items() for name in layouts])
def test_the_gate_reads_the_project_the_real_client_finds_from_the_working_folder(tmp_path, client_finds, kind, layout):
    cwd = tree_of(tmp_path / "tree", *CLIENT_LAYOUTS[kind][layout])
    folder = projects.project_folder(kind, str(cwd))
    if kind == "pdm":
        root, found = projects.pdm_workspace(str(cwd))
        members = sorted(projects._pdm_members(root, found[root]))
        assert [folder, root, *members] == client_finds(kind, cwd)
    elif kind == "poetry":
        assert [projects.pyproject(folder)["project"]["name"], "0"] == client_finds(kind, cwd)
    else:
        assert [folder] == client_finds(kind, cwd)
