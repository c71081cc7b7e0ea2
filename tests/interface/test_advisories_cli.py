"""`runcode-policy advisories import` against a real store: a directory in the OpenSSF
malicious-packages layout, one event, and a version every workspace then refuses."""

from __future__ import annotations

from pathlib import Path

from application.governance import Governance
from application.store import store_env
from tests.interface.test_cli import acme, cli  # noqa: F401 - fixtures

OSV = Path(__file__).parents[1] / "corpus" / "osv"


def test_importing_the_malicious_packages_layout_makes_every_record_known(cli, acme, database_url):  # noqa: F811
    imported = cli("advisories", "import", str(OSV))
    assert imported.exit_code == 0, imported.output
    assert "imported 3 advisories (3 PyPI and npm packages), revision sha256:" in imported.stderr
    app = Governance(env=store_env(database_url))
    try:
        assert app.advisories.affecting("node", "0-dns", "9.9.9") == ["MAL-2022-9"]
        assert app.advisories.affecting("python", "0_8", "0.0.0.1") == ["MAL-2025-2925"]
        assert app.advisories.affecting("python", "0-8", "0.0.0.2") == []
    finally:
        app.close()


def test_the_same_file_set_is_the_same_revision_and_a_missing_path_is_refused(cli, acme):  # noqa: F811
    first = cli("advisories", "import", str(OSV / "malicious" / "npm"))
    again = cli("advisories", "import", str(OSV / "malicious" / "npm"), "--revision", "mine")
    assert first.exit_code == 0 and again.exit_code == 0 and "revision mine" in again.stderr
    missing = cli("advisories", "import", str(OSV / "nowhere"))
    assert missing.exit_code == 1 and "is neither a file, a directory nor an http(s) URL" in missing.output
