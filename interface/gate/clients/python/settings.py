"""How each Python client is run so that the service's index is its only source.

- pip: no configuration file (PIP_CONFIG_FILE=/dev/null), the index in PIP_INDEX_URL, and the
  interpreter started with -I -S: no site processing, so no `.pth` file of the environment runs
  before pip (one could re-set PIP_EXTRA_INDEX_URL after the gate's scrub). The environment's
  site-packages are put on sys.path by the gate's own bootstrap instead. pip's build-dependency
  child still runs with site processing (a limit: docs/clients-python.md).
- uv: no configuration file (UV_NO_CONFIG, which also drops pyproject.toml's [tool.uv] indexes),
  no `tool.uv.sources` (UV_NO_SOURCES: a source may be a URL or another index; a workspace's
  members are still its own), the index as the default one, no Python downloads. A uv.lock (the
  workspace root's: `projects.uv_workspace`) made against another index is re-resolved against
  this one (and rewritten), since the index is not the lock's.
- pdm: PDM_PYPI_URL replaces its default source, PDM_CONFIG_FILE its global configuration; no uv.
- pipenv: PIPENV_PYPI_MIRROR replaces every PyPI source (Pipfile and Pipfile.lock) with the index,
  when spelt as pipenv knows PyPI (`PIPENV_PYPI`); no `.env` (PIPENV_DONT_LOAD_ENV); no
  requirements.txt imported into a new Pipfile (refused).
- poetry: no setting replaces PyPI; the project must name the index as its only source (checked).
- pip-compile: pip's settings, and its own configuration files ignored (--no-config); the index
  URL (with the run token) is not written into the output (--no-emit-index-url).

Every index a project file names that is not the service's is refused, with what to do instead,
and so is one that clients might read otherwise than the gate (`projects.unclear`).
Standard library only, like the whole gate.
"""

from __future__ import annotations

import os
import posixpath
import re

from ...installers import PYTHON, Unresolvable, with_password, write_private
from . import projects

PIP = re.compile(r"pip(\d+(\.\d+)*)?\Z")
# pip started without site processing: the environment's site-packages (a virtual environment's
# own, as site.venv() would set them) on sys.path, no .pth file executed; then the `pip` script
# (or `-m pip`) runs as it would have.
PIP_BOOTSTRAP = (
    "import os, runpy, site, sys\n"
    "cfg = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(sys.executable))), 'pyvenv.cfg')\n"
    "if os.path.isfile(cfg):\n"
    "    sys.prefix = sys.exec_prefix = os.path.dirname(cfg)\n"
    "sys.path.extend(site.getsitepackages([sys.prefix]))\n"
    "del sys.argv[0]\n"
    "if sys.argv[0] == '-m':\n"
    "    del sys.argv[0]\n"
    "    runpy.run_module('pip', run_name='__main__', alter_sys=True)\n"
    "else:\n"
    "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
)
SERVICE_SOURCE = (
    'name it as the only source instead: [[tool.poetry.source]] name = "policy", url = "{index}", '
    'priority = "primary" (or remove the source and run through the gate)'
)
# pipenv's own test for PyPI (`is_pypi_url`): PIPENV_PYPI_MIRROR replaces a source so written, and
# no other (`https://PyPI.org/simple` is fetched from PyPI itself).
PIPENV_PYPI = re.compile(r"https?://pypi(\.python)?\.org/simple/?")
ADVICE = {  # what to do about a source that is not the policy index, by client
    "poetry": SERVICE_SOURCE,
    "pipenv": "remove it, or name PyPI exactly as https://pypi.org/simple: pipenv puts the policy index in place "
    "of that spelling only",
}


