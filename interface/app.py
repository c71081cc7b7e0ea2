"""The Flask app factory: settings from the environment, one Governance application per process."""

from __future__ import annotations

from collections.abc import Mapping

from flask import Flask, jsonify

from application.config import store_env
from application.governance import Governance
from interface import console, egress_api, metrics, problems  # noqa: F401 - egress_api registers routes
from interface.api import api, blueprint
from interface.problems import problem
from interface.routing import openapi_document
from interface.settings import MAX_BODY_BYTES, Settings

API_VERSION = "1.0.0"


def open_governance(settings: Settings) -> Governance:
    return Governance(env=store_env(settings.database_url, create_table=settings.create_tables),
                      egress=settings.egress)


def create_app(env: Mapping[str, str] | None = None, governance: Governance | None = None) -> Flask:
    settings = Settings.from_env(env)
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    app.json.sort_keys = False
    app.extensions["governance"] = governance or open_governance(settings)
    app.extensions["settings"] = settings
    problems.install(app)
    metrics.install(app)
    app.register_blueprint(blueprint)
    console.install(app)  # the admin console at /console: blueprint, secret key, CSRF
    _operations(app)
    return app


def _operations(app: Flask) -> None:
    document = openapi_document(api, "runcode-policy", API_VERSION)

    @app.get("/api/v1/openapi.json")
    def _openapi():
        return jsonify(document)

    @app.get("/healthz")
    def _healthz():
        return {"status": "ok"}

    @app.get("/readyz")
    def _readyz():
        try:
            app.extensions["governance"].workspaces()
        except Exception as error:  # any store failure means "not ready"
            return problem(503, "Store unavailable", f"the store is not reachable: {error}")
        return {"status": "ready"}
