"""Decisions recorded as the index records them, for tests of what is built from them."""

from __future__ import annotations

from application.index import registry_spec
from domain.decision import Decision, DecisionRecord, Verdict


def download(app, workspace, language, name, version, file, sandbox, uploaded, scripts=None) -> None:
    """A download through the index, as its decision records the facts judged."""
    context = {"sandbox": sandbox, "version": version, "uploaded_at": uploaded}
    if scripts is not None:
        context["install_scripts"] = scripts
    verdict = Verdict(True, "not-on-the-deny-list")
    record = DecisionRecord.for_spec(registry_spec(language, name), verdict, 0, context)
    decision = Decision(workspace=workspace, record=record.fetched("download", None, file, version).to_dict())
    app.writer.record(decision)
