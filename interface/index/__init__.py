"""The package index: a PyPI simple-index proxy (`/pypi/{ws}/...`) and an npm registry proxy
(`/npm/{ws}/...`), thin views over the application's package index (`PackageIndex.gate.judge`; docs/package-index.md).

`install` registers both, opens one upstream client for each configured upstream, with the pages
kept of it, over one on-disk cache (application.cache) that every worker shares, and bounds what
index requests may hold (interface.index.bounds).
"""

from __future__ import annotations

from flask import Flask

from application.cache import DiskCache
from interface.api.blueprint import api
from interface.index import declarations, npm, page_path, pypi
from interface.index.answers import Rendered
from interface.index.bounds import IndexBounds, mark_in_memory
from interface.index.pages import Pages, fresh_pages
from interface.index.upstream import Upstream
from interface.services import services


def install(app: Flask) -> None:
    settings, egress = services(app).settings, services(app).egress
    kept = settings.cache_settings()
    app.extensions["index_cache"] = cache = DiskCache(kept.directory, kept.max_bytes)
    app.extensions["pypi_rendered"] = Rendered(kept.memory.share("rendered"))
    app.extensions["pypi_declarations"] = declarations.memory()
    services(app).governance.index.gate.keep_within(kept.memory)
    # The service's own fetches: public registries allowed (sandboxes' egress refuses them).
    fresh = fresh_pages(kept.memory.share("pages"))  # one memory for both upstreams' pages
    for key, base in (("pypi_upstream", settings.pypi_upstream), ("npm_upstream", settings.npm_upstream)):
        app.extensions[key] = Upstream(base, egress.judge_upstream_egress, settings.upstream)
        pages = Pages(app.extensions[key], cache, kept.page_seconds, fresh)
        app.extensions[key.replace("upstream", "pages")] = pages
        # Whoever stops serving this app closes these (their pooled upstream connections).
        app.extensions.setdefault("on_close", []).append(app.extensions[key].close)
    app.register_blueprint(pypi.blueprint)
    app.register_blueprint(npm.blueprint)
    page_path.install(app)  # the cached project page in front of Flask
    # Outermost: a request refused here costs no thread beyond its own, and no store access.
    rated = (api,)  # the API routes with a rate of their own
    app.wsgi_app = IndexBounds(app.wsgi_app, settings.request_threads, app.config["SESSION_COOKIE_NAME"], rated)
    app.after_request(mark_in_memory)
