"""The service's audit signing key in a data directory, made as its first start makes it: the CLI
signs with it there and never makes one itself."""

from __future__ import annotations

from pathlib import Path

from interface.audit import signing_key
from interface.settings import Settings


def service_key(data_dir: Path) -> None:
    signing_key(Settings.from_env({"RUNCODE_POLICY_DATA_DIR": str(data_dir)}))
