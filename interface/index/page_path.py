"""A lean WSGI path for `GET`/`HEAD /pypi/{ws}/simple/{project}/`, in front of Flask.

A project page answered from the index's rendered copy costs little beyond Flask's own
per-request machinery (its contexts, routing, hooks) and the token's read, so the page is judged
and answered here, through the route's own steps (`pypi.judged_page`: judging, recording, the
kept page, the rendered answer with its ETag and 304), within the app's context only, with the
same latency metric. Everything that would be refused before judging goes to Flask unchanged, so
Flask answers it: other routes and methods, a name not in its normalized form (the redirect), a
name too long, an `Accept` it cannot meet, a missing, unknown, revoked or other workspace's token,
an auditor's. A refusal raised after judging began (a failed run, an upstream's failure, a name
upstream lacks, an unreadable store, an unexpected failure) is handed to Flask's view of the same
route to raise (`pypi.RAISED`), never judged again, so its answer and its hooks are Flask's own.
IndexBounds stays around this path: its rate limits and slots are spent as before.
"""

from __future__ import annotations

import re
import time

from flask import Flask
from packaging.utils import canonicalize_name

from interface import metrics
from interface.index import pypi
from interface.index.access import authenticated, refusal, within_limits
from interface.index.bounds import mark_in_memory
from interface.problems import HTTPProblem

RULE = "/pypi/<ws>/simple/<project>/"
_PATH = re.compile(r"^/pypi/([^/]+)/simple/([^/]+)/$")
# What Flask's `request.url_root` is made of (after ProxyFix, when configured, rewrote them).
_ROOT_KEYS = ("wsgi.url_scheme", "HTTP_HOST", "SERVER_NAME", "SERVER_PORT", "SCRIPT_NAME")
MAX_ROOTS = 64  # url roots remembered (the Host header is the client's: bounded)


class ProjectPagePath:
    def __init__(self, app: Flask, wsgi_app):
        self.app, self.next = app, wsgi_app
        self._roots: dict[tuple, str] = {}

    def __call__(self, environ, start_response):
        method, path = environ.get("REQUEST_METHOD"), environ.get("PATH_INFO", "")
        found = _PATH.match(path) if method in pypi.READ and path.isascii() else None
        if found is None:
            return self.next(environ, start_response)
        started = time.perf_counter()
        ws, project = found.groups()
        with self.app.app_context():
            response = self._answer(environ, ws, project)
        if response is None:  # Flask's own context, not this one
            return self.next(environ, start_response)
        mark_in_memory(response, environ)
        metrics.LATENCY.labels(metrics.method_label(method), RULE, str(response.status_code)).observe(
            time.perf_counter() - started
        )
        return response(environ, start_response)

    def _answer(self, environ, ws: str, project: str):
        """The page's answer; None: Flask's to answer (a refusal raised while judging in RAISED)."""
        try:
            admitted = self._admitted(environ, ws, project)
        except Exception:  # e.g. an unreadable store: nothing judged yet, Flask meets it again
            return None
        if admitted is None:
            return None
        try:
            url_root = self._url_root(environ)
            return pypi.judged_page(admitted[0], ws, project, admitted[1], environ, url_root)
        except Exception as error:
            environ[pypi.RAISED] = error
            return None

    def _url_root(self, environ) -> str:
        """Flask's `request.url_root` for this environ, worked out once per distinct root."""
        key = tuple(environ.get(k) for k in _ROOT_KEYS)
        root = self._roots.get(key)
        if root is None:
            root = self.app.request_class(environ).url_root
            if len(self._roots) >= MAX_ROOTS:
                self._roots.clear()
            self._roots[key] = root
        return root

    def _admitted(self, environ, ws: str, project: str):
        """(the reader, the media type) when the page is judged here; None: Flask's to answer."""
        if project != canonicalize_name(project):
            return None
        try:
            within_limits(project=project)
            media = pypi.negotiated(environ.get("HTTP_ACCEPT", ""))
        except HTTPProblem:
            return None
        principal = authenticated(environ.get("HTTP_AUTHORIZATION", ""))
        if refusal(principal, ws, pypi.UNAUTHENTICATED) is not None:
            return None
        return principal, media


def install(app: Flask) -> None:
    app.wsgi_app = ProjectPagePath(app, app.wsgi_app)
