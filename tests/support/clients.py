"""Real package clients (pip, uv, npm, pnpm), each isolated from this machine's configuration.

Every run gets a clean environment (no `PIP_*`, `UV_*`, `npm_config_*` from the caller), its own
caches and config files under a temporary directory, no standard input (a prompt would fail
at once instead of hanging), and a timeout. npm and pnpm also get a dead proxy for every host
but loopback, so a URL that escaped the index fails instead of reaching the internet.

pnpm is not on the machine: `.ci/run` installs the version pinned in `node-tools/package.json`
beside this file. Tests that need it skip loudly locally and fail under CI=true without it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

NODE_TOOLS = Path(__file__).resolve().parent / "node-tools"
PNPM_VERSION = json.loads((NODE_TOOLS / "package.json").read_text())["dependencies"]["pnpm"]
TIMEOUT = 180
_DROPPED = ("PIP_", "UV_", "NPM_CONFIG_", "PNPM_", "PYTHON", "VIRTUAL_ENV")


@dataclass
class Outcome:
    code: int
    output: str

    @property
    def ok(self) -> bool:
        return self.code == 0


def clean_env(home: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(_DROPPED)}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_CACHE_HOME=str(home / ".cache"))
    env.update(extra)
    return env


def run(argv: list[str], env: dict, cwd: Path | None = None) -> Outcome:
    done = subprocess.run(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT,
    )
    return Outcome(done.returncode, done.stdout)


def run_in_terminal(argv: list[str], env: dict, seconds: float = 60) -> Outcome:
    """Run with a terminal as stdin/stdout, as an agent's shell would: a client that prompts
    (pip asks "User for host:" on a 401) is caught waiting and killed, and code 124 says so."""
    import pty
    import select

    controller, terminal = pty.openpty()
    process = subprocess.Popen(argv, env=env, stdin=terminal, stdout=terminal, stderr=terminal, close_fds=True)
    os.close(terminal)
    output, deadline = b"", time.monotonic() + seconds
    try:
        while process.poll() is None and time.monotonic() < deadline:
            if select.select([controller], [], [], 0.2)[0]:
                try:
                    output += os.read(controller, 65536)
                except OSError:  # the terminal closed: the process is ending
                    break
        try:  # the terminal closed: wait for the exit status (briefly, if the process hung up early)
            code = process.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            code = 124
        return Outcome(code, output.decode(errors="replace"))
    finally:
        os.close(controller)


def with_token(index_url: str, token: str) -> str:
    parts = urlsplit(index_url)
    return parts._replace(netloc=f"run:{token}@{parts.netloc}").geturl()


def pip_install(tmp: Path, index_url: str, token: str, *args: str) -> Outcome:
    env = clean_env(tmp, PIP_CONFIG_FILE=os.devnull)
    argv = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--target",
        str(tmp / "site"),
        "--index-url",
        with_token(index_url, token),
        *args,
    ]
    return run(argv, env)


def uv_install(tmp: Path, index_url: str, token: str, *args: str) -> Outcome:
    uv = Path(sys.executable).with_name("uv")
    env = clean_env(tmp, UV_NO_CONFIG="1", UV_PYTHON_DOWNLOADS="never", UV_CACHE_DIR=str(tmp / "uv-cache"))
    argv = [
        str(uv),
        "pip",
        "install",
        "--python",
        sys.executable,
        "--target",
        str(tmp / "site"),
        "--default-index",
        with_token(index_url, token),
        *args,
    ]
    return run(argv, env)


def npmrc(tmp: Path, registry: str, token: str) -> Path:
    """A user config naming the registry and its token, with every other host unreachable."""
    parts = urlsplit(registry)
    path = tmp / "npmrc"
    path.write_text(
        f"registry={registry}\n//{parts.netloc}{parts.path}:_authToken={token}\n"
        "proxy=http://127.0.0.1:9/\nhttps-proxy=http://127.0.0.1:9/\nnoproxy=127.0.0.1,localhost\n"
        "audit=false\nfund=false\nupdate-notifier=false\n"
    )
    return path


def npm_project(tmp: Path, dependencies: dict | None = None) -> Path:
    project = tmp / "project"
    project.mkdir(exist_ok=True)
    (project / "package.json").write_text(
        json.dumps({"name": "probe", "version": "1.0.0", "dependencies": dependencies or {}})
    )
    return project


def npm(tmp: Path, registry: str, token: str, *args: str, project: Path | None = None) -> Outcome:
    project = project or npm_project(tmp)
    config = npmrc(tmp, registry, token)
    env = clean_env(tmp, npm_config_userconfig=str(config))
    argv = ["npm", *args, "--userconfig", str(config), "--cache", str(tmp / "npm-cache")]
    return run(argv, env, cwd=project)


def pnpm_program() -> str | None:
    local = NODE_TOOLS / "node_modules" / ".bin" / "pnpm"
    return str(local) if local.exists() else shutil.which("pnpm")


def require_pnpm() -> str:
    found = pnpm_program()
    if found is None:
        message = f"pnpm {PNPM_VERSION} is not installed (.ci/run: npm install --prefix {NODE_TOOLS})"
        if os.environ.get("CI"):
            pytest.fail(f"{message}: CI must run the pnpm tests", pytrace=False)
        pytest.skip(f"SKIPPING PNPM TESTS: {message}")
    return found


def pnpm(tmp: Path, registry: str, token: str, *args: str, project: Path | None = None) -> Outcome:
    program = require_pnpm()
    project = project or npm_project(tmp)
    config = npmrc(tmp, registry, token)
    # pnpm 12 looks itself up at start unless this is set in its environment (it ignores the
    # npmrc's update-notifier): a denial of `pnpm` that would fail the run.
    env = clean_env(tmp, pnpm_config_update_notifier="false")
    argv = [
        program,
        *args,
        "--ignore-scripts",
        "--dir",
        str(project),
        "--store-dir",
        str(tmp / "pnpm-store"),
        "--state-dir",
        str(tmp / "pnpm-state"),
        "--userconfig",
        str(config),
        "--registry",
        registry,
    ]
    return run(argv, env, cwd=project)
