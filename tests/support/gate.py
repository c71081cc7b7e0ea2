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
FAKE_PROGRAM = """#!{python}
import json, os, sys
with open(os.environ["FAKE_RECORD"], "w") as record:
    json.dump({{"argv": sys.argv, "env": dict(os.environ), "cwd": os.getcwd(),
               "files": {{k: open(v).read() for k, v in os.environ.items()
                         if k.lower().endswith("config") and os.path.isfile(v)}}}}, record)
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
"""
FAKES = ("pip", "python", "npm", "pnpm", "uv")


class Gate:
    """`gate(*command, env=..., cwd=...)` runs the copied gate; `ran()` tells how a stand-in ran."""

    def __init__(self, root: Path, installer_path: str | None = None):
        self.image = root / "image"
        shutil.copytree(GATE, self.image / "gate", ignore=shutil.ignore_patterns("__pycache__"))
        self.programs = root / "bin"
        self.programs.mkdir(parents=True)
        for name in FAKES:  # stand-ins that record how they were run
            path = self.programs / name
            path.write_text(FAKE_PROGRAM.format(python=sys.executable))
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
