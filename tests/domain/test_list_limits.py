"""A documented list-size limit and a Save whose cost grows linearly (once
there was no limit, and every added entry re-sorted its list: saving 60,000 entries took 46 s)."""

from __future__ import annotations

import pytest

from domain import entries
from domain.edits import plan_desired_state, plan_incremental
from domain.errors import InvalidInputError
from domain.limits import MAX_ERRORS, MAX_LIST_ENTRIES
from domain.policy import Change, Policy, default_state


def names(count: int, prefix: str = "pkg") -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def test_a_save_past_the_list_limit_is_refused_naming_the_list_and_the_rule():
    with pytest.raises(InvalidInputError) as refused:
        plan_desired_state(default_state(), {"python": {"allow": ",".join(names(MAX_LIST_ENTRIES + 1))}})
    (error,) = refused.value.errors
    assert error.field == "python.allow" and f"at most {MAX_LIST_ENTRIES} entries" in error.message
    assert len(plan_desired_state(default_state(), {"python": {"deny": names(MAX_LIST_ENTRIES)}})) == MAX_LIST_ENTRIES


def test_a_pasted_list_past_the_limit_is_judged_no_further_than_the_limit(monkeypatch):
    """A 1 MiB body of 200,000 names in one string took seconds to judge before its refusal."""
    judged = []
    real = entries._judge
    monkeypatch.setattr(
        entries, "_judge", lambda language, entry, *how: judged.append(entry) or real(language, entry, *how)
    )
    with pytest.raises(InvalidInputError) as refused:
        plan_desired_state(default_state(), {"python": {"deny": ",".join(names(200_000))}})
    assert len(judged) == MAX_LIST_ENTRIES and "this one holds more" in refused.value.errors[0].message


def test_a_list_of_a_hundred_thousand_bad_entries_is_refused_naming_the_first_hundred_and_no_more():
    with pytest.raises(InvalidInputError) as refused:
        plan_desired_state(default_state(), {"python": {"deny": "a b," * 100_000}})
    errors = refused.value.errors
    assert len(errors) == MAX_ERRORS + 1
    assert [e.field for e in errors[:3]] == ["python.deny[0]", "python.deny[1]", "python.deny[2]"]
    assert errors[-1].field == f"python.deny[{MAX_ERRORS}]" and f"only the first {MAX_ERRORS}" in errors[-1].message


def test_incremental_adds_past_the_list_limit_are_refused_naming_the_command():
    state = default_state()
    state["node"]["allow"] = names(MAX_LIST_ENTRIES - 1)
    add = {"action": "add", "language": "node", "list": "allow"}
    assert len(plan_incremental(state, [add | {"entries": ["one-more"]}])) == 1
    with pytest.raises(InvalidInputError) as refused:
        plan_incremental(state, [add | {"entries": ["one-more"]}, add | {"entries": ["two-more"]}])
    (error,) = refused.value.errors
    assert error.field == "changes[1].entries" and f"at most {MAX_LIST_ENTRIES} entries" in error.message


class Counted(str):
    """A name that counts how often the list code compares it."""

    comparisons = 0


def _counting(operator: str):
    def compare(self, other):
        Counted.comparisons += 1
        return getattr(str, operator)(self, other)

    return compare


for _operator in ("__lt__", "__le__", "__gt__", "__ge__"):
    setattr(Counted, _operator, _counting(_operator))


def change_comparisons(changes: list[Change]) -> int:
    policy = Policy(workspace="acme", by="a")
    Counted.comparisons = 0
    policy.record(changes, "a", "")
    return Counted.comparisons


@pytest.mark.parametrize("order", ["sorted", "reversed", "interleaved"])
def test_recording_n_entries_compares_names_about_n_log_n_times_not_n_squared(order):
    count = 2000
    added = [Counted(n) for n in sorted(names(count))]
    added = {"sorted": added, "reversed": added[::-1], "interleaved": added[::2] + added[1::2]}[order]
    adds = [Change("entry-added", "python", "allow", n) for n in added]
    removes = [Change("entry-removed", "python", "allow", n) for n in added]
    assert change_comparisons(adds + removes) <= 2 * 2 * count * count.bit_length()  # today: ~count² / 2
