"""What the gate reads of a Python project's files before any client runs: every table that adds
a requirement (a dependency given as a URL, a file, a path or a repository becomes `name @ ...`,
which the service refuses as a direct reference), every file that names an index, and a lock
that would fetch from elsewhere. Each case is one a review got past the gate with a real client."""

from __future__ import annotations

import pytest

from interface.gate.clients.python import projects, settings
from interface.gate.installers import Unresolvable
from interface.gate.service import CannotVerify

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


@pytest.mark.parametrize("packages", [OF_THIS_INDEX, OF_ANOTHER_INDEX], ids=["this index", "wholly another"])
def test_a_uv_lock_of_this_index_or_wholly_of_another_one_passes(tmp_path, packages):
    """Locked wholly against another index, uv resolves it again through this one."""
    (tmp_path / "uv.lock").write_text("version = 1\n" + packages + OWN)
    (tmp_path / "pyproject.toml").write_text(PROJECT + '[tool.uv.workspace]\nmembers = ["packages/*"]\n')
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
    "pipenv file": ("pipenv", "Pipfile.lock", '{"default": {"beta": {"file": "' + EVIL + '"}}}'),
    "pipenv path": ("pipenv", "Pipfile.lock", '{"develop": {"beta": {"path": "./beta-1.0-py3-none-any.whl"}}}'),
    "pipenv git": ("pipenv", "Pipfile.lock", '{"default": {"beta": {"git": "https://evil.example/b.git"}}}'),
}


@pytest.mark.parametrize("case", LOCKS)
def test_a_pdm_or_pipenv_lock_entry_from_elsewhere_than_the_index_is_refused(tmp_path, case):
    """Each installed the denied beta with the gate's exit 0: the lock named its file, and the
    installer fetched it as written, past the index."""
    kind, lock, text = LOCKS[case]
    (tmp_path / lock).write_text(text)
    with pytest.raises(Unresolvable, match=f"{lock} installs beta from"):
        settings.check_sources(kind, INDEX, str(tmp_path))


def test_a_lock_naming_the_project_itself_or_the_indexs_files_passes(tmp_path):
    files = INDEX.rsplit("/", 2)[0] + "/files/beta/beta-1.0-py3-none-any.whl"
    (tmp_path / "pdm.lock").write_text(f'[[package]]\nname = "beta"\nversion = "1.0"\nurl = "{files}"\n')
    settings.check_sources("pdm", INDEX, str(tmp_path))
    (tmp_path / "Pipfile.lock").write_text(
        '{"default": {"app": {"editable": true, "path": "."}, "beta": {"version": "==1.0"}}}'
    )
    settings.check_sources("pipenv", INDEX, str(tmp_path))
