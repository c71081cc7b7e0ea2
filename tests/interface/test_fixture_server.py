"""The fixture upstreams report their own failures, not a client hanging up mid-answer (wrk closing
its connections at the end of a bench load printed hundreds of BrokenPipeError tracebacks)."""

from __future__ import annotations

import pytest

from tests.support.fixture_server import FileHost


@pytest.fixture
def host():
    server = FileHost({})
    yield server
    server.close()


def _fail_with(host, error: BaseException) -> None:
    try:
        raise error
    except BaseException:
        host._servers[0].handle_error(None, ("127.0.0.1", 1))


@pytest.mark.parametrize("error", [BrokenPipeError(32, "Broken pipe"), ConnectionResetError(104, "reset")])
def test_a_client_hanging_up_is_not_reported(host, capsys, error):
    _fail_with(host, error)
    assert capsys.readouterr().err == ""


def test_a_failure_of_the_fixture_itself_is_reported(host, capsys):
    _fail_with(host, KeyError("no such file"))
    err = capsys.readouterr().err
    assert "Traceback" in err and "KeyError: 'no such file'" in err
