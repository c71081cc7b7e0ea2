"""pip-compile, pdm, pipenv and poetry through the gate, for real (installed from the pins in
tests/support/python-tools/): an allowed tree locks or installs through the index; a denied
dependency fails with the gate's denial; an index a project names besides the service's is
refused before the client runs. pypiserver stands behind the index; a second fixture index
stands for public PyPI and must see no request.

The tree: alpha depends on beta.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.gate import Gate, sandbox_env
from tests.support.index_fixtures import set_policy
from tests.support.index_live import sqlite_store  # noqa: F401 - fixture database_url: SQLite only
from tests.support.python_gate import (  # noqa: F401 - fixtures live_env, public, project
    index_decisions,
    project_folder,
    public_index,
    pypiserver_behind_the_index,
)
from tests.support.python_tools import tool_bin

PYPROJECT = '[project]\nname = "app"\nversion = "0"\nrequires-python = ">=3.8"\ndependencies = ["alpha"]\n'
DENIAL = "denied: beta (python) \u2014 not-on-the-allow-list"


@pytest.fixture
def env(live, tmp_path) -> dict:
    home = tmp_path / "home"
    home.mkdir()
    return sandbox_env(live, home, PIPENV_VENV_IN_PROJECT="1", PIPENV_PYTHON=sys.executable)


def gate_for(tmp_path, tool: str) -> Gate:
    return Gate(tmp_path / f"gate-{tool}", installer_path=f"{tool_bin(tool)}:/usr/bin:/bin")


def written(path) -> str:
    """A lockfile's text, or "" when the client wrote none."""
    return path.read_text() if path.exists() else ""


def installed_in(project) -> set:
    """The distributions in the project's own environment (pipenv's, in the project)."""
    return {p.name.split("-")[0].lower() for p in project.glob(".venv/lib/python*/site-packages/*.dist-info")}


@pytest.mark.parametrize("allowed", [["alpha", "beta"], ["alpha"]], ids=["allowed", "beta-denied"])
def test_pip_compile_resolves_through_the_index(tmp_path, env, app, project, allowed):
    set_policy(app, "allowlist", python=allowed)
    (project / "requirements.in").write_text("alpha\n")
    done = gate_for(tmp_path, "pip-compile")("--", "pip-compile", "requirements.in", env=env, cwd=project)
    if allowed == ["alpha"]:
        # the run recorded a denial, so the gate exits 3 whatever the client did; no alpha is
        # locked (after the denial the index refuses the run alpha 0.9 too)
        assert done.returncode == 3 and DENIAL in done.stderr, done.stderr
        assert "alpha" not in written(project / "requirements.txt"), done.stderr
        return
    assert done.returncode == 0, done.stderr
    pinned = (project / "requirements.txt").read_text()
    assert "alpha==1.0" in pinned and "beta==1.0" in pinned and "run:" not in pinned
    assert {("alpha", True), ("beta", True)} <= index_decisions(app)


@pytest.mark.parametrize("allowed", [["alpha", "beta"], ["alpha"]], ids=["allowed", "beta-denied"])
def test_pdm_lock_resolves_through_the_index(tmp_path, env, app, project, allowed):
    set_policy(app, "allowlist", python=allowed)
    (project / "pyproject.toml").write_text(PYPROJECT)
    done = gate_for(tmp_path, "pdm")("--", "pdm", "lock", env=env, cwd=project)
    if allowed == ["alpha"]:
        # the run recorded a denial, so the gate exits 3 whatever the client did; no alpha is
        # locked (after the denial the index refuses the run alpha 0.9 too)
        assert done.returncode == 3 and DENIAL in done.stderr, done.stderr
        assert "alpha" not in written(project / "pdm.lock"), done.stderr
        return
    assert done.returncode == 0, done.stderr
    assert 'name = "beta"' in (project / "pdm.lock").read_text()
    assert {("alpha", True), ("beta", True)} <= index_decisions(app)


# (the source's URL, written as a TOML literal string, where a backslash is itself; what the gate says of it)
FOREIGN_SOURCES = {
    "another index": ("{public}/simple/", "is not the policy index"),
    # urlsplit read the host after the '@', the index; urllib3 (poetry's) ends it at the backslash:
    # poetry sent every request, with the run token, to the other host (which served it beta)
    "the index behind a backslash": (
        "{public}\\@{index}",
        "holds '\\\\': URL parsers read such a URL in different ways",
    ),
}


