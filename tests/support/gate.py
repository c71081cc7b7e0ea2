"""The sandbox gate as a sandbox runs it: a copy of its folder, run by a Python without the
project's packages (-I -S), with stand-in installers (or real ones) on its trusted path."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
from pathlib import Path

GATE = Path(__file__).resolve().parents[2] / "interface" / "gate"
# A stand-in installer. Asked `<client> config list --json` (as the gate asks npm and pnpm before
# an install), it answers like the real client: its effective settings as JSON, from the .npmrc
# files of the folder and its parents, the user and global files it is given, `npm_config_*` and
# `pnpm_config_*` variables, then the command line (`--key=value`, `--config.key=value`); keys
# spelt as written (quotes stripped), `${VAR}` replaced when VAR is set and kept literally when
# not (as npm does). A query is not the install: only the install run is recorded.
FAKE_PROGRAM = r"""#!PYTHON
import json, os, sys

def npmrc(path, config):
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return
    for line in lines:
        key, equals, value = line.strip().partition("=")
        if equals and not key.startswith(("#", ";")):
            config[expand(key.strip().strip(chr(34) + chr(39)))] = expand(value.strip())

def expand(text):
    for name, value in os.environ.items():
        text = text.replace("${" + name + "}", value)
    return text

if sys.argv[1:4] == ["config", "list", "--json"]:
    config = {"registry": "https://registry.npmjs.org/"}
    folder, folders = os.getcwd(), []
    while True:
        folders.append(folder)
        if os.path.dirname(folder) == folder:
            break
        folder = os.path.dirname(folder)
    for name in ("npm_config_globalconfig", "npm_config_userconfig"):
        if name in os.environ:
            npmrc(os.environ[name], config)
    for folder in reversed(folders):  # the nearest folder's file wins
        npmrc(os.path.join(folder, ".npmrc"), config)
    for name, value in os.environ.items():
        for prefix in ("npm_config_", "pnpm_config_"):
            if name.lower().startswith(prefix):
                config[name[len(prefix):].lower().replace("_", "-")] = value
    for option in sys.argv[4:]:
        key, _, value = option[2:].partition("=")
        config[key[len("config."):] if key.startswith("config.") else key] = value
    print(json.dumps(config))
    sys.exit(0)
with open(os.environ["FAKE_RECORD"], "w") as record:
    json.dump({"argv": sys.argv, "env": dict(os.environ), "cwd": os.getcwd(),
               "files": {k: open(v).read() for k, v in os.environ.items()
                         if k.lower().endswith("config") and os.path.isfile(v)}}, record)
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
"""
FAKES = ("pip", "python", "npm", "pnpm", "uv", "pdm", "pipenv", "poetry")


class Gate:
    """`gate(*command, env=..., cwd=...)` runs the copied gate; `ran()` tells how a stand-in ran."""

    def __init__(self, root: Path, installer_path: str | None = None):
        self.image = root / "image"
        shutil.copytree(GATE, self.image / "gate", ignore=shutil.ignore_patterns("__pycache__"))
        self.programs = root / "bin"
        self.programs.mkdir(parents=True)
        for name in FAKES:  # stand-ins that record how they were run
            path = self.programs / name
            path.write_text(FAKE_PROGRAM.replace("PYTHON", sys.executable, 1))
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
        self.record = root / "ran.json"
        self.base = {
            "PATH": "/usr/bin:/bin",
            "FAKE_RECORD": str(self.record),
            "RUNCODE_POLICY_INSTALLER_PATH": installer_path or str(self.programs),
        }

    def argv(self, *command: str) -> list[str]:
        return [sys.executable, "-I", "-S", str(self.image / "gate"), *command]

    def __call__(self, *command: str, env: dict, cwd: Path | None = None, timeout: float = 120):
        return subprocess.run(
            self.argv(*command), env={**self.base, **env}, cwd=cwd, capture_output=True, text=True, timeout=timeout
        )

    def ran(self) -> dict | None:
        return json.loads(self.record.read_text()) if self.record.exists() else None


DEAD_PROXY = "http://127.0.0.1:9"  # nothing listens: whatever is not sent to loopback goes nowhere


def sandbox_env(service, home: Path | str, **extra: str) -> dict:
    """What a sandbox sets for the gate (workspace acme, its sandbox token), and a closed port as
    its proxy with loopback exempt, so whatever the gate fails to point at the index goes nowhere."""
    return {
        "RUNCODE_POLICY_URL": service.url,
        "RUNCODE_POLICY_TOKEN": service.tokens["sandbox"],
        "RUNCODE_POLICY_WORKSPACE": "acme",
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",
        "HTTP_PROXY": DEAD_PROXY,
        "HTTPS_PROXY": DEAD_PROXY,
        "NO_PROXY": "127.0.0.1",
        **extra,
    }
