"""Deployment settings, read once from the environment by the app factory and the CLI."""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field

from application.store import default_database_url, store_env
from application.egress import EgressConfig
from application.governance import Governance
from domain.errors import FieldError, InvalidInputError
from interface.egress_config import egress_config_from_env

MAX_BODY_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Settings:
    database_url: str
    data_dir: str
    create_tables: bool = True
    egress: EgressConfig = field(default_factory=EgressConfig)  # see interface/egress_config.py
    secret_key: str | None = None  # RUNCODE_POLICY_SECRET_KEY; else see console_secret_key()
    proxy_hops: int = 0  # RUNCODE_POLICY_TRUSTED_PROXY_HOPS: reverse proxies whose X-Forwarded-* to trust

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        data_dir = env.get("RUNCODE_POLICY_DATA_DIR", "var")
        return cls(
            database_url=env.get("RUNCODE_POLICY_DATABASE_URL") or default_database_url(data_dir),
            data_dir=data_dir,
            create_tables=env.get("RUNCODE_POLICY_CREATE_TABLES", "y").lower() in ("y", "yes", "1", "true"),
            egress=egress_config_from_env(env),  # EgressConfigError names every bad entry
            secret_key=env.get("RUNCODE_POLICY_SECRET_KEY") or None,
            proxy_hops=proxy_hops(env.get("RUNCODE_POLICY_TRUSTED_PROXY_HOPS", "0")),
        )

    def console_secret_key(self) -> str:
        """The key that signs the console's sessions: the configured one, else one generated once.

        Read lazily (only the console needs it) so CLI commands never write to the data directory.
        """
        return self.secret_key or persisted_secret_key(self.data_dir)


def persisted_secret_key(data_dir: str) -> str:
    """`<data_dir>/secret_key` (mode 0600), created on first use; every worker process sharing
    the data directory then signs sessions with the same key, and restarts keep users signed in."""
    path = os.path.join(data_dir, "secret_key")
    if not os.path.exists(path):
        os.makedirs(data_dir, exist_ok=True)
        _publish_once(path, secrets.token_urlsafe(48))
    with open(path, encoding="ascii") as file:
        return file.read().strip()


def _publish_once(path: str, key: str) -> None:
    # Written whole to a private temporary file, then linked into place: a worker starting at
    # the same moment sees no file or the complete key, and the first link wins.
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".secret_key.")
    try:
        with os.fdopen(handle, "w", encoding="ascii") as file:
            file.write(key + "\n")
            file.flush()
            os.fsync(file.fileno())
        os.link(temporary, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(temporary)


def proxy_hops(text: str) -> int:
    if not text.strip().isdigit() or int(text) > 10:
        raise InvalidInputError("RUNCODE_POLICY_TRUSTED_PROXY_HOPS must be a whole number from 0 to 10",
                                [FieldError("RUNCODE_POLICY_TRUSTED_PROXY_HOPS", "must be 0 to 10")])
    return int(text)


def open_governance(settings: Settings) -> Governance:
    """The Governance application on the configured store, with the deployment's egress rules."""
    return Governance(env=store_env(settings.database_url, create_table=settings.create_tables),
                      egress=settings.egress)
