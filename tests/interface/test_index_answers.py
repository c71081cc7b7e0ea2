"""A judged answer (interface.index.answers) is what werkzeug's `make_conditional` makes of it, for
every request: the answer nobody made conditional skips its parsing, not its result."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import pytest
from flask import Flask, Response
from werkzeug.test import EnvironBuilder

from interface.index.answers import CACHE_CONTROL, judged

BODY, TYPE, VERSION = b'{"files": []}', "application/vnd.pypi.simple.v1+json", 7


def werkzeugs(environ: dict) -> Response:
    """The answer as make_conditional makes it, from the same ETag."""
    response = Response(BODY, content_type=TYPE)
    response.set_etag(etag())
    response.headers["Cache-Control"] = CACHE_CONTROL
    response.headers["Vary"] = "Accept"
    return response.make_conditional(environ)


def shown(response: Response) -> tuple:
    headers = sorted((k, v) for k, v in response.headers.items() if k != "Date")
    return response.status_code, headers, response.get_data()


def etag() -> str:
    """The answer's ETag, unquoted (a POST is never made conditional)."""
    return judged(BODY, TYPE, VERSION, {"REQUEST_METHOD": "POST"}).get_etag()[0]


@pytest.mark.parametrize(
    "method, headers",
    [
        ("GET", {}),
        ("HEAD", {}),
        ("POST", {}),
        ("GET", {"If-None-Match": "MATCH"}),
        ("HEAD", {"If-None-Match": "MATCH"}),
        ("GET", {"If-None-Match": '"other"'}),
        ("GET", {"If-None-Match": "*"}),
        ("GET", {"If-Match": '"other"', "If-None-Match": "MATCH"}),
        ("GET", {"If-Modified-Since": "Mon, 07 Dec 2026 10:00:00 GMT"}),
        ("GET", {"Range": "bytes=0-3"}),
        ("GET", {"If-Range": "MATCH", "Range": "bytes=0-3"}),
    ],
)
def test_an_answer_is_what_make_conditional_makes_of_it(method, headers):
    sent = {k: f'"{etag()}"' if v == "MATCH" else v for k, v in headers.items()}
    with Flask(__name__).app_context():
        before = datetime.now(UTC).replace(microsecond=0)
        ours = judged(BODY, TYPE, VERSION, EnvironBuilder(method=method, headers=sent).get_environ())
        theirs = werkzeugs(EnvironBuilder(method=method, headers=sent).get_environ())
        after = datetime.now(UTC)
    assert shown(ours) == shown(theirs)
    assert ("Date" in ours.headers) == ("Date" in theirs.headers) == (method != "POST")
    if method != "POST":
        assert before <= parsedate_to_datetime(ours.headers["Date"]) <= after
    if headers.get("If-None-Match") == "MATCH" and "If-Match" not in headers:
        assert ours.status_code == 304  # the case the short cut must not take
