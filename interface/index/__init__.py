"""The package index: a PyPI simple-index proxy (`/pypi/{ws}/...`) and an npm registry proxy
(`/npm/{ws}/...`), thin views over `Governance.judge_index` (API.md "Package index").

`install` registers both and opens one upstream client for each configured upstream.
"""

from __future__ import annotations

from flask import Flask

from interface.index import npm, pypi
from interface.index.upstream import Upstream


def install(app: Flask) -> None:
    settings, governance = app.extensions["settings"], app.extensions["governance"]
    # The service's own fetches: public registries allowed (sandboxes' egress refuses them).
    app.extensions["pypi_upstream"] = Upstream(settings.pypi_upstream, governance.judge_upstream_egress)
    app.extensions["npm_upstream"] = Upstream(settings.npm_upstream, governance.judge_upstream_egress)
    app.register_blueprint(pypi.blueprint)
    app.register_blueprint(npm.blueprint)
