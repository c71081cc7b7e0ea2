"""The Node clients the gate runs, as real programs: npm (on the machine), and pnpm, yarn 1.x,
yarn 4.x and bun at the versions pinned in node-tools/package.json (installed there by .ci/run).

`bin_dir(tmp, client)` is a folder holding that client under the name the gate runs it by
(`yarn` for both yarns), to be the gate's trusted installer path. Without a client the test
skips loudly locally and fails under CI=true (tests/support/third_party.py's `require`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.support.third_party import require

NODE_TOOLS = Path(__file__).resolve().parent / "node-tools"
PINNED = json.loads((NODE_TOOLS / "package.json").read_text())["dependencies"]
MODULES = NODE_TOOLS / "node_modules"
# client -> (the program the gate runs, where it is, the package that brings it)
PROGRAMS = {
    "npm": ("npm", None, None),
    "pnpm": ("pnpm", MODULES / "pnpm" / "pnpm", "pnpm"),
    "yarn1": ("yarn", MODULES / "yarn" / "bin" / "yarn.js", "yarn"),
    "yarn4": ("yarn", MODULES / "@yarnpkg" / "cli-dist" / "bin" / "yarn.js", "@yarnpkg/cli-dist"),
    "bun": ("bun", MODULES / "bun" / "bin" / "bun.exe", "bun"),
}


def program(client: str) -> Path:
    name, path, package = PROGRAMS[client]
    if path is None:
        found = shutil.which(name)
        require(name, found is not None, "install Node.js 20 and npm")
        return Path(found)
    how = f"bash .ci/run installs {package} {PINNED[package]} into {MODULES}"
    require(f"{package} {PINNED[package]}", path.exists(), how)
    return path


def bin_dir(tmp: Path, client: str) -> Path:
    """A folder with the client under the name the gate runs it by: the gate's trusted path."""
    folder = tmp / f"bin-{client}"
    folder.mkdir(exist_ok=True)
    link = folder / PROGRAMS[client][0]
    if not link.exists():
        link.symlink_to(program(client))
    return folder
