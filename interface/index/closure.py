"""The seam between dependency closures (`application.closure`) and the index's own upstream
clients: the same pages, packuments and PEP 658 metadata files the proxies read, fetched the
same way (egress-judged, bounded, timed out), with "upstream has no such package" as None.

The Python target is the service's own interpreter and platform: its environment markers
(`packaging.markers.default_environment`) and the wheel tags it supports (`packaging.tags`).
"""

from __future__ import annotations

import functools

from flask import current_app
from packaging.markers import default_environment
from packaging.tags import sys_tags
from packaging.utils import canonicalize_name

from application.closure import Fetchers, Target
from interface.index import core_metadata, packument, simple
from interface.index.npm import fetch_packument, upload_times
from interface.index.upstream import bad_gateway, refused_by_upstream
from interface.problems import HTTPProblem


@functools.cache
def service_target() -> Target:
    return Target(dict(default_environment()), frozenset(sys_tags()))


def fetchers() -> Fetchers:
    pypi = current_app.extensions["pypi_upstream"]

    def pypi_page(name: str) -> dict | None:
        found = pypi.page(pypi.url(f"{name}/"), simple.UPSTREAM_ACCEPT)
        if found.status == 404:
            return None
        if found.status != 200:
            raise refused_by_upstream(found.status, repr(name))
        try:
            page = simple.read_page(found.body, found.content_type, found.url)
        except simple.PageError as error:
            raise bad_gateway(str(error)) from None
        for entry in page["files"]:
            entry["version"] = simple.file_version(entry, canonicalize_name(name))
        return page

    def pypi_requires(url: str) -> list[str]:
        return core_metadata.requires_dist(core_metadata.fetch(pypi, url))

    def npm_packument(name: str) -> dict | None:
        try:
            return fetch_packument(name, packument.ABBREVIATED)
        except HTTPProblem as error:
            if error.status == 404:
                return None
            raise

    return Fetchers(pypi_page, pypi_requires, npm_packument, service_target(), upload_times)


def request_closure(governance, workspace: str, request_id: str) -> dict:
    """The dependency closure of what a request asks for (the API's and the console's approval)."""
    asked = governance.access.request(workspace, request_id)
    return governance.closures.closure(workspace, asked["language"], [asked["name"]], fetchers())
