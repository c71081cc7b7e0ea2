"""What the app factory built, reached one typed way: `services()` in a request or app context
(or `services(app)`), never by string keys. The package index keeps its own upstream clients,
pages and cache beside these (`interface.index.install`)."""

from __future__ import annotations

from dataclasses import dataclass

from flask import Flask, current_app

from application import Governance
from interface.settings import Settings

KEY = "runcode_policy"


@dataclass(frozen=True)
class Services:
    governance: Governance  # one per process, on the configured store
    settings: Settings


def install(app: Flask, governance: Governance, settings: Settings) -> Services:
    app.extensions[KEY] = built = Services(governance, settings)
    return built


def services(app: Flask | None = None) -> Services:
    return (app or current_app).extensions[KEY]
