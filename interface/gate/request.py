"""`runcode-policy-gate request LANGUAGE NAME --why "..."`: ask an admin for a denied package, with
the sandbox's own token. The answer says whether a request for it was already open (joined)."""

from __future__ import annotations

import argparse
import os

from .service import CannotVerify, call, config_from

USAGE = 'usage: runcode-policy-gate request {python|node} NAME --why "why it is needed"'


def is_request(args: list[str]) -> bool:
    return args[:1] == ["request"]


def request_main(args: list[str], say, exit_usage: int, exit_unverified: int) -> int:
    """File (or join) an access request; exit 0 once it is recorded."""
    parser = argparse.ArgumentParser(prog="runcode-policy-gate request", add_help=True)
    parser.add_argument("language", choices=("python", "node"))
    parser.add_argument("name", help="the package (any spelling, or a spec such as pandas==2.1)")
    parser.add_argument("--why", default="", help="the justification an admin will read")
    try:
        options = parser.parse_args(args[1:])
    except SystemExit as stop:  # argparse printed the problem (or the help)
        return 0 if stop.code == 0 else exit_usage
    try:
        config = config_from(os.environ)
        answer = call(config, "POST", "/requests", request_body(config, options))
    except CannotVerify as error:
        say(f"could not file the request: {error}")
        return exit_unverified
    print(request_outcome(answer, options))
    return 0


def request_body(config: dict, options) -> dict:
    return {
        "language": options.language,
        "name": options.name,
        "justification": options.why,
        "context": {
            "sandbox": config["sandbox"],
            "actor": config["actor"],
            "source": "gate",
            "run": os.environ.get("RUNCODE_POLICY_RUN") or None,
        },
    }


def request_outcome(answer: dict, options) -> str:
    what = f"{options.language} {answer.get('name') or options.name}"
    if answer.get("joined"):
        return (
            f"joined the open request {answer['id']} for {what} "
            f"({_requesters(answer.get('requesters'))}); an admin will decide it"
        )
    return f"filed request {answer['id']} for {what}; an admin will decide it"


def _requesters(count) -> str:
    # The gate runs in the sandbox on its own, without the service's helpers (domain.text.noun_for).
    return f"{count} requester{'' if count == 1 else 's'}"
