"""Revoking an exception: only a standing one, and once."""

from __future__ import annotations

from datetime import timedelta

import pytest

from domain.errors import ConflictError


def test_an_ended_exception_is_not_revoked_and_nothing_is_recorded(app, workspace, clock):
    """An expired exception's revocation had been 204 and a recorded change (the version moved)."""
    granted = app.access.grant_exception(workspace, "python", "scipy", by="alice", duration="P1D")
    clock.step(timedelta(days=2))
    version = app.policy(workspace)["version"]
    with pytest.raises(ConflictError, match="already ended"):
        app.access.revoke_exception(workspace, granted["id"], by="bob")
    assert app.policy(workspace)["version"] == version
    standing = app.access.grant_exception(workspace, "python", "numpy", by="alice", duration="P1D")
    app.access.revoke_exception(workspace, standing["id"], by="bob")
    with pytest.raises(ConflictError, match="already revoked"):
        app.access.revoke_exception(workspace, standing["id"], by="bob")
