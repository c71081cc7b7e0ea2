"""runcode-policy-gate: ask the policy service before installing, and install only if allowed.

Usage:  runcode-policy-gate -- pip install pandas numpy
        runcode-policy-gate -- python -m pip install -r requirements.txt
        runcode-policy-gate -- npm install left-pad

The whole command line is sent to the service, which parses it itself (so options that change
where packages come from are judged too); if every decision allows, the command is run (exec'd)
as given. The gate fails closed: if it cannot get a clear answer, nothing is installed.

Environment:
  RUNCODE_POLICY_URL        service base URL, e.g. http://policy:8000 (required)
  RUNCODE_POLICY_TOKEN      a token with the sandbox role (required)
  RUNCODE_POLICY_WORKSPACE  workspace slug (default: default)
  RUNCODE_POLICY_TIMEOUT    seconds to wait on the service, per connect and read (default: 10)
  RUNCODE_POLICY_SANDBOX    sandbox name recorded with the decisions (default: the hostname)
  RUNCODE_POLICY_ACTOR      who asked, recorded with the decisions (default: none)

Exit status:
  the command's own   every package was allowed, and the command ran
  2                   usage error: no command given
  3                   denied: at least one package is not allowed; the command did not run
  4                   cannot verify (service unreachable, timeout, error answer, bad
                      configuration): fail closed, the command did not run
  126, 127            allowed, but the program could not be executed / was not found

A command that itself exits 3 or 4 looks like a refusal by its status alone; the gate's own
refusals always say so on stderr, prefixed with "runcode-policy-gate:".

Standard library only: this one file can be copied alone into any sandbox image with Python 3.7
or later and run as `python3 gate.py -- ...` (so nothing from the project may be imported here).
"""

from __future__ import annotations

import http.client
import json
import os
import shlex
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

EXIT_USAGE, EXIT_DENIED, EXIT_UNVERIFIED = 2, 3, 4
EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND = 126, 127
DEFAULT_TIMEOUT = 10.0
MAX_ANSWER_BYTES = 16 * 1024 * 1024  # far above any real answer; bounds memory on a rogue reply
PREFIX = "runcode-policy-gate:"


class CannotVerify(Exception):
    """No trustworthy answer: the gate must not run the command (fail closed)."""


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # Following a redirect would re-send the bearer token to wherever it points, and turn the
    # POST into a GET: treat any redirect as an error answer instead.
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def main(argv: list[str] | None = None) -> int:
    if is_request(argv):  # `runcode-policy-gate request ...`: see the end of this file
        return request_main(argv)
    command, usage = parse_args(sys.argv[1:] if argv is None else argv)
    if command is None:
        return usage
    try:
        answer = ask(config_from(os.environ), command)
    except CannotVerify as error:
        return cannot_verify(command, str(error))
    except Exception as error:  # a bug in the gate must fail closed too, with the gate's own status
        return cannot_verify(command, f"internal error: {error!r}")
    if not allows(answer):
        report_denials(answer, command)
        return EXIT_DENIED
    return run(command)


def cannot_verify(command: list[str], why: str) -> int:
    say(f"cannot verify `{shown(command)}` with the policy service: {why}")
    say("not running it (fail closed); exit status 4")
    return EXIT_UNVERIFIED


