"""Python project installs through the gate, with real clients: requirement files (nested),
`pip download`, a local project, `uv pip sync`, `uv sync|lock|add`, and a `.pth` file that tries
to redirect pip. pypiserver stands behind the service's index; a second fixture index on another
port stands for public PyPI, and its request log must stay empty during every gated install.

The tree: alpha depends on beta.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest

from tests.support.fixture_server import FileHost
from tests.support.gate import Gate, sandbox_env
from tests.support.index_fixtures import set_policy
from tests.support.index_live import sqlite_store  # noqa: F401 - fixture database_url: SQLite only
from tests.support.python_gate import (  # noqa: F401 - fixtures live_env, public, project
    index_decisions,
    project_folder,
    public_index,
    pypiserver_behind_the_index,
)
from tests.support.target_env import TargetEnv
from tests.support.third_party import require

PYPROJECT = '[project]\nname = "app"\nversion = "0"\nrequires-python = ">=3.8"\ndependencies = {deps}\n'


@pytest.fixture
def target(tmp_path) -> TargetEnv:
    return TargetEnv(tmp_path / "venv")


@pytest.fixture
def uv_bin() -> str:
    found = shutil.which("uv", path=str(Path(sys.executable).parent))
    require("uv", found is not None, "pip install -e '.[dev]'")
    return found


@pytest.fixture
def gate(tmp_path, target, uv_bin):
    folder = tmp_path / "tools"
    folder.mkdir()
    (folder / "uv").symlink_to(uv_bin)
    return Gate(tmp_path, installer_path=f"{target.bin}:{folder}:/usr/bin:/bin")


@pytest.fixture
def env(live, tmp_path) -> dict:
    home = tmp_path / "home"
    home.mkdir()
    venv = tmp_path / "venv"
    return sandbox_env(
        live,
        home,
        VIRTUAL_ENV=str(venv),
        PATH=f"{venv / 'bin'}:/usr/bin:/bin",
        UV_CACHE_DIR=str(tmp_path / "uv-cache"),
        UV_PYTHON=sys.executable,
    )


def installed_by_uv(project: Path) -> set:
    site = next((project / ".venv" / "lib").glob("python*/site-packages"))
    return {p.name.split("-")[0].lower() for p in site.glob("*.dist-info")}


# --- pip: requirement files, download, local projects, .pth --------------------------------


def test_a_nested_requirement_file_installs_its_tree_through_the_index(gate, env, app, target, project):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    (project / "base.txt").write_text("alpha  # the app\n")
    (project / "requirements.txt").write_text("-r base.txt\n")
    done = gate("--", "pip", "install", "-r", "requirements.txt", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert {"alpha", "beta"} <= target.installed()
    assert {("alpha", True), ("beta", True)} <= index_decisions(app)


@pytest.mark.parametrize("line", ["--extra-index-url {url}/simple/", "-i {url}/simple/", "-f {url}/files/"])
def test_an_index_named_in_a_nested_requirement_file_is_refused_before_running(
    gate, env, app, target, project, public, line
):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    (project / "more.txt").write_text(line.format(url=public.url) + "\nalpha\n")
    (project / "requirements.txt").write_text("-r more.txt\n")
    done = gate("--", "pip", "install", "-r", "requirements.txt", env=env, cwd=project)
    assert done.returncode == 2, done.stderr  # only an option was refused: no package to ask for
    assert "runcode-policy-gate: denied:" in done.stderr and "not running" in done.stderr
    assert public.requests == [] and "alpha" not in target.installed()


REQUIREMENT_TRICKS = {
    # pip reads an option line with shlex: this names inner.txt, not a file called 'inner.txt'
    "a quoted file name": {
        "requirements.txt": "-r 'inner.txt'\n",
        "'inner.txt'": "alpha\n",
        "inner.txt": "--index-url {url}/simple/\nalpha\n",
    },
    # the kernel resolves link/.. through the link, where normpath would drop both
    "a link and ..": {"requirements.txt": "-r link/../req.txt\n", "req.txt": "alpha\n"},
}


@pytest.mark.parametrize("trick", REQUIREMENT_TRICKS)
def test_a_requirement_file_is_read_as_pip_reads_it_so_its_index_is_seen(
    gate, env, app, target, project, public, trick
):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    for name, text in REQUIREMENT_TRICKS[trick].items():
        (project / name).write_text(text.format(url=public.url))
    if trick == "a link and ..":
        (project / "elsewhere" / "deep").mkdir(parents=True)
        (project / "elsewhere" / "req.txt").write_text(f"--index-url {public.url}/simple/\nalpha\n")
        (project / "link").symlink_to(project / "elsewhere" / "deep")
    done = gate("--", "pip", "install", "-r", "requirements.txt", env=env, cwd=project)
    assert done.returncode == 2, done.stdout + done.stderr  # the file's index option, refused
    assert "runcode-policy-gate: denied:" in done.stderr and public.requests == []
    assert "alpha" not in target.installed()


# Files that pip and uv read differently: each smuggles beta from the "public" host past one of them.
DISAGREEING_FILES = {
    # pip joins the comment's next line to it; uv ends the comment at the newline
    "a comment's backslash": ("alpha #\\\nbeta @ {wheel}\n", "line 1 ends a comment with a backslash"),
    "a comment line's backslash": ("# mirror \\\n--index-url {url}/simple/\nalpha\n", "line 1 ends a comment"),
    # pip's splitlines breaks a line at U+2028 (and \x0c, \x85, ...); uv does not
    "a line separator": ("alpha\u2028--index-url {url}/simple/\n", "line 1 holds the line separator '\\u2028'"),
    "a form feed": ("alpha\n# x\x0cbeta @ {wheel}\n", "line 2 holds the line separator '\\x0c'"),
    # pip decodes by a coding line: in UTF-7, +AAo- is a line feed
    "a coding line": ("# -*- coding: utf-7 -*-\nalpha +AAo-beta @ {wheel}\n", "line 1 declares the encoding 'utf-7'"),
}


@pytest.mark.parametrize("client", [["pip", "install", "-r"], ["uv", "pip", "install", "-r"], ["uv", "pip", "sync"]])
@pytest.mark.parametrize("trick", DISAGREEING_FILES)
def test_a_requirement_file_that_pip_and_uv_read_differently_is_refused_naming_the_line(
    gate, env, app, target, project, public, trick, client
):
    set_policy(app, "allowlist", python=["alpha"])
    text, said = DISAGREEING_FILES[trick]
    wheel = public.file_url(public.file("beta-1.0-py3-none-any.whl"))
    (project / "requirements.txt").write_text(text.format(url=public.url, wheel=wheel), encoding="utf-8")
    done = gate("--", *client, "requirements.txt", env=env, cwd=project)
    assert done.returncode == 4, done.stdout + done.stderr
    assert f"requirements.txt {said}" in done.stderr, done.stderr
    assert public.requests == [] and not {"alpha", "beta"} & target.installed()


@pytest.mark.parametrize("client", [["pip", "install", "-r"], ["uv", "pip", "install", "-r"]])
@pytest.mark.parametrize("bom", ["utf-8-sig", "utf-16"])
def test_a_requirement_file_with_a_bom_is_read_as_pip_decodes_it(gate, env, app, target, project, client, bom):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    (project / "requirements.txt").write_text("alpha\n", encoding=bom)
    done = gate("--", *client, "requirements.txt", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert {"alpha", "beta"} <= target.installed()


@pytest.mark.parametrize(
    "spelling", ["-r {url}", "--requirement={url}", "-c {url}", "--constraint {url}", "nested: -r {url}"]
)
def test_a_requirement_file_given_as_a_url_is_refused_give_a_local_path(
    gate, env, app, target, project, public, tmp_path, spelling
):
    """pip opens `file:///abs/x.txt` itself; the gate read `./file:/abs/x.txt`, a harmless decoy."""
    set_policy(app, "allowlist", python=["alpha"])
    evil = tmp_path / "evil.txt"
    evil.write_text(f"--index-url {public.url}/simple/\nalpha\n")
    decoy = project / f"file:{evil}"
    decoy.parent.mkdir(parents=True)
    decoy.write_text("alpha\n")
    option = spelling.removeprefix("nested: ").format(url=f"file://{evil}")
    if spelling.startswith("nested: "):
        (project / "requirements.txt").write_text(option + "\n")
        option = "-r requirements.txt"
    done = gate("--", "pip", "install", *option.replace("=", " ", 1).split(" ", 1), env=env, cwd=project)
    assert done.returncode == 4 and "is a URL, which pip would fetch or open itself: give a local path" in done.stderr
    assert public.requests == [] and "alpha" not in target.installed()


SCRIPT = '# /// script\n# dependencies = ["beta @ {wheel}"]\n# ///\nprint("hi")\n'
PYLOCK = (
    'lock-version = "1.0"\ncreated-by = "uv"\n[[packages]]\nname = "beta"\nversion = "1.0"\n'
    '[[packages.wheels]]\nurl = "{wheel}"\nhashes = {{ sha256 = "{sha}" }}\n'
)


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("script.py", SCRIPT, "is a Python script, whose inline metadata (PEP 723) uv installs"),
        ("pylock.toml", PYLOCK, "is a PEP 751 lock, whose file URLs uv installs as written, asking no index"),
    ],
    ids=["pep-723-script", "pylock"],
)
def test_uv_pip_install_of_a_script_or_a_pylock_is_refused_with_what_to_do(
    gate, env, app, target, project, public, name, text, said
):
    set_policy(app, "allowlist", python=["alpha", "beta"])  # even allowed names: the lock's URLs are not the index
    beta = public.file("beta-1.0-py3-none-any.whl")
    (project / name).write_text(text.format(wheel=public.file_url(beta), sha=beta.sha256))
    done = gate("--", "uv", "pip", "install", "-r", name, env=env, cwd=project)
    assert done.returncode == 4 and f"the requirement file {name!r} {said}" in done.stderr, done.stderr
    assert public.requests == [] and "beta" not in target.installed()


def test_a_variable_in_a_requirement_file_is_refused(gate, env, app, target, project):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    (project / "requirements.txt").write_text("alpha\n--extra-index-url ${MIRROR}\n")
    done = gate("--", "pip", "install", "-r", "requirements.txt", env=env, cwd=project)
    assert done.returncode == 4 and "uses an environment variable" in done.stderr, done.stderr
    assert "alpha" not in target.installed()


def test_a_requirement_file_with_a_denied_dependency_fails_with_the_denial_printed(gate, env, app, target, project):
    set_policy(app, "allowlist", python=["alpha"])
    (project / "requirements.txt").write_text("alpha\n")
    done = gate("--", "pip", "install", "-r", "requirements.txt", env=env, cwd=project)
    assert done.returncode == 3, done.stderr  # the run recorded a denial: 3, whatever pip's status
    assert "denied: beta (python) \u2014 not-on-the-allow-list" in done.stderr
    assert not {"alpha", "beta"} & target.installed()  # not alpha 1.0, nor 0.9 (refused after the denial)


def test_pip_download_fetches_through_the_index(gate, env, app, project):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    done = gate("--", "pip", "download", "-d", "wheels", "alpha", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name.split("-")[0] for p in (project / "wheels").iterdir()) == ["alpha", "beta"]
    assert {("alpha", True), ("beta", True)} <= index_decisions(app)


def test_a_local_project_with_a_url_requirement_is_refused_before_running(gate, env, app, target, project, public):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    (project / "pyproject.toml").write_text(PYPROJECT.format(deps=f'["beta @ {public.url}/files/beta.whl"]'))
    done = gate("--", "pip", "install", ".", env=env, cwd=project)
    assert done.returncode == 3 and "denied:" in done.stderr, done.stderr
    assert public.requests == [] and "beta" not in target.installed()


BACKEND = '''"""A build backend inside the project (backend-path), so building it fetches nothing."""
import base64, hashlib, os, zipfile
META = "Metadata-Version: 2.1\\nName: app\\nVersion: 0\\nRequires-Dist: alpha\\n"
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = "app-0-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as wheel:
        wheel.writestr("app.py", "")
        wheel.writestr("app-0.dist-info/METADATA", META)
        wheel.writestr("app-0.dist-info/WHEEL", "Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
        wheel.writestr("app-0.dist-info/RECORD", "")
    return name
'''


def test_a_local_project_installs_with_its_dependencies_judged_by_the_index(gate, env, app, target, project):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    (project / "backend.py").write_text(BACKEND)
    (project / "pyproject.toml").write_text(
        PYPROJECT.format(deps='["alpha"]')
        + '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
    )
    done = gate("--", "pip", "install", ".", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert {"app", "alpha", "beta"} <= target.installed()
    assert {("alpha", True), ("beta", True)} <= index_decisions(app)


def test_a_pth_file_that_redirects_pip_after_the_scrub_does_not_run(gate, env, app, target, project, public, tmp_path):
    set_policy(app, "allowlist", python=["alpha"])
    marker = tmp_path / "pth-ran"
    (target.site / "redirect.pth").write_text(
        f"import os, pathlib; pathlib.Path({str(marker)!r}).touch(); "
        f"os.environ['PIP_INDEX_URL'] = os.environ['PIP_EXTRA_INDEX_URL'] = {public.url + '/simple/'!r}\n"
    )
    done = gate("--", "pip", "install", "alpha", env=env, cwd=project)
    assert not marker.exists() and public.requests == [], done.stderr
    assert done.returncode != 0 and "denied: beta (python)" in done.stderr, done.stderr
    assert "beta" not in target.installed()


# --- uv ------------------------------------------------------------------------------------


def test_uv_pip_sync_installs_a_requirement_file_through_the_index(gate, env, app, target, project):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    (project / "requirements.txt").write_text("alpha==1.0\nbeta==1.0\n")
    done = gate("--", "uv", "pip", "sync", "requirements.txt", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert {"alpha", "beta"} <= target.installed()


def test_uv_pip_install_r_refuses_an_extra_index_in_the_file(gate, env, app, target, project, public):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    (project / "requirements.txt").write_text(f"--extra-index-url {public.url}/simple/\nalpha\n")
    done = gate("--", "uv", "pip", "install", "-r", "requirements.txt", env=env, cwd=project)
    assert done.returncode == 2 and "denied:" in done.stderr, done.stderr  # only an option refused
    assert public.requests == []


# After a requirement, pip applies --hash (and --config-settings) and ignores other options and
# words; uv applies them all. Each line smuggled beta in from the "public" host.
AFTER_A_REQUIREMENT = {
    "an index": "alpha --hash=sha256:00 --extra-index-url {url}/simple/",  # uv installed beta from there (exit 0)
    "find-links": "alpha --hash=sha256:00 --find-links {url}/simple/beta/",
    "a second requirement": "alpha --hash=sha256:00 {wheel}",
    # the gate read empty.txt in the line's place, and pip installed the wheel the line names
    "a nested file": "{wheel} -r empty.txt",
    # uv ends a hash at the first blank, pip's shlex reads on: a hash to pip, an index to uv
    "an escaped blank": "alpha --hash=sha256:00 --hash=sha256:0\\ --extra-index-url={url}/simple/",
    "a quoted blank": 'alpha --hash=sha256:00 --hash="sha256:0 --extra-index-url={url}/simple/#"',
    "a continuation": "alpha --hash=sha256:00 --hash=sha256:00\\\n--extra-index-url={url}/simple/",
}


@pytest.mark.parametrize("client", [["pip", "install", "-r"], ["uv", "pip", "install", "-r"]])
@pytest.mark.parametrize("line", AFTER_A_REQUIREMENT)
def test_an_option_after_a_requirement_is_refused_for_every_client(
    gate, env, app, target, project, public, line, client
):
    set_policy(app, "allowlist", python=["alpha"])
    wheel = public.file_url(public.file("beta-1.0-py3-none-any.whl"))
    (project / "empty.txt").write_text("")
    (project / "requirements.txt").write_text(AFTER_A_REQUIREMENT[line].format(url=public.url, wheel=wheel) + "\n")
    done = gate("--", *client, "requirements.txt", env=env, cwd=project)
    assert done.returncode == 2, done.stdout + done.stderr  # only an option was refused
    assert "only --hash=ALGORITHM:HEX may follow a requirement" in done.stderr, done.stderr
    assert public.requests == [] and not {"alpha", "beta"} & target.installed()


# Files uv reads otherwise than pip: the name up to a `#`; `-` as standard input.
NESTED_UNCLEAR = {
    "a name with #": ("-r inner.txt#x", "where pip and uv end"),
    "standard input": ("-r -", "standard input"),
}


@pytest.mark.parametrize("line", NESTED_UNCLEAR)
def test_a_nested_file_uv_would_read_otherwise_is_refused(gate, env, app, target, project, public, line):
    set_policy(app, "allowlist", python=["alpha"])
    (project / "inner.txt#x").write_text("alpha\n")
    (project / "-").write_text("alpha\n")
    (project / "inner.txt").write_text(f"--extra-index-url={public.url}/simple/\nalpha\n")
    (project / "requirements.txt").write_text(NESTED_UNCLEAR[line][0] + "\n")
    done = gate("--", "uv", "pip", "install", "-r", "requirements.txt", env=env, cwd=project)
    assert done.returncode == 4 and NESTED_UNCLEAR[line][1] in done.stderr, done.stdout + done.stderr
    assert public.requests == [] and not {"alpha", "beta"} & target.installed()


def test_uv_pip_install_r_pyproject_ignores_its_uv_sources(gate, env, app, target, project, public):
    """`[tool.uv.sources]` may name a URL: uv pip reads it from `-r pyproject.toml` unless told not to."""
    set_policy(app, "allowlist", python=["alpha", "beta"])
    wheel = public.file_url(public.file("alpha-1.0-py3-none-any.whl"))
    sources = f'[tool.uv.sources]\nalpha = {{ url = "{wheel}" }}\n'
    (project / "pyproject.toml").write_text(PYPROJECT.format(deps='["alpha"]') + sources)
    done = gate("--", "uv", "pip", "install", "-r", "pyproject.toml", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert public.requests == [] and {"alpha", "beta"} <= target.installed()
    assert {("alpha", True), ("beta", True)} <= index_decisions(app)


def public_lock(project: Path, public, uv_bin: str, env: dict) -> None:
    """uv.lock made by real uv against the "public" index, as an agent would bring it."""
    made = subprocess.run(
        [uv_bin, "lock", "--default-index", f"{public.url}/simple/"],
        cwd=project,
        env={**env, "NO_PROXY": "127.0.0.1", "HTTP_PROXY": "", "HTTPS_PROXY": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    assert f'registry = "{public.url}/simple/"' in (project / "uv.lock").read_text()
    public.requests.clear()


def test_uv_sync_re_resolves_a_lock_made_against_another_index_through_the_index(
    gate, env, app, project, public, uv_bin
):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    (project / "pyproject.toml").write_text(PYPROJECT.format(deps='["alpha"]'))
    public_lock(project, public, uv_bin, env)
    done = gate("--", "uv", "sync", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert public.requests == []  # nothing fetched from the lock's own index
    assert {"alpha", "beta"} <= installed_by_uv(project)
    assert {("alpha", True), ("beta", True)} <= index_decisions(app)
    assert public.url not in (project / "uv.lock").read_text()


def lock_with_beta_moved(gate, env, app, project: Path, public) -> None:
    """A uv.lock made through the index, then beta (a transitive package) moved to the "public"
    index, registry and wheel URL both; beta is then denied."""
    set_policy(app, "allowlist", python=["alpha", "beta"])
    (project / "pyproject.toml").write_text(PYPROJECT.format(deps='["alpha"]'))
    assert gate("--", "uv", "lock", env=env, cwd=project).returncode == 0
    set_policy(app, "allowlist", python=["alpha"])
    blocks = (project / "uv.lock").read_text().split("[[package]]")
    moved = next(i for i, b in enumerate(blocks) if b.lstrip().startswith('name = "beta"'))
    file = public.file("beta-1.0-py3-none-any.whl")
    wheel, digest = public.file_url(file), hashlib.sha256(file.data).hexdigest()
    lines = blocks[moved].split("\n")
    lines = [f'source = {{ registry = "{public.url}/simple/" }}' if x.startswith("source =") else x for x in lines]
    lines = [f'    {{ url = "{wheel}", hash = "sha256:{digest}" }},' if "beta-1.0-py3" in x else x for x in lines]
    blocks[moved] = "\n".join(lines)
    (project / "uv.lock").write_text("[[package]]".join(blocks))


@pytest.mark.parametrize("below", ["", "src/deep"], ids=["in the project", "in a folder below it"])
def test_a_uv_lock_with_a_package_from_another_index_beside_this_one_is_refused(gate, env, app, project, public, below):
    """uv checks only the project's own requirements against the index it is given: a lock made
    through the index, with one transitive package moved to another index, installed it from
    there, unjudged. uv finds the project (and its uv.lock) from any folder below it."""
    lock_with_beta_moved(gate, env, app, project, public)
    (project / below).mkdir(parents=True, exist_ok=True)
    done = gate("--", "uv", "sync", env=env, cwd=project / below)
    assert done.returncode == 4 and public.requests == [], done.stderr
    assert f"uv.lock installs beta from a another index's ({public.url}/simple/) source" in done.stderr
    assert not (project / ".venv").exists() and index_decisions(app) <= {("alpha", True), ("beta", True)}


MARKING_BACKEND = """# A build backend inside the sdist: building it leaves a mark, as any code could.
import pathlib
pathlib.Path({marker!r}).touch()
META = "Metadata-Version: 2.1\\nName: evil-pkg\\nVersion: 1.0\\n"
def prepare_metadata_for_build_wheel(directory, config_settings=None):
    info = pathlib.Path(directory) / "evil_pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(META)
    return info.name