def settings_for(kind: str, run: dict, workdir: str, cwd: str) -> dict:
    index = run["pypi"]
    check_sources(kind, index, cwd)
    with_token = with_password(index, run["token"])
    pip = {
        "PIP_INDEX_URL": with_token,
        "PIP_CONFIG_FILE": os.devnull,  # pip then reads no configuration file at all
        "PIP_NO_INPUT": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PYTHONNOUSERSITE": "1",
        "PYTHONSAFEPATH": "1",
    }
    uv = {
        "UV_DEFAULT_INDEX": with_token,
        "UV_INDEX_URL": with_token,
        "UV_NO_CONFIG": "1",
        "UV_KEYRING_PROVIDER": "disabled",
        "UV_PYTHON_DOWNLOADS": "never",
    }
    if kind in ("pip", "pip-compile"):
        return pip
    if kind in ("uv", "uv-project"):  # `uv pip install -r pyproject.toml` reads tool.uv.sources too
        return {**uv, "UV_NO_SOURCES": "1"}
    if kind == "pdm":
        config = os.path.join(workdir, "pdm-config.toml")
        write_private(config, "")
        return {
            **pip,
            "PDM_PYPI_URL": index,
            "PDM_PYPI_USERNAME": "run",
            "PDM_PYPI_PASSWORD": run["token"],
            "PDM_CONFIG_FILE": config,
            "PDM_USE_UV": "false",
            "PDM_CHECK_UPDATE": "false",
            "PDM_NON_INTERACTIVE": "1",
        }
    if kind == "pipenv":  # pipenv loads the project's .env over its environment (a PIPENV_PIPFILE there moves it)
        return {
            **pip,
            "PIPENV_PYPI_MIRROR": with_token,
            "PIPENV_YES": "1",
            "PIPENV_NOSPIN": "1",
            "PIPENV_DONT_LOAD_ENV": "1",
        }
    if kind == "poetry":
        config = os.path.join(workdir, "poetry")
        os.mkdir(config, 0o700)
        name = poetry_source_name(cwd)
        return {
            **pip,
            "POETRY_CONFIG_DIR": config,
            "POETRY_NO_INTERACTION": "1",
            f"POETRY_HTTP_BASIC_{name}_USERNAME": "run",
            f"POETRY_HTTP_BASIC_{name}_PASSWORD": run["token"],
        }
    raise Unresolvable(f"no settings for {kind}")


def check_sources(kind: str, index: str, cwd: str) -> None:
    """Refuse every index the project's files name that is not the service's (uv's are dropped
    by UV_NO_CONFIG; pip and pip-compile read none of these files), and a lock that would fetch a
    file from elsewhere than the index (its client installs such a lock as it is). The project is
    the one the client finds from `cwd` (`projects.project_folder`), with its lock beside it, and
    for pdm every project of its workspace, whose lock is the root's (`projects.pdm_workspace`)."""
    if kind == "uv-project":
        _check_uv_lock(index, cwd)
    if kind not in ("pdm", "pipenv", "poetry"):
        return
    if kind == "pdm":
        root, folders = projects.pdm_workspace(cwd)
    else:
        root = projects.project_folder(kind, cwd)
        folders = {root: None}
    declared = [source for folder in folders for source in projects.declared_sources(folder, kind)]
    if kind == "pipenv" and (imported := projects.pipenv_import(cwd)):
        raise Unresolvable(
            f"pipenv finds no Pipfile from here, or an empty one, so it would import {imported} into a new "
            "one, each index it names a source; the gate does not judge that conversion: write the Pipfile "
            f"([packages]) first, or install the file with `runcode-policy-gate -- pip install -r {imported}`"
        )
    if kind == "pipenv":  # PIPENV_PYPI_MIRROR stands in for pypi.org wherever it is named
        lock = os.path.join(root, "Pipfile.lock")
        document = projects.pipfile_lock(lock)
        declared += [(f"{lock} _meta.sources", u) for u in projects.pipfile_lock_sources(document)]
        entries = [(n, e) for s in ("default", "develop") for n, e in (document.get(s) or {}).items()]
        _check_locked_files(lock, entries, index, url_key="file")
        declared = [(w, u) for w, u in declared if not PIPENV_PYPI.fullmatch(u)]
    if kind == "poetry":
        lock = os.path.join(root, "poetry.lock")
        declared += [(lock, u) for u in poetry_lock_sources(lock)]
    for lock in [os.path.join(root, name) for name in PDM_LOCKS] if kind == "pdm" else ():
        document = projects.toml(lock)  # a lock with static URLs: their files must be the index's
        packages = [p for p in document.get("package", ()) if isinstance(p, dict)]
        declared += [(lock, u) for u in off_index_files(pdm_lock_urls(packages), index)]
        entries = [(p.get("name", "?"), p) for p in packages] + _pylock_entries(document.get("packages", ()))
        _check_locked_files(lock, entries, index, url_key="url", own=_own_paths(root, folders))
    for where, url in declared:
        if not projects.same_index(url, index):
            why = projects.unclear(url) or f"is not the policy index {index!r}"
            advice = ADVICE.get(kind, "remove it: the gate points {kind} at the policy index")
            raise Unresolvable(
                f"{where} names the index {url!r}, which {why}; " + advice.format(index=index, kind=kind)
            )
    if kind == "poetry" and not declared:
        raise Unresolvable(
            f"poetry has no setting that replaces PyPI, and {os.path.join(root, 'pyproject.toml')} names no "
            "source: " + SERVICE_SOURCE.format(index=index)
        )