def parse_args(args: list[str]) -> tuple[list[str] | None, int]:
    """The command after `--` (or the arguments as they are); None with an exit status otherwise."""
    if args[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return None, 0
    command = args[1:] if args[:1] == ["--"] else args
    if not command or (command is args and command[0].startswith("-")):
        say("usage: runcode-policy-gate -- COMMAND [ARG...]   (see --help)")
        return None, EXIT_USAGE
    return command, 0


def config_from(env) -> dict:
    url, token = env.get("RUNCODE_POLICY_URL", "").strip(), env.get("RUNCODE_POLICY_TOKEN", "").strip()
    if not url or not token:
        missing = [n for n, v in (("RUNCODE_POLICY_URL", url), ("RUNCODE_POLICY_TOKEN", token)) if not v]
        raise CannotVerify(f"{' and '.join(missing)} not set")
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise CannotVerify(f"RUNCODE_POLICY_URL must be an http:// or https:// URL, not {url!r}")
    workspace = env.get("RUNCODE_POLICY_WORKSPACE", "").strip() or "default"
    endpoint = f"{url.rstrip('/')}/api/v1/workspaces/{urllib.parse.quote(workspace, safe='')}/evaluate"
    return {
        "endpoint": endpoint,
        "token": token,
        "timeout": timeout_from(env),
        "sandbox": env.get("RUNCODE_POLICY_SANDBOX") or socket.gethostname(),
        "actor": env.get("RUNCODE_POLICY_ACTOR") or None,
    }


def timeout_from(env) -> float:
    text = env.get("RUNCODE_POLICY_TIMEOUT", "").strip()
    try:
        timeout = float(text) if text else DEFAULT_TIMEOUT
    except ValueError:
        timeout = -1.0
    if not 0 < timeout < float("inf"):
        raise CannotVerify(f"RUNCODE_POLICY_TIMEOUT must be a positive number of seconds, not {text!r}")
    return timeout


def ask(config: dict, command: list[str]) -> dict:
    """POST the command to /evaluate; the parsed answer, or CannotVerify for anything else."""
    opener = urllib.request.build_opener(_NoRedirects)
    try:
        with opener.open(evaluate_request(config, command), timeout=config["timeout"]) as response:
            return parse_answer(response.read(MAX_ANSWER_BYTES + 1))
    except urllib.error.HTTPError as error:
        raise CannotVerify(describe_error_answer(error)) from None
    except urllib.error.URLError as error:
        if isinstance(error.reason, (TimeoutError, socket.timeout)):  # noqa: UP041 - as below
            raise CannotVerify(f"no answer within {config['timeout']:g} s") from None
        raise CannotVerify(f"service unreachable at {config['endpoint']}: {error.reason}") from None
    except (TimeoutError, socket.timeout):  # noqa: UP041 - distinct classes before Python 3.10
        raise CannotVerify(f"no answer within {config['timeout']:g} s") from None
    except (OSError, http.client.HTTPException) as error:
        raise CannotVerify(f"the exchange with {config['endpoint']} failed: {error!r}") from None


def evaluate_request(config: dict, command: list[str]) -> urllib.request.Request:
    body = {
        "command": command,
        "context": {"sandbox": config["sandbox"], "source": "run-code", "actor": config["actor"]},
    }
    return urllib.request.Request(
        config["endpoint"],
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Authorization": f"Bearer {config['token']}",
        },
    )


def parse_answer(raw: bytes) -> dict:
    if len(raw) > MAX_ANSWER_BYTES:
        raise CannotVerify("the answer is too large to be a policy answer")
    try:
        answer = json.loads(raw)
    except ValueError:
        raise CannotVerify("the answer is not JSON") from None
    if not (
        isinstance(answer, dict)
        and isinstance(answer.get("allowed"), bool)
        and isinstance(answer.get("decisions"), list)
        and all(isinstance(d, dict) for d in answer["decisions"])
    ):
        raise CannotVerify("the answer does not have the shape of an evaluation")
    return answer


def describe_error_answer(error: urllib.error.HTTPError) -> str:
    """`HTTP 422 Invalid input: detail (field: message; ...)` from a problem+json body if any."""
    try:
        problem = json.loads(error.read(MAX_ANSWER_BYTES))
    except (OSError, ValueError):
        problem = None
    if not isinstance(problem, dict):
        return f"HTTP {error.code} {error.reason}"
    title, detail = problem.get("title") or error.reason, problem.get("detail") or ""
    text = f"HTTP {error.code} {title}: {detail}".rstrip(": ")
    errors = [e for e in problem.get("errors") or [] if isinstance(e, dict)]
    if errors:
        text += " (" + "; ".join(f"{e.get('field')}: {e.get('message')}" for e in errors) + ")"
    return text


