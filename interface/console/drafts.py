"""A Test's answer carries the form in its address (post/redirect/get), so the address could
also come from someone else: a crafted link that fills the form with a policy-wiping draft for
the next Save. The Test's post therefore seals the address it redirects to with an HMAC over
its fields, keyed by the console's secret and bound to this session; a GET fills the form from
its query only when the seal holds, and otherwise shows the saved policy."""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import urlencode

from flask import current_app

from interface.console.session import caller_session

SEAL = "draft-seal"


def _digest(fields: list[tuple[str, str]]) -> str:
    message = f"{caller_session()}\0{urlencode(sorted(f for f in fields if f[0] != SEAL))}"
    key = str(current_app.secret_key).encode()
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


def sealed(fields: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The fields with their seal added, for the answer's address."""
    return [*fields, (SEAL, _digest(fields))]


def seal_holds(values) -> bool:
    """Whether a query's fields are exactly what a Test post of this session sent."""
    fields = list(values.items(multi=True))
    return hmac.compare_digest(values.get(SEAL, ""), _digest(fields))