@pytest.mark.parametrize("url", FOREIGN_SOURCES)
@pytest.mark.parametrize(
    ("tool", "command", "source"),
    [
        ("pdm", ["pdm", "lock"], "[[tool.pdm.source]]\nname = 'pub'\nurl = '{url}'\n"),
        ("poetry", ["poetry", "lock"], "[[tool.poetry.source]]\nname = 'pub'\nurl = '{url}'\npriority = 'primary'\n"),
    ],
)
def test_a_source_in_pyproject_that_is_not_the_index_is_refused(
    tmp_path, env, app, live, project, public, tool, command, source, url
):
    set_policy(app, "allowlist", python=["alpha"])
    written, said = FOREIGN_SOURCES[url]
    written = written.format(public=public.url, index=f"{live.url.partition('//')[2]}/pypi/acme/simple/")
    (project / "pyproject.toml").write_text(PYPROJECT + "\n" + source.format(url=written))
    done = gate_for(tmp_path, tool)("--", *command, env=env, cwd=project)
    assert done.returncode == 4, done.stderr
    assert f"names the index {written!r}, which {said}" in done.stderr, done.stderr
    assert public.requests == [] and not (project / f"{tool}.lock").exists()


def test_poetry_without_a_source_is_refused_with_what_to_configure(tmp_path, env, app, project):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    (project / "pyproject.toml").write_text(PYPROJECT)
    done = gate_for(tmp_path, "poetry")("--", "poetry", "lock", env=env, cwd=project)
    assert done.returncode == 4 and "poetry has no setting that replaces PyPI" in done.stderr, done.stderr


@pytest.mark.parametrize("allowed", [["alpha", "beta"], ["alpha"]], ids=["allowed", "beta-denied"])
def test_poetry_lock_with_the_index_as_its_source_resolves_through_it(tmp_path, env, app, live, project, allowed):
    set_policy(app, "allowlist", python=allowed)
    source = f'[[tool.poetry.source]]\nname = "policy"\nurl = "{live.url}/pypi/acme/simple/"\npriority = "primary"\n'
    (project / "pyproject.toml").write_text(PYPROJECT + "\n" + source)
    done = gate_for(tmp_path, "poetry")("--", "poetry", "lock", env=env, cwd=project)
    if allowed == ["alpha"]:
        # the run recorded a denial, so the gate exits 3 whatever the client did; no alpha is
        # locked (after the denial the index refuses the run alpha 0.9 too)
        assert done.returncode == 3 and DENIAL in done.stderr, done.stderr
        assert "alpha" not in written(project / "poetry.lock"), done.stderr
        return
    assert done.returncode == 0, done.stderr
    assert 'name = "beta"' in (project / "poetry.lock").read_text()
    assert {("alpha", True), ("beta", True)} <= index_decisions(app)


# url as a TOML literal string, where a backslash is itself
PIPFILE = '[[source]]\nname = "pypi"\nurl = \'{url}\'\nverify_ssl = true\n\n[packages]\nalpha = "*"\n'


@pytest.mark.parametrize("allowed", [["alpha", "beta"], ["alpha"]], ids=["allowed", "beta-denied"])
def test_pipenv_install_replaces_pypi_by_the_index(tmp_path, env, app, project, allowed):
    # pipenv looks up pip and setuptools for the project's environment after locking: in an
    # allowlist they must be allowed, or that lookup is the run's first denial.
    set_policy(app, "allowlist", python=[*allowed, "pip", "setuptools"])
    (project / "Pipfile").write_text(PIPFILE.format(url="https://pypi.org/simple"))
    done = gate_for(tmp_path, "pipenv")("--", "pipenv", "install", env=env, cwd=project, timeout=300)
    if allowed == ["alpha"]:
        # the run recorded a denial, so the gate exits 3 whatever the client did; nothing is
        # installed (after the denial the index refuses the run alpha 0.9 too)
        assert done.returncode == 3 and DENIAL in done.stderr, done.stderr
        assert not {"alpha", "beta"} & installed_in(project), done.stderr
        return
    assert done.returncode == 0, done.stderr
    assert {("alpha", True), ("beta", True)} <= index_decisions(app)


PIPFILE_SOURCES = {
    "another index": ("{public}/simple/", "is not the policy index"),
    # pipenv replaces PyPI only as its own regex spells it: this one it fetched from PyPI itself
    "PyPI in capitals": ("https://PyPI.org/simple", "name PyPI exactly as https://pypi.org/simple"),
    # urlsplit's host is pypi.org, urllib3's (pipenv's) the other index: pipenv locked from there
    "PyPI behind a backslash": (
        "{public}\\@pypi.org/simple",
        "holds '\\\\': URL parsers read such a URL in different ways",
    ),
}


