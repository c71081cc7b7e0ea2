"""Tiny real packages for install tests: wheels (zipfile) and npm tarballs (tarfile).

`TREE` is the dependency tree the gate and lockdown tests install: alpha 1.0 depends on beta,
alpha 0.9 (older) on nothing; gamma stands alone (the package an attacker wants in). `SCOPED`
is the same shape in a scope.
"""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

# {name: {version: [its dependencies]}}. alpha 0.9 is an older release without beta: a resolver
# refused beta may back-track to it, so a denied-dependency test proves the index refuses that too.
TREE = {"alpha": {"0.9": [], "1.0": ["beta"]}, "beta": {"1.0": []}, "gamma": {"1.0": []}}
SCOPED = {"@corp/alpha": {"0.9": [], "1.0": ["@corp/beta"]}, "@corp/beta": {"1.0": []}}  # npm only


def wheel(directory: Path, name: str, requires: list[str], version: str = "1.0") -> Path:
    info = f"{name}-{version}.dist-info"
    path = directory / f"{name}-{version}-py3-none-any.whl"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{name}/__init__.py", f"NAME = {name!r}\n")
        archive.writestr(f"{info}/METADATA", metadata)
        archive.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        archive.writestr(f"{info}/RECORD", "")
    return path


def wheels(directory: Path, tree: dict[str, dict[str, list[str]]] = TREE) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, releases in tree.items():
        for version, requires in releases.items():
            wheel(directory, name, requires, version)
    return directory


def npm_tarball(name: str, version: str, dependencies: dict[str, str]) -> bytes:
    manifest = json.dumps({"name": name, "version": version, "dependencies": dependencies}).encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        entry = tarfile.TarInfo("package/package.json")
        entry.size, entry.mode = len(manifest), 0o644
        archive.addfile(entry, io.BytesIO(manifest))
    return buffer.getvalue()


def npm_tree(tree: dict[str, dict[str, list[str]]] = TREE) -> dict[str, dict]:
    """`{name: {"1.0.0": (tarball, dependencies)}}` for a registry to serve, oldest version first."""
    found: dict[str, dict] = {}
    for name, releases in tree.items():
        for version, deps in releases.items():
            dependencies = {d: "^1.0.0" for d in deps}
            found.setdefault(name, {})[f"{version}.0"] = (npm_tarball(name, f"{version}.0", dependencies), dependencies)
    return found