def poetry_source_name(cwd: str) -> str:
    """The name of the first source of the project poetry finds from `cwd`, which names the
    variables of its credentials."""
    folder = projects.project_folder("poetry", cwd)
    sources = projects.pyproject(folder).get("tool", {}).get("poetry", {}).get("source", ())
    name = str(sources[0].get("name", "")) if sources else ""
    return re.sub(r"[^A-Z0-9]", "_", name.upper())


def poetry_lock_sources(lock: str) -> list[str]:
    packages = projects.toml(lock).get("package", ())
    return [str(p["source"].get("url", "")) for p in packages if isinstance(p.get("source"), dict)]


# uv.lock sources that are no index but the project itself (".") or its workspace members.
UV_LOCAL_SOURCES = ("editable", "virtual")


# Locked entries that install from no index: version control, whatever their lockfile.
LOCKED_VCS = ("git", "hg", "svn", "bzr", "vcs")
# pdm's locks: pylock.toml when its lock format is pylock, else pdm.lock; it reads either in its
# own format or PEP 751's, told by the content (`lock-version`): both files in both formats are checked.
PDM_LOCKS = ("pdm.lock", "pylock.toml")
SELF = frozenset({"."})  # the project itself, which a lock may name as a local path (`.`, `./`)


def _own_paths(root: str, folders) -> frozenset[str]:
    """The projects of a workspace as its lock names their folders: relative to its root (`.`)."""
    return frozenset(posixpath.normpath(os.path.relpath(folder, root).replace(os.sep, "/")) for folder in folders)


def _check_locked_files(lock: str, entries: list, index: str, url_key: str, own: frozenset[str] = SELF) -> None:
    """Refuse a lock entry that installs from elsewhere than the index: a file URL off it (under
    `url_key`: pdm's `url`, pipenv's `file`), a local path other than the project itself (or a
    project of its workspace, `own`), or version control. The installer fetches such an entry as
    written; the index never judges it."""
    for name, entry in entries:
        if not isinstance(entry, dict):
            continue
        url, path = entry.get(url_key), entry.get("path")
        found = next((f"a {k} source" for k in LOCKED_VCS if k in entry), None)
        if path is not None and posixpath.normpath(str(path)) not in own:
            found = f"the local path {str(path)!r}"
        elif url and off_index_files([str(url)], index):
            found = f"the file {str(url)!r}"
        if found:
            raise Unresolvable(
                f"{lock} installs {name} from {found}, not from the policy index; "
                f"delete {lock} and lock again through the gate"
            )


def off_index_files(urls: list[str], index: str) -> list[str]:
    """The file URLs not served by the index (its files live beside its pages)."""
    files = index.rstrip("/").rpartition("/")[0] + "/"
    return [u for u in urls if projects.unclear(u) or not projects.same_index(u[: len(files)], files)]