def build_wheel(directory, config_settings=None, metadata_directory=None):
    import zipfile
    name = "evil_pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(pathlib.Path(directory) / name, "w") as wheel:
        wheel.writestr("evil_pkg-1.0.dist-info/METADATA", META)
        tags = "Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
        wheel.writestr("evil_pkg-1.0.dist-info/WHEEL", tags)
        wheel.writestr("evil_pkg-1.0.dist-info/RECORD", "")
    return name
"""


@pytest.fixture
def url_host(tmp_path):
    """A plain file host (not an index) holding an sdist whose in-tree build backend leaves
    `marker` when it runs: what a URL requirement fetches and builds past the index."""
    marker = tmp_path / "backend-ran"
    project = '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
    members = {
        "evil_pkg-1.0/PKG-INFO": "Metadata-Version: 2.1\nName: evil-pkg\nVersion: 1.0\n",
        "evil_pkg-1.0/pyproject.toml": project,
        "evil_pkg-1.0/backend.py": MARKING_BACKEND.format(marker=str(marker)),
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(path)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    host = FileHost({"/evil_pkg-1.0.tar.gz": buffer.getvalue()})
    host.sdist, host.marker = f"evil-pkg @ {host.url}/evil_pkg-1.0.tar.gz", marker
    yield host
    host.close()


@pytest.mark.parametrize("verb", ["sync", "lock"])
def test_a_url_requirement_of_the_project_above_the_working_folder_is_refused(gate, env, app, project, url_host, verb):
    """uv finds the project from any folder below it: run from `src/`, the root's URL
    requirement was fetched and its sdist's backend ran, judged by no one."""
    set_policy(app, "allowlist", python=["alpha", "beta"])
    (project / "pyproject.toml").write_text(PYPROJECT.format(deps=f'["alpha", "{url_host.sdist}"]'))
    (project / "src").mkdir()
    done = gate("--", "uv", verb, env=env, cwd=project / "src")
    assert done.returncode == 3 and "denied: 'evil-pkg @ http://" in done.stderr, done.stderr
    assert url_host.requests == [] and not url_host.marker.exists()
    assert not (project / "uv.lock").exists() and not (project / ".venv").exists()


