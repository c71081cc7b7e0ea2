"""What the CLI writes and how it fails: output files replaced only whole and never a device, a
pipe or a symlink put in their place; a stop mid-write leaves nothing behind; and every failure
a person can cause (an unreadable file, a damaged store, a bad number) is one line, no traceback."""

from __future__ import annotations

import json
import os
import signal
import stat
import threading

import pytest
from click.testing import CliRunner

from interface.cli import main
from interface.exports import Stopped, output_file
from tests.support.audit_key import service_key


@pytest.fixture
def cli(tmp_path):
    """On SQLite: these are about files and failures, not the store's kind."""
    runner = CliRunner()
    env = {
        "RUNCODE_POLICY_DATABASE_URL": f"sqlite:///{tmp_path}/store.sqlite",
        "RUNCODE_POLICY_DATA_DIR": str(tmp_path / "data"),
    }
    service_key(tmp_path / "data")  # on the service's host

    def run(*args: str):
        return runner.invoke(main, list(args), env=env)

    return run


@pytest.fixture
def acme(cli):
    assert cli("workspace", "create", "acme").exit_code == 0
    assert cli("policy", "add", "-w", "acme", "python", "deny", "numpy").exit_code == 0


def _no_traceback(done) -> None:
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    assert "Traceback" not in done.output


def test_an_export_through_a_symlink_replaces_the_file_it_names_and_keeps_the_link_and_mode(cli, acme, tmp_path):
    real, link = tmp_path / "real.csv", tmp_path / "link.csv"
    real.write_text("old\n")
    real.chmod(0o640)
    link.symlink_to(real)
    done = cli("decisions", "export", "-w", "acme", "-o", str(link))
    assert done.exit_code == 0, done.output
    assert link.is_symlink() and real.read_text().startswith("id,at,")
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".part")) == []


def test_an_export_to_a_pipe_is_written_into_it_not_put_in_its_place(cli, acme, tmp_path):
    """A FIFO (or `/dev/stdout`, `/dev/null` as root) was replaced by a regular file."""
    fifo, read = tmp_path / "pipe", []
    os.mkfifo(fifo)
    reader = threading.Thread(target=lambda: read.append(fifo.read_text()))
    reader.start()
    done = cli("audit", "checkpoints", "-w", "acme", "-o", str(fifo))
    reader.join(timeout=10)
    assert done.exit_code == 0, done.output
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and json.loads(read[0])["workspace"] == "acme"


def test_checkpoints_that_cannot_be_written_are_refused_in_one_line(cli, acme):
    done = cli("audit", "checkpoints", "-w", "acme", "-o", "/dev/full")
    assert done.exit_code == 1 and "cannot write /dev/full: No space left on device" in done.output
    _no_traceback(done)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_stop_signal_while_writing_leaves_no_partial_file(tmp_path):
    """`timeout`, systemd and Kubernetes stop with SIGTERM: the partial export had stayed."""
    target = tmp_path / "out.csv"
    with pytest.raises(Stopped), output_file(str(target)) as out:
        out.write("half of it")
        os.kill(os.getpid(), signal.SIGTERM)
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler was only for the write


def test_verify_says_how_many_records_it_left_unchecked_as_not_sealed_yet(cli, acme):
    """It checks what is sealed (a forged record must not be sealed by the check itself)."""
    done = cli("audit", "verify", "-w", "acme")
    pending = json.loads(done.stdout)["unsealed"]
    assert done.exit_code == 0 and pending > 0
    assert f"{pending} recorded since are not sealed yet (audit checkpoint seals them)" in done.output
    assert cli("audit", "checkpoint", "-w", "acme").exit_code == 0
    done = cli("audit", "verify", "-w", "acme")
    assert json.loads(done.stdout)["unsealed"] == 0 and "not sealed yet" not in done.output


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"", "holds no decisions"),
        (b"id,at,language\n1,2,python\n", "line 1 is not a JSON object"),
        (b"\xff\xfe{}\n", "is not UTF-8 text"),
    ],
)
def test_verify_export_of_what_is_not_an_export_says_so(cli, acme, tmp_path, content, said):
    export, copied = tmp_path / "export.jsonl", tmp_path / "checkpoints.json"
    export.write_bytes(content)
    assert cli("audit", "checkpoint", "-w", "acme").exit_code == 0
    cli("audit", "checkpoints", "-w", "acme", "-o", str(copied))
    done = cli("audit", "verify-export", str(export), "--checkpoints", str(copied), "--public-key", str(copied))
    assert done.exit_code == 1 and said in done.output, done.output
    _no_traceback(done)


def test_a_public_key_that_is_not_text_is_refused_naming_it(cli, acme, tmp_path):
    key = tmp_path / "key.der"
    key.write_bytes(b"\x30\x2a\x30\x05\x06\x03\x2b\x65\x70\x03\x21\x00" + bytes(range(200, 232)))  # DER
    done = cli("audit", "verify", "-w", "acme", "--public-key", str(key))
    assert done.exit_code == 1 and f"{key} is not UTF-8 text" in done.output
    _no_traceback(done)


def test_a_damaged_store_or_a_directory_in_its_place_is_refused_in_one_line(tmp_path):
    runner = CliRunner()
    damaged = tmp_path / "damaged.sqlite"
    damaged.write_bytes(b"this is not a database" * 100)
    directory = tmp_path / "dir.sqlite"
    directory.mkdir()
    for store, said in ((damaged, "cannot be read as a runcode-policy store"), (directory, "cannot open")):
        done = runner.invoke(main, ["policy", "show"], env={"RUNCODE_POLICY_DATABASE_URL": f"sqlite:///{store}"})
        assert done.exit_code == 1 and said in done.output, done.output
        _no_traceback(done)


def test_an_empty_data_dir_and_a_nan_timeout_are_usage_errors(tmp_path):
    runner = CliRunner()
    done = runner.invoke(main, ["--data-dir", "", "workspace", "create", "zz"])
    assert done.exit_code == 2 and "--data-dir" in done.output
    env = {"RUNCODE_POLICY_DATABASE_URL": f"sqlite:///{tmp_path}/s.sqlite"}
    done = runner.invoke(main, ["egress-proxy", "-w", "acme", "--head-timeout", "nan"], env=env)
    assert done.exit_code == 2 and "'nan' is not a number of seconds" in done.output


def test_a_directory_in_a_files_place_is_one_line_naming_the_option(cli, acme, tmp_path):
    """As a damaged store is: exit 1, not click's three-line usage block (exit 2)."""
    folder = tmp_path / "folder"
    folder.mkdir()
    key = tmp_path / "key.json"
    key.write_text(cli("audit", "public-key").stdout)
    for command, option in [
        (("decisions", "export", "-w", "acme", "-o", str(folder)), "--output"),
        (("audit", "checkpoints", "-w", "acme", "-o", str(folder)), "--output"),
        (("audit", "verify", "-w", "acme", "--checkpoints", str(folder)), "--checkpoints"),
        (("audit", "verify-export", str(key), "--checkpoints", str(folder), "--public-key", str(key)), "--checkpoints"),
        (("audit", "verify-export", str(folder), "--public-key", str(key)), "EXPORT"),
    ]:
        done = cli(*command)
        assert done.exit_code == 1, (command, done.output)
        assert done.output.splitlines() == [f"Error: {option}: {folder} is a directory, not a file"], done.output
        _no_traceback(done)
