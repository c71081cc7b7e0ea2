"""The JSON API (v1, published as OpenAPI) at /api/v1, and the operations endpoints (health, readiness, metrics).

Importing this package registers every route; the app factory registers `blueprint` and
`operations.blueprint`.
"""

from __future__ import annotations

from interface.api import access, advisories, audit, closure, evaluate_path, operations, runs, synthesis, views  # noqa: F401 - importing a view module registers its routes
from interface.api.blueprint import W, api, blueprint

__all__ = ["W", "api", "blueprint", "evaluate_path", "operations"]