@pytest.mark.parametrize("option", [["--project", ".."], ["--directory=.."]])
def test_an_option_that_moves_where_uv_finds_the_project_is_refused(gate, env, app, project, url_host, option):
    """The gate finds the project from the working folder, as uv does without these (the gate
    clears UV_PROJECT and UV_WORKING_DIRECTORY from uv's environment)."""
    set_policy(app, "allowlist", python=["alpha", "beta"])
    (project / "pyproject.toml").write_text(PYPROJECT.format(deps=f'["{url_host.sdist}"]'))
    (project / "src").mkdir()
    (project / "src" / "pyproject.toml").write_text(PYPROJECT.format(deps='["alpha"]'))
    done = gate("--", "uv", "sync", *option, env=env, cwd=project / "src")
    assert done.returncode == 2 and f"does not pass {option[0].split('=')[0]!r} to uv" in done.stderr, done.stderr
    assert url_host.requests == [] and not url_host.marker.exists()


WORKSPACE = '[tool.uv.workspace]\nmembers = ["packages/*"]\nexclude = ["packages/legacy"]\n'
VIRTUAL = "[tool.uv]\npackage = false\n"  # nothing to build: its requirements are all uv installs


def test_a_url_requirement_of_a_workspace_member_is_refused(gate, env, app, project, url_host):
    """uv locks every member of a workspace with its root, wherever it is run from: a member's URL
    requirement was fetched and built from the root, its pyproject.toml never read."""
    set_policy(app, "allowlist", python=["alpha", "beta"])
    (project / "pyproject.toml").write_text(PYPROJECT.format(deps='["alpha"]') + WORKSPACE)
    member = project / "packages" / ".lib"  # uv's member glob matches a hidden folder too
    member.mkdir(parents=True)
    (member / "pyproject.toml").write_text(PYPROJECT.replace("app", "lib").format(deps=f'["beta", "{url_host.sdist}"]'))
    for cwd in (project, project / "packages"):
        done = gate("--", "uv", "sync", env=env, cwd=cwd)
        assert done.returncode == 3 and "denied: 'evil-pkg @ http://" in done.stderr, done.stderr
    assert url_host.requests == [] and not url_host.marker.exists()
    assert not (project / "uv.lock").exists() and not (project / ".venv").exists()