def _check_uv_lock(index: str, cwd: str) -> None:
    """The uv.lock of the workspace uv finds from `cwd` (at its root), whose local sources may be
    only the workspace's own projects (paths relative to its root)."""
    root, folders = projects.uv_workspace(cwd)
    members = _own_paths(root, folders)
    lock = os.path.join(root, "uv.lock")
    packages = [p for p in projects.toml(lock).get("package", ()) if isinstance(p, dict)]
    ours = [projects.same_index(str(p.get("source", {}).get("registry", index)), index) for p in packages]
    # Locked wholly against another index, uv resolves it again through this one; a lock that has
    # this index too is taken as it is (uv checks only the project's own requirements against the
    # index it is given), and its packages from another index are fetched from where it says.
    registries = {o for p, o in zip(packages, ours, strict=True) if "registry" in p.get("source", {})}
    mixed = len(registries) == 2
    for package, of_index in zip(packages, ours, strict=True):
        name, source = package.get("name", "?"), package.get("source", {})
        kinds = set(source) - {"registry", *UV_LOCAL_SOURCES}
        # a local project that is neither this one nor a member of its workspace: a path dependency
        kinds |= {k for k in UV_LOCAL_SOURCES if k in source and posixpath.normpath(str(source[k])) not in members}
        files = [package.get("sdist", {}), *package.get("wheels", ())]
        urls = [str(f["url"]) for f in files if isinstance(f, dict) and f.get("url")]
        if mixed and not of_index:
            kinds.add(f"another index's ({source.get('registry')})")
        outside = off_index_files(urls, index) if of_index else []
        if kinds or outside:
            found = f"{sorted(kinds)[0]} source" if kinds else f"file {outside[0]!r}"
            raise Unresolvable(
                f"{lock} installs {name} from a {found}, not from the policy index; "
                "delete it and run `runcode-policy-gate -- uv lock` to resolve it through the index"
            )


def _pylock_entries(packages) -> list:
    """PEP 751's packages as `_check_locked_files` reads entries: the package (a `vcs` table is
    version control), each file it names by `url` or `path` (its sdist, wheels, archive), and its
    `directory` as a local path."""
    entries: list = []
    for package in packages if isinstance(packages, list) else ():
        if isinstance(package, dict):
            name, directory = package.get("name", "?"), package.get("directory")
            files = [package.get("sdist"), package.get("archive"), *(package.get("wheels") or ())]
            entries += [(name, package)] + [(name, f) for f in files if isinstance(f, dict)]
            if directory is not None:
                path = directory.get("path") if isinstance(directory, dict) else directory
                entries.append((name, {"path": str(path)}))
    return entries


def pdm_lock_urls(packages) -> list[str]:
    """The file URLs of pdm.lock's packages (written only with static URLs)."""
    return [str(f["url"]) for p in packages for f in p.get("files", ()) if isinstance(f, dict) and f.get("url")]


def prepare_argv(kind: str, argv: list[str]) -> list[str]:
    if kind == "pip":
        if PYTHON.match(os.path.basename(argv[0])) and argv[1:4] == ["-I", "-m", "pip"]:
            return [argv[0], "-I", "-S", "-c", PIP_BOOTSTRAP, "-m", "pip", *argv[4:]]
        return [interpreter_of(argv[0]), "-I", "-S", "-c", PIP_BOOTSTRAP, *argv]
    if kind == "pip-compile":
        return [argv[0], "--no-config", "--no-emit-index-url", "--no-emit-trusted-host", *argv[1:]]
    return argv


def interpreter_of(script: str) -> str:
    """The Python a `pip` script runs on (its `#!` line), to start it without site processing."""
    try:
        with open(script, "rb") as handle:
            first = handle.readline(4096).decode("utf-8", "replace").strip()
    except OSError as error:
        raise Unresolvable(f"cannot read {script}: {error}") from None
    python = first[2:].strip() if first.startswith("#!") else ""
    if not (os.path.isabs(python) and PYTHON.match(os.path.basename(python))):
        raise Unresolvable(f"{script} does not start with `#!/path/to/python`; run `python -m pip` instead")
    return python
