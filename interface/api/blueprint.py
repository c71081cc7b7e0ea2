"""The API blueprint and its route registry: every view module declares its routes on `api`."""

from __future__ import annotations

from flask import Blueprint

from interface.api.routing import Api

blueprint = Blueprint("api", __name__, url_prefix="/api/v1")
api = Api(blueprint, "/api/v1")
W = "/workspaces/<ws>"