@pytest.mark.parametrize("url", PIPFILE_SOURCES)
def test_a_pipfile_source_that_is_not_pypi_or_the_index_is_refused(tmp_path, env, app, project, public, url):
    set_policy(app, "allowlist", python=["alpha", "pip", "setuptools"])
    written, said = PIPFILE_SOURCES[url]
    (project / "Pipfile").write_text(PIPFILE.format(url=written.format(public=public.url)))
    done = gate_for(tmp_path, "pipenv")("--", "pipenv", "install", env=env, cwd=project)
    assert done.returncode == 4 and said in done.stderr, done.stderr
    assert public.requests == [] and not (project / "Pipfile.lock").exists()


def lock_against(public, project, env, *options: str) -> None:
    """`pdm lock --static-urls` run in the project against the "public" index, not through the
    gate: the lock an agent brings."""
    locked = subprocess.run(
        [str(tool_bin("pdm") / "pdm"), "lock", "--static-urls", *options],
        cwd=project,
        env={**env, "PATH": "/usr/bin:/bin", "PDM_PYPI_URL": f"{public.url}/simple/", "PDM_USE_UV": "false"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert locked.returncode == 0, locked.stderr
    public.requests.clear()


def test_pdm_options_in_pyproject_are_judged_as_its_command_line(tmp_path, env, app, project, public):
    """`[tool.pdm.options]` adds `--lockfile evil.lock` (a lock with static URLs on another host) to
    `pdm install`, as `-L` on the command line would; the gate refuses both."""
    set_policy(app, "allowlist", python=["alpha"])
    options = '[tool.pdm]\ndistribution = false\n[tool.pdm.options]\ninstall = ["--lockfile", "evil.lock"]\n'
    (project / "pyproject.toml").write_text(PYPROJECT + options)
    lock_against(public, project, env, "-L", "evil.lock")
    assert public.url in (project / "evil.lock").read_text()
    done = gate_for(tmp_path, "pdm")("--", "pdm", "install", env=env, cwd=project)
    assert done.returncode == 2, done.stderr
    assert "pyproject.toml [tool.pdm.options] install: the gate does not pass '--lockfile' to pdm" in done.stderr
    assert public.requests == [] and not {"alpha", "beta"} & installed_in(project)


def test_a_poetry_plugin_from_a_url_is_refused_before_poetry_runs(tmp_path, env, app, live, project, public):
    set_policy(app, "allowlist", python=["alpha", "beta"])
    wheel = public.file_url(public.file("beta-1.0-py3-none-any.whl"))
    source = f'[[tool.poetry.source]]\nname = "policy"\nurl = "{live.url}/pypi/acme/simple/"\npriority = "primary"\n'
    plugins = f'[tool.poetry.requires-plugins]\nbeta = {{ url = "{wheel}" }}\n'
    (project / "pyproject.toml").write_text(PYPROJECT + "\n" + source + plugins)
    done = gate_for(tmp_path, "poetry")("--", "poetry", "install", env=env, cwd=project)
    assert done.returncode == 3 and f"denied: 'beta @ {wheel}'" in done.stderr, done.stderr
    assert public.requests == []


# --- a project above the working folder: each client finds it there, and so does the gate --------

SOURCE = '[[tool.{tool}.source]]\nname = "src"\nurl = "{url}/simple/"\n'.format
URL_DEPS = PYPROJECT.replace('["alpha"]', '["alpha", "beta @ {wheel}"]')
PIPFILE_URL = PIPFILE.format(url="https://pypi.org/simple").replace('alpha = "*"', 'beta = {{file = "{wheel}"}}')
OTHER, URL = "names the index '{public}/simple/'", "denied: 'beta @ {wheel}'"
SOURCES = {tool: SOURCE(tool=tool, url="{public}") for tool in ("pdm", "poetry")}  # another index
ABOVE = {  # (the client's command, the project's file, its text, the gate's exit status, what it says)
    "pdm, another source": (["pdm", "install"], "pyproject.toml", PYPROJECT + SOURCES["pdm"], 4, OTHER),
    "pdm, a URL requirement": (["pdm", "lock"], "pyproject.toml", URL_DEPS, 3, URL),
    "pipenv, another source": (["pipenv", "install"], "Pipfile", PIPFILE.format(url="{public}/simple/"), 4, OTHER),
    "pipenv, a file package": (["pipenv", "install"], "Pipfile", PIPFILE_URL, 3, URL),
    "poetry, another source": (["poetry", "lock"], "pyproject.toml", PYPROJECT + SOURCES["poetry"], 4, OTHER),
    "poetry, a URL requirement": (
        ["poetry", "lock"],
        "pyproject.toml",
        URL_DEPS + SOURCE(tool="poetry", url="{index}"),
        3,
        URL,
    ),
}


@pytest.mark.parametrize("case", ABOVE)
def test_a_project_above_the_working_folder_is_judged_as_from_its_own(tmp_path, env, app, live, project, public, case):
    """pdm and poetry find the nearest pyproject.toml up, pipenv the nearest Pipfile: run from
    `src/deep`, pdm and pipenv fetched from the other index (exit 0) and poetry was refused for the
    wrong reason, the gate having read the working folder's files, not the project's."""
    command, name, text, status, message = ABOVE[case]
    set_policy(app, "allowlist", python=["alpha", "beta", "pip", "setuptools"])
    urls = {"public": public.url, "wheel": public.file_url(public.file("beta-1.0-py3-none-any.whl"))}
    (project / name).write_text(text.format(index=f"{live.url}/pypi/acme", **urls))
    (project / "src" / "deep").mkdir(parents=True)
    done = gate_for(tmp_path, command[0])("--", *command, env=env, cwd=project / "src" / "deep", timeout=300)
    assert done.returncode == status and message.format(**urls) in done.stderr, done.stderr
    assert public.requests == [] and not list(project.rglob("*.lock"))


def test_poetry_below_its_project_locks_it_through_the_index_the_project_names(tmp_path, env, app, live, project):
    """The gate read the working folder's files, which name no source: poetry run below its
    project was refused, though the project names the index."""
    set_policy(app, "allowlist", python=["alpha", "beta"])
    source = f'[[tool.poetry.source]]\nname = "policy"\nurl = "{live.url}/pypi/acme/simple/"\npriority = "primary"\n'
    (project / "pyproject.toml").write_text(PYPROJECT + "\n" + source)
    (project / "src").mkdir()
    done = gate_for(tmp_path, "poetry")("--", "poetry", "lock", env=env, cwd=project / "src")
    assert done.returncode == 0, done.stderr
    assert 'name = "beta"' in (project / "poetry.lock").read_text() and not (project / "src" / "poetry.lock").exists()
    assert {("alpha", True), ("beta", True)} <= index_decisions(app)


PDM_MEMBER = '[project]\nname = "{name}"\nversion = "0"\nrequires-python = ">=3.8"\ndependencies = {deps}\n'
PDM_WORKSPACE = '[tool.pdm.workspace]\nmembers = ["packages/*"]\n'


@pytest.mark.parametrize(
    ("cwd", "command"), [("", ["lock"]), ("packages/lib", ["add", "gamma"])], ids=["from the root", "from a member"]
)
def test_a_url_requirement_of_a_pdm_workspace_member_is_refused(tmp_path, env, app, project, public, cwd, command):
    """pdm (2.28 and later) locks every member of its workspace with the root: from the root,
    or adding to a member, a sibling member's URL requirement was fetched from the other index."""
    set_policy(app, "allowlist", python=["alpha", "beta", "gamma"])
    wheel = public.file_url(public.file("beta-1.0-py3-none-any.whl"))
    (project / "pyproject.toml").write_text(PDM_MEMBER.format(name="app", deps='["alpha"]') + PDM_WORKSPACE)
    for name, deps in (("lib", "[]"), ("docs", f'["beta @ {wheel}"]')):
        (project / "packages" / name).mkdir(parents=True)
        (project / "packages" / name / "pyproject.toml").write_text(PDM_MEMBER.format(name=name, deps=deps))
    done = gate_for(tmp_path, "pdm")("--", "pdm", *command, env=env, cwd=project / cwd)
    assert done.returncode == 3 and f"denied: 'beta @ {wheel}'" in done.stderr, done.stderr
    assert public.requests == [] and not (project / "pdm.lock").exists()


def test_a_pdm_workspace_locks_its_members_through_the_index(tmp_path, env, app, project):
    """The root and its members are judged; a member the root names is the workspace's own
    (pdm takes it from its folder), not a package the index is asked about, and the lock may name
    the members' folders (`path = "./packages/lib"`), not another one."""
    set_policy(app, "allowlist", python=["alpha", "beta", "gamma"])
    (project / "pyproject.toml").write_text(PDM_MEMBER.format(name="app", deps='["alpha", "lib"]') + PDM_WORKSPACE)
    (project / "packages" / "lib").mkdir(parents=True)
    (project / "packages" / "lib" / "pyproject.toml").write_text(PDM_MEMBER.format(name="lib", deps='["gamma"]'))
    gate = gate_for(tmp_path, "pdm")
    done = gate("--", "pdm", "lock", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    locked = (project / "pdm.lock").read_text()
    assert 'name = "gamma"' in locked and 'name = "beta"' in locked
    assert {("alpha", True), ("beta", True), ("gamma", True)} <= index_decisions(app)
    assert "lib" not in {name for name, _ in index_decisions(app)}
    assert 'path = "./packages/lib"' in locked
    done = gate("--", "pdm", "lock", env=env, cwd=project)  # the lock is read again
    assert done.returncode == 0, done.stderr


def test_a_dotenv_of_the_project_does_not_move_pipenv_to_another_pipfile(tmp_path, env, app, project, public):
    """pipenv loads the project's .env over its environment: a PIPENV_PIPFILE there moved it to
    another Pipfile, whose source (the other index) the gate never read."""
    set_policy(app, "allowlist", python=["alpha", "beta", "pip", "setuptools"])
    other = tmp_path / "other"
    other.mkdir()
    (other / "Pipfile").write_text(PIPFILE.format(url=f"{public.url}/simple/"))
    (project / "Pipfile").write_text(PIPFILE.format(url="https://pypi.org/simple"))
    (project / ".env").write_text(f"PIPENV_PIPFILE={other / 'Pipfile'}\n")
    done = gate_for(tmp_path, "pipenv")("--", "pipenv", "install", env=env, cwd=project, timeout=300)
    assert done.returncode == 0, done.stderr
    assert public.requests == [] and not (other / "Pipfile.lock").exists()
    assert {("alpha", True), ("beta", True)} <= index_decisions(app)


@pytest.mark.parametrize("pipfile", [None, ""], ids=["no Pipfile", "an empty Pipfile"])
def test_pipenv_importing_a_requirements_file_into_a_new_pipfile_is_refused(
    tmp_path, env, app, project, public, pipfile
):
    """With no Pipfile (or an empty one), pipenv imports the nearest requirements.txt up into a
    new Pipfile, its `--index-url` as a source: the other index was asked for alpha."""
    set_policy(app, "allowlist", python=["alpha", "beta", "pip", "setuptools"])
    (project / "requirements.txt").write_text(f"--index-url {public.url}/simple/\nalpha\n")
    if pipfile is not None:
        (project / "Pipfile").write_text(pipfile)
    (project / "src").mkdir()
    done = gate_for(tmp_path, "pipenv")("--", "pipenv", "install", env=env, cwd=project / "src", timeout=300)
    assert done.returncode == 4, done.stderr
    assert f"so it would import {project / 'requirements.txt'} into a new one" in done.stderr
    assert public.requests == [] and not (project / "src" / "Pipfile").exists()


PYLOCK_FORMAT = '[tool.pdm.lock]\nformat = "pylock"\n'


@pytest.mark.parametrize(("lock", "settings"), [("pdm.lock", ""), ("pylock.toml", PYLOCK_FORMAT)])
def test_a_pep_751_lock_made_against_another_index_is_refused_for_pdm(
    tmp_path, env, app, project, public, lock, settings
):
    """pdm reads a lock in PEP 751's format (`lock-version`, `[[packages]]`) by its content, in
    pdm.lock whatever its lock format, and in pylock.toml when that format is pylock: one made
    against another index installed the denied beta from there (exit 0), the gate having read
    pdm.lock's own format only."""
    set_policy(app, "allowlist", python=["alpha"])
    no_package = PYPROJECT + "[tool.pdm]\ndistribution = false\n"
    (project / "pyproject.toml").write_text(no_package + PYLOCK_FORMAT)
    lock_against(public, project, env)
    (project / "pylock.toml").rename(project / lock)
    (project / "pyproject.toml").write_text(no_package + settings)
    done = gate_for(tmp_path, "pdm")("--", "pdm", "install", env=env, cwd=project)
    assert done.returncode == 4, done.stderr
    assert f"{project / lock} installs alpha from the file '{public.url}/files/" in done.stderr
    assert public.requests == [] and not {"alpha", "beta"} & installed_in(project)