def test_an_allowed_workspace_installs_its_members_through_the_index(gate, env, app, project, url_host):
    """The root and its members are judged; uv resolves a member the root depends on as the
    workspace's own (not from the index), from the root or from inside the member. An excluded
    folder is no member: uv does not read it, nor does the gate."""
    set_policy(app, "allowlist", python=["alpha", "beta", "gamma"])
    sources = "[tool.uv.sources]\nlib = { workspace = true }\n"
    (project / "pyproject.toml").write_text(PYPROJECT.format(deps='["alpha", "lib"]') + sources + WORKSPACE)
    lib, legacy = project / "packages" / "lib", project / "packages" / "legacy"
    for folder in (lib, legacy):
        folder.mkdir(parents=True)
    (lib / "pyproject.toml").write_text(PYPROJECT.replace("app", "lib").format(deps='["gamma"]') + VIRTUAL)
    (legacy / "pyproject.toml").write_text(PYPROJECT.replace("app", "legacy").format(deps=f'["{url_host.sdist}"]'))
    done = gate("--", "uv", "sync", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert {"alpha", "beta", "gamma"} <= installed_by_uv(project)  # gamma: the member's requirement
    assert {("alpha", True), ("beta", True), ("gamma", True)} <= index_decisions(app)
    assert "lib" not in {name for name, _ in index_decisions(app)}  # the workspace's own, not fetched
    done = gate("--", "uv", "lock", "--upgrade", env=env, cwd=lib)
    assert done.returncode == 0, done.stderr
    assert not (lib / "uv.lock").exists() and 'virtual = "packages/lib"' in (project / "uv.lock").read_text()
    assert url_host.requests == []


def test_uv_sync_with_a_denied_dependency_fails_with_the_denial_printed(gate, env, app, project, public, uv_bin):
    set_policy(app, "allowlist", python=["alpha"])
    (project / "pyproject.toml").write_text(PYPROJECT.format(deps='["alpha"]'))
    public_lock(project, public, uv_bin, env)
    done = gate("--", "uv", "sync", env=env, cwd=project)
    assert done.returncode == 3, done.stderr  # the run recorded a denial: 3, whatever uv's status
    assert "denied: beta (python) \u2014 not-on-the-allow-list" in done.stderr
    assert public.requests == []
    assert not {"alpha", "beta"} & installed_by_uv(project)  # not alpha 1.0, nor 0.9


def test_uv_sync_frozen_is_refused_with_what_to_run_instead(gate, env, app, project, public, uv_bin):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    (project / "pyproject.toml").write_text(PYPROJECT.format(deps='["alpha"]'))
    public_lock(project, public, uv_bin, env)
    done = gate("--", "uv", "sync", "--frozen", env=env, cwd=project)
    assert done.returncode == 2 and "Run it without --frozen" in done.stderr, done.stderr
    assert public.requests == [] and not (project / ".venv").exists()


def test_uv_lock_and_uv_add_resolve_through_the_index(gate, env, app, project):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    (project / "pyproject.toml").write_text(PYPROJECT.format(deps="[]"))
    done = gate("--", "uv", "add", "alpha", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert {"alpha", "beta"} <= installed_by_uv(project)
    done = gate("--", "uv", "lock", "--upgrade", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert "/pypi/acme/simple" in (project / "uv.lock").read_text()


def test_uv_add_of_a_denied_name_is_refused_before_running(gate, env, app, project):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    (project / "pyproject.toml").write_text(PYPROJECT.format(deps="[]"))
    done = gate("--", "uv", "add", "gamma", env=env, cwd=project)
    assert done.returncode == 3 and "denied:" in done.stderr and "gamma" in done.stderr, done.stderr
    assert "gamma" not in (project / "pyproject.toml").read_text()


def test_a_uv_index_in_pyproject_is_not_used(gate, env, app, project, public):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    (project / "pyproject.toml").write_text(
        PYPROJECT.format(deps='["alpha"]') + f'[[tool.uv.index]]\nname = "pub"\nurl = "{public.url}/simple/"\n'
    )
    done = gate("--", "uv", "sync", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert public.requests == [] and {"alpha", "beta"} <= installed_by_uv(project)


@pytest.mark.parametrize("client", [["pip", "install", "-r"], ["uv", "pip", "install", "-r"]])
def test_a_requirement_file_that_is_a_pipe_is_refused_unread_by_the_installer(
    gate, env, app, target, project, public, client
):
    """A pipe written twice gave the gate `alpha` to judge and the installer an `--index-url` the
    gate never saw: anything but a regular file is refused, and a pipe nobody writes to does not
    hang the gate."""
    set_policy(app, "allowlist", python=["alpha", "beta"])
    fifo = project / "requirements.txt"
    os.mkfifo(fifo)
    writes = [b"alpha\n", f"--index-url {public.url}/simple/\nalpha\n".encode()]

    def writer():
        for text in writes:
            with contextlib.suppress(OSError), open(fifo, "wb") as handle:  # blocks until a reader opens
                handle.write(text)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        done = gate("--", *client, "requirements.txt", env=env, cwd=project)
    finally:
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # held open until the writer's last write ends
        thread.join(timeout=5)
        os.close(reader)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "not a regular file" in done.stderr, done.stderr
    assert public.requests == [] and "alpha" not in target.installed()
