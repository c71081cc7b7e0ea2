"""The Flask app factory: settings from the environment, one Governance application per process."""

from __future__ import annotations

from collections.abc import Mapping

from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix

from application import Governance
from interface import api, audit, console, index, metrics, problems, services
from interface.bodies import ArrivingBodies, BoundedBodies
from interface.settings import MAX_BODY_BYTES, Settings, open_governance
from interface.url_rules import LazyBuildRule


class _Service(Flask):
    url_rule_class = LazyBuildRule  # a class attribute: Flask adds its static route in __init__


def create_app(env: Mapping[str, str] | None = None, governance: Governance | None = None) -> Flask:
    settings = Settings.from_env(env)
    app = _Service(__name__)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    app.json.sort_keys = False
    built = services.install(app, governance or open_governance(settings), settings)
    audit.install(built.governance, settings)  # the signing key; sealing in the background
    problems.install(app)
    metrics.install(app)
    metrics.count_integrity_alarms(built.governance.integrity)
    app.register_blueprint(api.blueprint)
    console.install(app)  # the admin console at /console: blueprint, secret key, CSRF
    app.register_blueprint(api.operations.blueprint)
    api.evaluate_path.install(app)  # the hot path in front of Flask
    app.wsgi_app = BoundedBodies(app.wsgi_app, MAX_BODY_BYTES)  # in front of all that reads a body
    app.wsgi_app = ArrivingBodies(app.wsgi_app, settings.request_threads)  # slow bodies hold no thread they need
    index.install(app)  # the package index: /pypi/{ws}/simple/ and /npm/{ws}/
    if settings.proxy_hops:  # behind TLS-terminating proxies: HTTPS as the client saw it (Secure cookies)
        n = settings.proxy_hops
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=n, x_proto=n, x_host=n, x_port=n)
    return app
