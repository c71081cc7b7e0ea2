"""Deployment settings, read once from the environment by the app factory and the CLI."""

from __future__ import annotations

import json
import os
import re
import secrets
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

from application import EgressConfig, Governance, checked_config, default_database_url, store_env
from application.chain.proofs import ORIGIN_VAR
from application.store import store_name
from application.store.files import tighten_dir
from domain.egress.allowlist import normalize_entry
from domain.errors import EgressConfigError, FieldError, InvalidInputError
from interface.cache_settings import CacheSettings

MAX_BODY_BYTES = 1024 * 1024
# The package index's upstreams (docs/index-upstream.md): trusted by the operator.
PYPI_UPSTREAM_VAR = "RUNCODE_POLICY_PYPI_UPSTREAM"
NPM_UPSTREAM_VAR = "RUNCODE_POLICY_NPM_UPSTREAM"
DEFAULT_PYPI_UPSTREAM = "https://pypi.org/simple/"
DEFAULT_NPM_UPSTREAM = "https://registry.npmjs.org/"
# How the service itself reaches its upstreams (docs/index-upstream.md).
CA_BUNDLE_VAR = "RUNCODE_POLICY_UPSTREAM_CA_BUNDLE"
PROXY_VAR = "RUNCODE_POLICY_UPSTREAM_PROXY"
FILE_HOSTS_VAR = "RUNCODE_POLICY_UPSTREAM_FILE_HOSTS"
PAGE_DEADLINE_VAR = "RUNCODE_POLICY_UPSTREAM_PAGE_DEADLINE"
FILE_DEADLINE_VAR = "RUNCODE_POLICY_UPSTREAM_FILE_DEADLINE"
STALLED_CLIENT_VAR = "RUNCODE_POLICY_STALLED_CLIENT_SECONDS"
THREADS_VAR = "RUNCODE_POLICY_REQUEST_THREADS"
SEALING_VAR = "RUNCODE_POLICY_AUDIT_SEALING"
CREATE_TABLES_VAR = "RUNCODE_POLICY_CREATE_TABLES"
DEFAULT_PAGE_DEADLINE = 60  # seconds for a whole page or packument, however slowly it arrives
DEFAULT_FILE_DEADLINE = 600  # seconds for a whole file: a 100 MB wheel at 200 kB/s fits
DEFAULT_STALLED_CLIENT = 60  # seconds a client may leave sent bytes unread before it is cut
MAX_DEADLINE = 3600


@dataclass(frozen=True)
class UpstreamOptions:
    """How the service's own upstream fetches go out: whom they trust, through which proxy,
    which file hosts the operator vouches for, and how long each fetch may take in all."""

    ca_bundle: str | None = None  # RUNCODE_POLICY_UPSTREAM_CA_BUNDLE: trusted besides the system's
    proxy: str | None = None  # RUNCODE_POLICY_UPSTREAM_PROXY: http(s)://[user:pass@]host:port
    file_hosts: tuple[str, ...] = ()  # RUNCODE_POLICY_UPSTREAM_FILE_HOSTS: `name` or `*.name`
    page_deadline: float = DEFAULT_PAGE_DEADLINE  # RUNCODE_POLICY_UPSTREAM_PAGE_DEADLINE
    file_deadline: float = DEFAULT_FILE_DEADLINE  # RUNCODE_POLICY_UPSTREAM_FILE_DEADLINE

    def tls_context(self) -> ssl.SSLContext:
        """The system's trust store (OpenSSL's default paths, so SSL_CERT_FILE/SSL_CERT_DIR
        count), plus the configured bundle."""
        return trust(self.ca_bundle)


