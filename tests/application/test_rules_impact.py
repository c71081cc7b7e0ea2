"""Impact of drafted rules beyond names: the downloads they would have hidden, from the rollup of
fetched versions, against what is worked out here from the same downloads (SQLite, PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from domain.rules import VersionFacts, judge_version, read_rules
from tests.support.recorded import download


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_a_drafted_cooldown_and_no_install_scripts_show_the_downloads_they_would_have_hidden(app, workspace):
    now = datetime.now(UTC)
    fresh, old = iso(now - timedelta(hours=5)), iso(now - timedelta(days=40))
    fetched = [
        ("node", "react", "19.0.0", "react-19.0.0.tgz", "sbx-1", fresh, False),
        ("node", "react", "19.0.0", "react-19.0.0.tgz", "sbx-2", fresh, False),
        ("node", "react", "18.3.1", "react-18.3.1.tgz", "sbx-1", old, False),
        ("node", "esbuild", "0.25.0", "esbuild-0.25.0.tgz", "sbx-1", old, True),
        ("node", "sharp", "0.34.0", "sharp-0.34.0.tgz", "sbx-3", old, True),
        ("node", "sharp", "0.34.0", "sharp-0.34.0.tgz", "sbx-3", old, True),
        ("node", "@acme/api", "2.0.0", "api-2.0.0.tgz", "sbx-2", fresh, False),
        ("node", "mystery", "1.0.0", "mystery-1.0.0.tgz", None, None, False),
        ("python", "pyyaml", "6.0.3", "pyyaml-6.0.3.tar.gz", "sbx-1", old, None),
        ("python", "numpy", "2.3.0", "numpy-2.3.0.tar.gz", "sbx-2", old, None),
        ("python", "numpy", "2.3.0", "numpy-2.3.0-cp311-cp311-manylinux.whl", "sbx-2", old, None),
    ]
    for language, name, version, file, sandbox, uploaded, scripts in fetched:
        download(
            app, workspace, language, name, version, file, sandbox, uploaded, scripts if language == "node" else None
        )
    app.evaluation.evaluate(
        workspace, "node", ["react"], context={"sandbox": "sbx-1"}
    )  # an evaluate: no version, not counted
    draft = {
        "node": {
            "rules": {
                "min_release_age": {"age": "P3D", "exempt": ["@acme/*"]},
                "install_scripts": {"allow": ["esbuild"]},
            }
        },
        "python": {"rules": {"sdists": {"allow": ["pyyaml"]}}},
    }
    answer = app.impacts.impact(workspace, draft, 30)

    # the same judgement, worked out here from the downloads as listed
    expected: dict[str, dict] = {}
    for language, name, version, file, sandbox, uploaded, scripts in fetched:
        rules = read_rules(language, draft[language]["rules"], "rules")
        moment = datetime.fromisoformat(uploaded.replace("Z", "+00:00")) if uploaded else None
        facts = VersionFacts(version, moment, scripts, language == "python" and not file.endswith(".whl"))
        found = [f for f in judge_version(rules, language, name, facts, now) if not f.monitor]
        if found:
            entry = expected.setdefault((language, name, version, found[0].reason), {"installs": 0, "sandboxes": set()})
            entry["installs"] += 1
            entry["sandboxes"] |= {sandbox} if sandbox else set()
    hidden = {(h["language"], h["name"], h["version"], h["reason"]): h for h in answer["would_hide"]}
    assert (
        set(hidden)
        == set(expected)
        == {
            ("node", "react", "19.0.0", "too-new"),
            ("node", "sharp", "0.34.0", "install-scripts"),
            ("node", "mystery", "1.0.0", "too-new"),  # no upload time: too new (fail closed)
            ("python", "numpy", "2.3.0", "sdist-refused"),  # its sdist, not its wheel
        }
    )
    for key, entry in expected.items():
        assert (hidden[key]["installs"], hidden[key]["sandboxes"]) == (entry["installs"], len(entry["sandboxes"]))
    assert answer["would_show"] == []
    assert answer["would_deny"] == answer["would_allow"] == []  # no name changes its answer

    # saved, the same rules hide nothing new; a draft without them shows what they hid
    app.save_policy(workspace, draft, by="alice")
    assert app.impacts.impact(workspace, draft, 30)["would_hide"] == []
    shown = app.impacts.impact(workspace, {"node": {"rules": {}}, "python": {"rules": {}}}, 30)["would_show"]
    assert {(s["name"], s["reason"]) for s in shown} == {
        ("react", "too-new"),
        ("sharp", "install-scripts"),
        ("mystery", "too-new"),
        ("numpy", "sdist-refused"),
    }


def test_an_impact_without_rules_on_either_side_reads_no_versions(app, workspace):
    download(app, workspace, "node", "react", "19.0.0", "react-19.0.0.tgz", "sbx-1", None, False)
    answer = app.impacts.impact(workspace, {"node": {"deny": ["react"]}}, 30)
    assert "would_hide" not in answer and answer["would_deny"][0]["name"] == "react"


def test_the_downloads_of_one_version_move_as_they_fell_before_or_after_it_was_old_enough(app, workspace, monkeypatch):
    from domain.decision import Decision

    real, now = Decision.Recorded.create_timestamp, datetime.now(UTC)
    uploaded = iso(now - timedelta(days=5))  # under a 3-day cooldown: too new until 2 days ago

    def fetched_on(days_ago: int, sandbox: str) -> None:
        stamp = now - timedelta(days=days_ago)
        monkeypatch.setattr(Decision.Recorded, "create_timestamp", staticmethod(lambda: stamp))
        download(app, workspace, "node", "react", "19.0.0", "react-19.0.0.tgz", sandbox, uploaded, False)
        monkeypatch.setattr(Decision.Recorded, "create_timestamp", real)

    for days_ago, sandbox in ((1, "sbx-1"), (4, "sbx-2"), (3, "sbx-3"), (4, "sbx-3"), (0, "sbx-2")):
        fetched_on(days_ago, sandbox)
    answer = app.impacts.impact(workspace, {"node": {"rules": {"min_release_age": {"age": "P3D"}}}}, 30)
    # the fetches 4 and 3 days ago were of a version 1 and 2 days old; the later ones were not
    assert [(h["version"], h["reason"], h["installs"], h["sandboxes"]) for h in answer["would_hide"]] == [
        ("19.0.0", "too-new", 3, 2)
    ]


def test_a_download_whose_file_name_says_no_version_is_hidden_by_any_drafted_rule_as_the_index_refuses_it(
    app, workspace
):
    old = iso(datetime.now(UTC) - timedelta(days=40))
    download(app, workspace, "python", "leg", None, "leg-1.0.tar.bz2", "sbx-1", old)
    download(app, workspace, "python", "leg", "2.0", "leg-2.0.tar.gz", "sbx-2", old)
    hidden = [
        {
            "language": "python",
            "name": "leg",
            "version": None,
            "reason": "version-unknown",
            "installs": 1,
            "sandboxes": 1,
        }
    ]
    # a monitored rule hides no version it judges, but the index refuses a file no rule can judge
    monitored = {"python": {"rules": {"sdists": {"allow": [], "action": "monitor"}}}}
    assert app.impacts.impact(workspace, monitored, 30)["would_hide"] == hidden
    enforced = {"python": {"rules": {"sdists": {"allow": []}}}}
    assert app.impacts.impact(workspace, enforced, 30)["would_hide"] == [
        *hidden,
        {
            "language": "python",
            "name": "leg",
            "version": "2.0",
            "reason": "sdist-refused",
            "installs": 1,
            "sandboxes": 1,
        },
    ]
