"""What a worker keeps in memory for the index stays within `RUNCODE_POLICY_INDEX_MEMORY_BYTES`,
shared as application.index.memory says, whatever it serves; what it forgets is served again,
judged and alike, from the disk cache. A real server, a real upstream on loopback."""

from __future__ import annotations

import pytest

from application.index.memory import IndexMemory
from domain.errors import InvalidInputError
from interface import create_app
from interface.cache_settings import MEMORY_BYTES_VAR, CacheSettings
from tests.support.http_client import LiveServer
from tests.support.many_projects import ManyProjects

JSON_ACCEPT = "application/vnd.pypi.simple.v1+json"
MEMORY = 1024 * 1024
PAGES = 150  # ~6 KiB each: three times what the rendered answers' share holds


def test_a_worker_keeps_within_its_index_memory_and_serves_what_it_forgot_alike(open_app, tmp_path):
    upstream = ManyProjects()
    env = {
        "RUNCODE_POLICY_DATA_DIR": str(tmp_path),
        "RUNCODE_POLICY_PYPI_UPSTREAM": upstream.url + "/simple/",
        MEMORY_BYTES_VAR: str(MEMORY),
    }
    app = open_app()
    token = app.create_workspace("acme", by="founder")["token"]
    flask_app = create_app(env=env, governance=app)
    server = LiveServer(flask_app)
    try:
        first = server.call("GET", "/pypi/acme/simple/p0/", token, headers={"Accept": JSON_ACCEPT})
        for n in range(1, PAGES):
            page = server.call("GET", f"/pypi/acme/simple/p{n}/", token, headers={"Accept": JSON_ACCEPT})
            assert page.status == 200 and len(page.json["files"]) == 24
        memory = IndexMemory(MEMORY)
        rendered = flask_app.extensions["pypi_rendered"].memory.weight
        assert memory.share("rendered") // 2 < rendered <= memory.share("rendered")  # filled, and no further
        weights = app.index.gate.weights()
        assert all(weights[name] <= memory.share(name) for name in weights) and weights["fetches"] > 0
        pages = flask_app.extensions["pypi_pages"].memory
        assert pages is flask_app.extensions["npm_pages"].memory  # one share for both upstreams' pages
        assert 0 < pages.weight <= memory.share("pages")
        again = server.call("GET", "/pypi/acme/simple/p0/", token, headers={"Accept": JSON_ACCEPT})
        assert again.status == 200 and again.body == first.body
    finally:
        server.close()
        upstream.close()


@pytest.mark.parametrize("value", ["lots", "-1", "1048575", "1.5e6", "2²"])  # "2²".isdigit(), yet no int
def test_an_index_memory_that_cannot_be_is_refused_naming_the_setting(value: str):
    with pytest.raises(InvalidInputError) as refused:
        CacheSettings.from_env({MEMORY_BYTES_VAR: value}, "/data")
    assert [error.field for error in refused.value.errors] == [MEMORY_BYTES_VAR]
    assert "at least 1048576" in refused.value.errors[0].message


def test_the_index_memory_defaults_to_64_mib_and_takes_what_is_set():
    assert CacheSettings.from_env({}, "/data").memory.total == 64 * 1024 * 1024
    assert CacheSettings.from_env({MEMORY_BYTES_VAR: "4194304"}, "/data").memory.total == 4 * 1024 * 1024