def trust(ca_bundle: str | None) -> ssl.SSLContext:
    """The client TLS context trusting the system's store and `ca_bundle`. Loading the system's
    store costs a few hundred milliseconds of CPU, so a process builds one per trust settings
    (the bundle as it is on disk, SSL_CERT_FILE, SSL_CERT_DIR) and every upstream client and app
    of the process shares it: a context is not changed by its use and is safe across threads."""
    stamp = None
    if ca_bundle:
        try:
            found = os.stat(ca_bundle)
            stamp = (found.st_mtime_ns, found.st_size)
        except OSError:
            pass  # load_verify_locations names the problem
    return _trust(ca_bundle, stamp, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@lru_cache(maxsize=16)
def _trust(ca_bundle: str | None, *_key) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if ca_bundle:
        context.load_verify_locations(cafile=ca_bundle)
    return context


@dataclass(frozen=True)
class Settings:
    database_url: str
    data_dir: str
    create_tables: bool = True
    egress: EgressConfig = field(default_factory=EgressConfig)  # see egress_config_from_env
    secret_key: str | None = None  # RUNCODE_POLICY_SECRET_KEY; else see console_secret_key()
    proxy_hops: int = 0  # RUNCODE_POLICY_TRUSTED_PROXY_HOPS: reverse proxies whose X-Forwarded-* to trust
    pypi_upstream: str = DEFAULT_PYPI_UPSTREAM  # RUNCODE_POLICY_PYPI_UPSTREAM
    npm_upstream: str = DEFAULT_NPM_UPSTREAM  # RUNCODE_POLICY_NPM_UPSTREAM
    upstream: UpstreamOptions = field(default_factory=UpstreamOptions)  # see upstream_settings
    stalled_client_seconds: int = DEFAULT_STALLED_CLIENT  # RUNCODE_POLICY_STALLED_CLIENT_SECONDS
    # Request threads per worker: set by `serve` for its workers (its --threads); None under
    # any other server, whose threads this process cannot count (interface.index.bounds).
    request_threads: int | None = None  # RUNCODE_POLICY_REQUEST_THREADS
    # The audit chain (interface.audit): the checkpoints' signing key, rotated-out public keys, and
    # whether this process runs the background sealer (off for measurements, and in `serve`'s
    # workers: their parent process seals for them).
    audit_key_file: str | None = None  # RUNCODE_POLICY_AUDIT_KEY_FILE; else generated into data_dir
    audit_previous_keys: tuple[str, ...] = ()  # RUNCODE_POLICY_AUDIT_PREVIOUS_KEYS
    audit_sealing: bool = True  # RUNCODE_POLICY_AUDIT_SEALING
    cache: CacheSettings | None = None  # RUNCODE_POLICY_CACHE_*; None: under data_dir, defaults
    audit_checkpoint_seconds: float = 60.0  # RUNCODE_POLICY_AUDIT_CHECKPOINT_SECONDS
    # Where the checkpoints' origin, the key and the witnesses live (docs/audit-integrity.md).
    audit_origin: str | None = None  # RUNCODE_POLICY_AUDIT_ORIGIN; else this host's name
    audit_witness: str | None = None  # RUNCODE_POLICY_AUDIT_WITNESS: a directory or an http(s) witness
    audit_signer: str | None = None  # RUNCODE_POLICY_AUDIT_SIGNER: a command that signs
    audit_signer_public_key: str | None = None  # RUNCODE_POLICY_AUDIT_SIGNER_PUBLIC_KEY
    audit_trusted_keys: tuple[str, ...] = ()  # RUNCODE_POLICY_AUDIT_TRUSTED_KEYS

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        data_dir = env.get("RUNCODE_POLICY_DATA_DIR", "var")
        pypi_upstream, npm_upstream, upstream = upstream_settings(env)  # InvalidInputError names every bad value
        return cls(
            database_url=env.get("RUNCODE_POLICY_DATABASE_URL") or default_database_url(data_dir),
            data_dir=data_dir,
            create_tables=yes_no(env, CREATE_TABLES_VAR, default=True),
            egress=egress_config_from_env(env),  # EgressConfigError names every bad entry
            secret_key=env.get("RUNCODE_POLICY_SECRET_KEY") or None,
            proxy_hops=proxy_hops(env.get("RUNCODE_POLICY_TRUSTED_PROXY_HOPS", "0")),
            pypi_upstream=pypi_upstream,
            npm_upstream=npm_upstream,
            upstream=upstream,
            stalled_client_seconds=seconds_setting(env, STALLED_CLIENT_VAR, DEFAULT_STALLED_CLIENT),
            request_threads=int(env[THREADS_VAR]) if env.get(THREADS_VAR, "").isdecimal() else None,
            audit_key_file=env.get("RUNCODE_POLICY_AUDIT_KEY_FILE") or None,
            audit_previous_keys=tuple(split_entries(env.get("RUNCODE_POLICY_AUDIT_PREVIOUS_KEYS", ""))),
            audit_sealing=yes_no(env, SEALING_VAR, default=True),
            cache=CacheSettings.from_env(env, data_dir),
            audit_checkpoint_seconds=checkpoint_seconds(env.get("RUNCODE_POLICY_AUDIT_CHECKPOINT_SECONDS", "60")),
            audit_origin=audit_origin(env.get(ORIGIN_VAR) or None),
            audit_witness=env.get("RUNCODE_POLICY_AUDIT_WITNESS") or None,
            audit_signer=env.get("RUNCODE_POLICY_AUDIT_SIGNER") or None,
            audit_signer_public_key=env.get("RUNCODE_POLICY_AUDIT_SIGNER_PUBLIC_KEY") or None,
            audit_trusted_keys=tuple(split_entries(env.get("RUNCODE_POLICY_AUDIT_TRUSTED_KEYS", ""))),
        )

    def cache_settings(self) -> CacheSettings:
        """The index cache's and memory's settings; their defaults under the data directory."""
        return self.cache or CacheSettings.from_env({}, self.data_dir)

    def console_secret_key(self) -> str:
        """The key that signs the console's sessions: the configured one, else one generated once.

        Read lazily (only the console needs it) so CLI commands never write to the data directory.
        """
        return self.secret_key or persisted_secret_key(self.data_dir)


def persisted_secret_key(data_dir: str) -> str:
    """`<data_dir>/secret_key` (mode 0600), created on first use; every worker process sharing
    the data directory then signs sessions with the same key, and restarts keep users signed in."""
    path = os.path.join(data_dir, "secret_key")
    tighten_dir(data_dir)
    if not os.path.exists(path):
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


# The words a yes/no setting takes, in any case: anything else refuses the start, so a typo or an
# `on` cannot quietly mean "no" (RUNCODE_POLICY_AUDIT_SEALING=on turned the sealer off).
YES_WORDS = ("y", "yes", "true", "1")
NO_WORDS = ("n", "no", "false", "0")


def yes_no(env: Mapping[str, str], name: str, default: bool) -> bool:
    """A yes/no setting: one of YES_WORDS or NO_WORDS; unset or blank, `default`."""
    text = env.get(name, "").strip().lower()
    if not text:
        return default
    if text in YES_WORDS or text in NO_WORDS:
        return text in YES_WORDS
    accepted = f"{'/'.join(YES_WORDS)} or {'/'.join(NO_WORDS)}"
    raise InvalidInputError(f"{name} must be {accepted} (any case), not {env[name]!r}")


def proxy_hops(text: str) -> int:
    if not text.strip().isdecimal() or int(text) > 10:
        raise InvalidInputError(
            "RUNCODE_POLICY_TRUSTED_PROXY_HOPS must be a whole number from 0 to 10",
            [FieldError("RUNCODE_POLICY_TRUSTED_PROXY_HOPS", "must be 0 to 10")],
        )
    return int(text)


def checkpoint_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0.1 <= seconds <= 86400:
        raise InvalidInputError(
            "RUNCODE_POLICY_AUDIT_CHECKPOINT_SECONDS must be a number of seconds from 0.1 to 86400",
            [FieldError("RUNCODE_POLICY_AUDIT_CHECKPOINT_SECONDS", "must be 0.1 to 86400")],
        )
    return seconds


def audit_origin(text: str | None) -> str | None:
    """A checkpoint origin's middle part: no spaces nor `+` (c2sp.org/tlog-checkpoint)."""
    if text is not None and not re.fullmatch(r"[!-*,-~]{1,200}", text):
        raise InvalidInputError(
            f"{ORIGIN_VAR} must be printable ASCII without spaces or '+', such as policy.example.com",
            [FieldError(ORIGIN_VAR, "must be 1 to 200 printable characters, no space or '+'")],
        )
    return text


def upstream_settings(env: Mapping[str, str]) -> tuple[str, str, UpstreamOptions]:
    """The PyPI and npm upstreams and how they are reached, or one InvalidInputError naming every
    bad value (one line each)."""
    errors: list[FieldError] = []
    pypi = _upstream_url(env, PYPI_UPSTREAM_VAR, DEFAULT_PYPI_UPSTREAM, errors)
    npm = _upstream_url(env, NPM_UPSTREAM_VAR, DEFAULT_NPM_UPSTREAM, errors)
    options = UpstreamOptions(
        ca_bundle=_ca_bundle(env.get(CA_BUNDLE_VAR, "").strip(), errors),
        proxy=_proxy(env.get(PROXY_VAR, "").strip(), errors),
        file_hosts=_file_hosts(split_entries(env.get(FILE_HOSTS_VAR, "")), errors),
        page_deadline=seconds_setting(env, PAGE_DEADLINE_VAR, DEFAULT_PAGE_DEADLINE, errors),
        file_deadline=seconds_setting(env, FILE_DEADLINE_VAR, DEFAULT_FILE_DEADLINE, errors),
    )
    if errors:
        raise InvalidInputError("invalid upstream settings (the service does not start):", errors)
    return pypi, npm, options


def _upstream_url(env: Mapping[str, str], name: str, default: str, errors: list[FieldError]) -> str:
    """An upstream base URL: http(s) with a host; always ending in `/` (paths are joined to it)."""
    url = (env.get(name) or default).strip()
    parts = _url_parts(url)
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        errors.append(
            FieldError(
                name, f"{_shown(url)} is not an http:// or https:// URL with a host, no query or fragment ({default})"
            )
        )
        return default
    return url if url.endswith("/") else url + "/"


def _shown(url: str) -> str:
    """A URL as a refusal quotes it: without the user and password it may carry."""
    return repr(_CREDENTIALS.sub("//", url))


_CREDENTIALS = re.compile(r"//[^/?#]*@")


def _url_parts(url: str):
    """`url` split, its port read; None when it cannot be (`http://[::1`, a port that is no number)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return None
    return parts


def _ca_bundle(path: str, errors: list[FieldError]) -> str | None:
    if not path:
        return None
    absolute = os.path.abspath(path)
    try:
        trust(absolute)  # the context the upstreams will use, built once
    except FileNotFoundError:
        errors.append(FieldError(CA_BUNDLE_VAR, f"no such file {path!r}"))
    except (OSError, ssl.SSLError, ValueError) as error:
        errors.append(FieldError(CA_BUNDLE_VAR, f"{path!r} is not a readable PEM file of certificates ({error})"))
    return absolute


def _proxy(url: str, errors: list[FieldError]) -> str | None:
    if not url:
        return None
    parts = _url_parts(url)
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
    ):
        shown = f"{parts.scheme}://{parts.hostname}" if parts is not None and parts.hostname else _shown(url)
        errors.append(FieldError(PROXY_VAR, f"{shown} is not an http:// or https:// proxy URL (http://proxy:3128)"))
        return None
    return url


def _file_hosts(entries: list[str], errors: list[FieldError]) -> tuple[str, ...]:
    hosts = []
    for index, entry in enumerate(entries):
        try:
            if "/" in entry or ":" in entry:
                raise ValueError("write the host name alone (files.example.com), not a URL or an address")
            hosts.append(normalize_entry(entry))
        except ValueError as error:
            errors.append(FieldError(f"{FILE_HOSTS_VAR}[{index}]", f"{entry!r} is not a hostname: {error}"))
    return tuple(dict.fromkeys(hosts))


def seconds_setting(env: Mapping[str, str], name: str, default: int, errors: list[FieldError] | None = None) -> int:
    """A whole number of seconds from 1 to MAX_DEADLINE; a bad one is added to `errors` (or
    raised at once when no list is given)."""
    text = env.get(name, "").strip() or str(default)
    if text.isdecimal() and 1 <= int(text) <= MAX_DEADLINE:
        return int(text)
    error = FieldError(name, f"{text!r} is not a whole number of seconds from 1 to {MAX_DEADLINE}")
    if errors is None:
        raise InvalidInputError(f"{name} must be a whole number of seconds", [error])
    errors.append(error)
    return default


def open_governance(settings: Settings, *, as_found: bool = False) -> Governance:
    """The Governance application on the configured store, with the deployment's egress rules.
    `as_found`: no tables made and no read models rebuilt (what verifies the store must not
    rewrite it). A store whose tables are not made here and are not there is refused in words:
    every query of it would fail with `no such table`, which reads as a store out of reach."""
    if settings.database_url == default_database_url(settings.data_dir):
        tighten_dir(settings.data_dir)  # the store lives in the service's own data directory
    create = settings.create_tables and not as_found
    governance = Governance(env=store_env(settings.database_url, create_table=create), egress=settings.egress)
    if not create and not governance.readmodel.has_tables():
        governance.close()
        raise MissingTables(_missing_tables(settings))
    return governance


class MissingTables(InvalidInputError):
    title = "The store has no tables"


def _missing_tables(settings: Settings) -> str:
    where = f"the store ({store_name(settings.database_url)}) is reachable but has no runcode-policy tables"
    if settings.create_tables:  # opened as found, to be verified
        return f"{where}: nothing was ever recorded there; point at the store to check"
    return (
        f"{where}: they are not created because {CREATE_TABLES_VAR}=n; create them "
        "(start the service once without it) or unset it"
    )


# The deployment's egress configuration, read from the environment (or a JSON file it names).
#
# - `RUNCODE_POLICY_EGRESS_ALLOWLIST`: unset = open egress. Set = hostname entries separated by
#   commas and/or newlines. Set but EMPTY = the empty allowlist = deny every name (an allowlist
#   `[]` denies all names). We fail closed on purpose: a variable that was meant to carry a list but
#   came through empty must not silently open egress; to have open egress, unset it.
# - `RUNCODE_POLICY_EGRESS_DENY_RANGES`: extra CIDRs, same separators; empty = none.
# - `RUNCODE_POLICY_EGRESS_PORTS`: unset = any port; set = the only ports egress may use.
# - `RUNCODE_POLICY_EGRESS_SCHEMES`: unset = http, https; set = the URL schemes a target may name.
# - `RUNCODE_POLICY_EGRESS_CONFIG`: path of a JSON file with the keys of FILE_KEYS (a missing key
#   = unset; any other key is refused, so a typo cannot quietly mean "open"). It cannot be
#   combined with the variables above: two sources for one allowlist invite surprises.
#
# Every bad entry of every setting is named in one EgressConfigError, so the service refuses to
# start with the whole list to fix. The test-only `allow_addresses` is never read from here.
ALLOWLIST_VAR = "RUNCODE_POLICY_EGRESS_ALLOWLIST"
DENY_RANGES_VAR = "RUNCODE_POLICY_EGRESS_DENY_RANGES"
CONFIG_VAR = "RUNCODE_POLICY_EGRESS_CONFIG"
SETTING_VARS = {  # setting -> its variable
    "hostname_allowlist": ALLOWLIST_VAR,
    "deny_ranges": DENY_RANGES_VAR,
    "ports": "RUNCODE_POLICY_EGRESS_PORTS",
    "schemes": "RUNCODE_POLICY_EGRESS_SCHEMES",
}
FILE_KEYS = tuple(SETTING_VARS)
_SEPARATORS = re.compile(r"[,\n]")


def egress_config_from_env(env: Mapping[str, str]) -> EgressConfig:
    """The deployment's EgressConfig; EgressConfigError (naming every bad entry) when invalid."""
    path = env.get(CONFIG_VAR)
    if path:
        mixed = [name for name in SETTING_VARS.values() if name in env]
        if mixed:
            raise _refusal(CONFIG_VAR, f"cannot be combined with {', '.join(mixed)}; use one source")
        return _from_file(Path(path))
    settings = {name: split_entries(env[var]) if var in env else None for name, var in SETTING_VARS.items()}
    return _config(settings, SETTING_VARS)


def split_entries(text: str) -> list[str]:
    """`a.example, b.example` or one per line; blanks between separators are dropped."""
    return [piece.strip() for piece in _SEPARATORS.split(text) if piece.strip()]


def _from_file(path: Path) -> EgressConfig:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise _refusal(CONFIG_VAR, f"cannot read {path} as JSON: {error}") from None
    if not isinstance(data, dict):
        raise _refusal(CONFIG_VAR, f"{path} must hold a JSON object with keys {', '.join(FILE_KEYS)}")
    unknown = sorted(set(data) - set(FILE_KEYS))
    if unknown:
        raise _refusal(
            CONFIG_VAR, f"{path} has unknown key(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(FILE_KEYS)}"
        )
    return _config({key: data.get(key) for key in FILE_KEYS}, {key: f"{path}: {key}" for key in FILE_KEYS})


def _config(settings: dict, fields: dict) -> EgressConfig:
    # Validate under the operator's names (the variable or the file's key), then build.
    return EgressConfig(**checked_config(settings, fields))


def _refusal(field: str, message: str) -> EgressConfigError:
    return EgressConfigError(f"invalid egress configuration: {field} {message}", [FieldError(field, message)])