def allows(answer: dict) -> bool:
    # Both the overall verdict and every single decision must allow: an answer that
    # contradicts itself is treated as a denial.
    return answer["allowed"] is True and all(d.get("allowed") is True for d in answer["decisions"])


def report_denials(answer: dict, command: list[str]) -> None:
    for decision in answer["decisions"]:
        if decision.get("allowed") is not True:
            say(f"denied: {denial_text(decision)}")
    say(f"not running `{shown(command)}` (policy version {answer.get('policy_version')}); exit status 3")


def denial_text(decision: dict) -> str:
    if decision.get("message"):
        return str(decision["message"])
    text = f"{decision.get('spec')}: {decision.get('reason')}"
    return f"{text} ({decision['detail']})" if decision.get("detail") else text


def run(command: list[str]) -> int:
    """Replace this process with the command (POSIX), so its status and signals are its own."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        if os.name == "posix":
            os.execvp(command[0], command)
        return subprocess.call(command)
    except FileNotFoundError:
        say(f"allowed, but {command[0]!r} was not found")
        return EXIT_NOT_FOUND
    except OSError as error:
        say(f"allowed, but {command[0]!r} could not be executed: {error}")
        return EXIT_NOT_EXECUTABLE


def shown(command: list[str]) -> str:
    return " ".join(shlex.quote(part) for part in command)  # shlex.join needs Python 3.8


def say(message: str) -> None:
    print(f"{PREFIX} {message}", file=sys.stderr, flush=True)


# -- `runcode-policy-gate request LANGUAGE NAME --why "..."`: ask an admin for a denied package ----
REQUEST_USAGE = 'usage: runcode-policy-gate request {python|node} NAME --why "why it is needed"'


def is_request(argv: list[str] | None) -> bool:
    return (sys.argv[1:] if argv is None else argv)[:1] == ["request"]


def request_main(argv: list[str] | None = None) -> int:
    """File (or join) an access request with the sandbox's own token; exit 0 when recorded."""
    import argparse

    args = (sys.argv[1:] if argv is None else argv)[1:]
    parser = argparse.ArgumentParser(prog="runcode-policy-gate request", add_help=True)
    parser.add_argument("language", choices=("python", "node"))
    parser.add_argument("name", help="the package (any spelling, or a spec such as pandas==2.1)")
    parser.add_argument("--why", default="", help="the justification an admin will read")
    try:
        options = parser.parse_args(args)
    except SystemExit as stop:  # argparse printed the problem (or the help)
        return 0 if stop.code == 0 else EXIT_USAGE
    try:
        config = config_from(os.environ)
        answer = send_request(config, request_body(config, options))
    except CannotVerify as error:
        say(f"could not file the request: {error}")
        return EXIT_UNVERIFIED
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


def send_request(config: dict, body: dict) -> dict:
    endpoint = config["endpoint"].rsplit("/", 1)[0] + "/requests"
    request = urllib.request.Request(
        endpoint,
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Authorization": f"Bearer {config['token']}",
        },
    )
    try:
        with urllib.request.build_opener(_NoRedirects).open(request, timeout=config["timeout"]) as response:
            answer = json.loads(response.read(MAX_ANSWER_BYTES))
    except urllib.error.HTTPError as error:
        raise CannotVerify(describe_error_answer(error)) from None
    except (OSError, ValueError, http.client.HTTPException) as error:
        raise CannotVerify(f"the exchange with {endpoint} failed: {error}") from None
    if not isinstance(answer, dict) or not isinstance(answer.get("id"), str):
        raise CannotVerify("the answer does not have the shape of a request")
    return answer


def request_outcome(answer: dict, options) -> str:
    what = f"{options.language} {answer.get('name') or options.name}"
    if answer.get("joined"):
        return (
            f"joined the open request {answer['id']} for {what} "
            f"({answer.get('requesters')} requesters); an admin will decide it"
        )
    return f"filed request {answer['id']} for {what}; an admin will decide it"


if __name__ == "__main__":
    sys.exit(main())
