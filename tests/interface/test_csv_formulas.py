"""CSV exports neutralise formulas hidden behind leading whitespace or control characters, or
started with a look-alike of the sign (fullwidth `＝＋－＠`, the minus sign); only the first
character used to be checked, so `" =1+1"` passed unchanged."""

from __future__ import annotations

import csv
import io

import pytest

from interface.exports import csv_cell

P = "/api/v1/workspaces/acme"
HIDDEN = [" =1+1", "\n=2+2", "\u00a0=4+4", "\t\r\n +cmd", "\u200b@SUM(A1)", "\u3000-1+2", "\x0b=3"]


@pytest.mark.parametrize("text", HIDDEN, ids=repr)
def test_a_formula_after_leading_blanks_or_controls_is_neutralised(text):
    assert csv_cell(text) == "'" + text


LOOKALIKES = ["\uff1d1+1", "\uff0bcmd", "\uff0d1+2", "\uff20SUM(A1)", "\ufe66HYPERLINK(1)", "\u207a1", "\u208c1"]
LOOKALIKES += ["\u22121+2", "\u20131+2", " \uff1d1+1", "\u3000\uff20x"]  # minus sign, en dash; after blanks


@pytest.mark.parametrize("text", LOOKALIKES, ids=repr)
def test_a_formula_sign_s_lookalikes_are_neutralised_too(text):
    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("text", ["pandas", "a=1", "numpy==1.0", " pandas", "", "2+2", "ümlaut=1", "a\uff1d1"])
def test_ordinary_cells_pass_unchanged(text):
    assert csv_cell(text) == text


def test_the_export_neutralises_what_a_sandbox_planted(live, monkeypatch):
    import application.evaluation

    specs = [" =1+1", "\n=2+2", "\uff1d1+1", "\uff20SUM(A1)"]
    context = {"actor": "\u00a0=4+4", "sandbox": " @evil"}  # refused now (blanks around), but a store may hold it
    body = {"language": "python", "specs": specs, "context": context}
    assert live.call("POST", P + "/evaluate", live.tokens["sandbox"], body).status == 422
    monkeypatch.setattr(application.evaluation, "check_context", lambda given: dict(given or {}))  # as before
    assert live.call("POST", P + "/evaluate", live.tokens["sandbox"], body).status == 200
    export = live.call("GET", P + "/decisions?format=csv", live.tokens["auditor"]).body.decode()
    rows = list(csv.DictReader(io.StringIO(export)))
    assert sorted(r["spec"] for r in rows) == sorted("'" + s for s in specs)
    assert {r["actor"] for r in rows} == {"'\u00a0=4+4"} and {r["sandbox"] for r in rows} == {"' @evil"}
