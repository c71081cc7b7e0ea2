"""Worst-case spec parsing, as ratios against a ceiling measured in the same run.

The API accepts 500 specs of up to 4 KiB per request, so parsing must stay linear in the spec's
length whatever its shape. For each hostile shape this prints its parse time per spec and the
ratio to a benign spec of the same length (the ceiling: the cheapest thing of that size).
A ratio that grows with the length means a super-linear path has come back. Both go through
the full parsers (`pip.parse_line`, `npm.parse_arg`): the shortcuts of `domain.specs.fast` take
the benign shapes in microseconds, which would make every ratio meaningless.

Then the same for what a Save or a draft's test reads of a body of up to 1 MiB: pasted lists
(`domain.entries`), against one long name of the same length, and the deny patterns that shadow
allow entries (`domain.patterns.shadowed`), per entry against building the same lists' rules.

    .venv/bin/python -m bench.parse_worst_case
"""

from __future__ import annotations

import timeit
from collections.abc import Callable

from domain.entries import parse_entries
from domain.patterns import shadowed
from domain.policy import LanguageRules
from domain.specs import npm, pip

FULL = {"python": pip.parse_line, "node": npm.parse_arg}  # never the memo, never a shortcut

HOSTILE = {
    "node range '=v '": lambda n: ("node", "lodash@" + "=v " * (n // 3)),
    "node range 'v'": lambda n: ("node", "lodash@" + "v" * n),
    "node range '< v'": lambda n: ("node", "lodash@" + "< v" * (n // 3)),
    "node range '||'": lambda n: ("node", "lodash@" + "1 || " * (n // 5)),
    "python specifiers": lambda n: ("python", "pandas" + ",>=1" * (n // 4)),
    "python extras": lambda n: ("python", "pandas[" + "a," * (n // 2) + "b]"),
    "python blank run": lambda n: ("python", "pandas" + " " * (n - 9) + "==1"),  # pip's comment regex
}
# Pasted lists: one line of `,<1` (once joined a fragment at a time), of blanks (once read for a
# comment by a regex that scanned the run from each blank), of unclosed brackets.
LISTS = {
    "list specifiers": lambda n: "a" + ",<1" * (n // 3),
    "list blank run": lambda n: "a" + " " * (n - 2) + "b",
    "list brackets": lambda n: "(a" * (n // 2),
}


def per_spec(language: str, text: str, number: int = 20) -> float:
    parse = FULL[language]
    return min(timeit.repeat(lambda: parse(text), number=number, repeat=3)) / number


def main() -> None:
    for length in (1024, 4096):
        for label, make in HOSTILE.items():
            language, text = make(length)
            ceiling = per_spec(language, "lodash@" + "1" * len(text) if language == "node" else "p" * len(text))
            cost = per_spec(language, text)
            print(
                f"{length:5d} B  {label:20s} {cost * 1e3:8.3f} ms/spec | ceiling {ceiling * 1e3:7.3f} ms "
                f"| ratio {cost / ceiling:6.1f}"
            )


def lists() -> None:
    for length in (256 * 1024, 1024 * 1024):
        benign = "a" * length  # one name, refused as too long
        ceiling = once(lambda benign=benign: parse_entries("python", benign, "f"))
        for label, make in LISTS.items():
            text = make(length)
            cost = once(lambda text=text: parse_entries("python", text, "f"))
            print(
                f"{length // 1024:5d} KiB {label:20s} {cost * 1e3:8.1f} ms/list | ceiling {ceiling * 1e3:7.1f} ms "
                f"| ratio {cost / ceiling:6.1f}"
            )


def shadowing() -> None:
    """`p{i}-*` denied and `p{i}-x` allowed: each pattern shadows one entry (once 89 s at 10,000)."""
    for count in (1000, 10_000):
        deny, allow = frozenset(f"p{i}-*" for i in range(count)), frozenset(f"p{i}-x" for i in range(count))
        ceiling = once(lambda allow=allow, deny=deny: LanguageRules("python", allow=allow, deny=deny)) / count
        cost = once(lambda allow=allow, deny=deny: shadowed("python", allow, deny)) / count
        print(
            f"{count:6d} x2  shadowed patterns     {cost * 1e6:8.1f} µs/entry | ceiling {ceiling * 1e6:7.1f} µs "
            f"| ratio {cost / ceiling:6.1f}"
        )


def once(work: Callable[[], object]) -> float:
    return min(timeit.repeat(work, number=1, repeat=3))


if __name__ == "__main__":
    main()
    lists()
    shadowing()
