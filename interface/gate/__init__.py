"""runcode-policy-gate: ask the policy service, then install through its package index.

Usage:  runcode-policy-gate -- pip install pandas numpy
        runcode-policy-gate -- python -m pip install pandas
        runcode-policy-gate -- uv pip install pandas
        runcode-policy-gate -- npm install left-pad
        runcode-policy-gate -- pnpm add left-pad

1. The whole command line goes to /evaluate, which parses it itself (so options that change where
   packages come from are judged too). If anything is denied, nothing runs.
2. The gate creates a run (POST /runs): a short-lived token that may only read the service's
   package index. The gate's own sandbox token is never handed to the installer.
3. It runs the installer it resolved itself on a fixed trusted PATH (never `./pip` or a path
   given on the command line; `python -m pip` runs with -I, so no `./pip/` module can stand in),
   with every variable that redirects installs removed and the installer's configuration files
   replaced by its own, pointed at the index with the run token. The index then judges every
   package the installer fetches, at any depth.
4. After the installer exits, the gate reads the run's decisions. The index refuses a run
   everything after its first denied package (so no resolver can fall back to an older release
   without it); whenever the run recorded a denial, the gate prints each one and how to ask for
   it, and exits 3 even if the installer exited 0:
   `denied: beta (python) — not-on-the-allow-list: ...` (pip, uv and pnpm do not show them).
   It prints too why the index's upstream failed a fetch, with the setting that would help:
   `upstream failed: alpha (python) — upstream-failed: upstream TLS certificate not trusted: ...`.
   Then it ends the run (DELETE /runs/{id}): its token reads the index no more.

Environment:
  RUNCODE_POLICY_URL             service base URL, e.g. http://policy:8000 (required)
  RUNCODE_POLICY_TOKEN           a token with the sandbox role (required)
  RUNCODE_POLICY_WORKSPACE       workspace slug (default: default)
  RUNCODE_POLICY_TIMEOUT         seconds to wait on the service, per connect and read (default: 10)
  RUNCODE_POLICY_SANDBOX         sandbox name recorded with the decisions (default: the hostname)
  RUNCODE_POLICY_ACTOR           who asked, recorded with the decisions (default: none)
  RUNCODE_POLICY_INSTALLER_PATH  where installers are looked up, set by the image (default:
                                 /usr/local/bin:/usr/bin:/bin; relative entries are ignored)

Exit status:
  the installer's own   everything asked about was allowed, the installer ran, and the
                        package index refused it nothing
  2                     usage error: no command, not an installer the gate runs, an option it
                        does not run with (only options refused: no package to ask for), or a
                        command the service refuses to parse (its reason is printed); nothing ran
  3                     denied: at least one package is not allowed (nothing ran), or the
                        package index refused the installer a package (its denials are printed)
  4                     cannot verify (service unreachable, timeout, error answer, bad
                        configuration, a redirect it cannot undo): fail closed, nothing ran; or
                        the run's decisions could not be read after the installer ran
  126, 127              allowed, but the installer could not be executed / was not found

A command that itself exits 3 or 4 looks like a refusal by its status alone; the gate's own
refusals always say so on stderr, prefixed with "runcode-policy-gate:".

Standard library only: this folder can be copied alone into any sandbox image with Python 3.7
or later and run as `python3 -I /opt/gate -- ...` (so nothing from the project may be imported
here). Its exchanges with the service are in `service`; how each installer is run, in `clients`
(and what they all share, in `installers`).
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile

from .clients import Plan, plan, prepare
from .installers import Unresolvable, Usage, resolved_argv
from .request import is_request, request_main
from .service import CannotVerify, CommandRefused, ask, config_from, create_run, end_run, run_denials

EXIT_USAGE, EXIT_DENIED, EXIT_UNVERIFIED = 2, 3, 4
EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND = 126, 127
PREFIX = "runcode-policy-gate:"
RUN_FAILED = "run-failed"  # the index's reason for everything it refuses a run after its first denial
NOT_FOUND = "not-found-upstream"  # the index's refusals of no project: a name upstream lacks,
# and a version hidden (known malware, a file whose version cannot be told, or a rule beyond names:
# release age, versions, scripts, sdists)
HIDDEN_VERSIONS = ("known-malware", "version-unknown", "too-new", "version-denied", "install-scripts", "sdist-refused")
OPTION = "option"  # the kind of a decision on an installer's option, not on a package
UPSTREAM_FAILED = "upstream-failed"  # the index's upstream failed a fetch (its reason names the setting)
SAID_AS = {NOT_FOUND: "refused", UPSTREAM_FAILED: "upstream failed"}  # else "hidden"
REFUSALS_SHOWN = 20  # refusals of no project said one by one after an install; the rest are counted


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if is_request(args):  # `runcode-policy-gate request LANGUAGE NAME --why ...`
        return request_main(args, say, EXIT_USAGE, EXIT_UNVERIFIED)
    command, usage = parse_args(args)
    if command is None:
        return usage
    try:
        found = plan(command, os.getcwd())
        config = config_from(os.environ)
        refused = [a for a in (ask(config, q) for q in found.questions()) if not allows(a)]
        if refused:
            return report_denials(refused, command)
        return install(config, found, command)
    except Usage as error:
        say(str(error))
        return EXIT_USAGE
    except CommandRefused as error:
        say(f"the policy service refuses `{shown(command)}`: {error}")
        say("not running it; exit status 2")
        return EXIT_USAGE
    except CannotVerify as error:
        return cannot_verify(command, str(error))
    except Exception as error:  # a bug in the gate must fail closed too, with the gate's own status
        return cannot_verify(command, f"internal error: {error!r}")


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


def allows(answer: dict) -> bool:
    # Both the overall verdict and every single decision must allow: an answer that
    # contradicts itself is treated as a denial.
    return answer["allowed"] is True and all(d.get("allowed") is True for d in answer["decisions"])


def report_denials(answers: list[dict], command: list[str]) -> int:
    """Say each denial; the exit status: 2 when only options were refused (there is no package to
    ask for: run the command without them), else 3."""
    denied = [d for answer in answers for d in answer["decisions"] if d.get("allowed") is not True]
    for decision in denied:
        say(f"denied: {denial_text(decision)}")
    status = EXIT_USAGE if denied and all(d.get("kind") == OPTION for d in denied) else EXIT_DENIED
    say(f"not running `{shown(command)}` (policy version {answers[0].get('policy_version')}); exit status {status}")
    return status


def denial_text(decision: dict) -> str:
    if decision.get("message"):
        return str(decision["message"])
    text = f"{decision.get('spec')}: {decision.get('reason')}"
    return f"{text} ({decision['detail']})" if decision.get("detail") else text


def install(config: dict, found: Plan, command: list[str]) -> int:
    """Create a run, run the installer through the index, and explain a failure."""
    try:
        argv = resolved_argv(command, config["path"])
    except Unresolvable as error:
        say(f"allowed, but {error}")
        return EXIT_NOT_FOUND
    run = create_run(config)
    workdir = tempfile.mkdtemp(prefix="runcode-policy-gate-")
    try:
        argv, env = prepare(found, argv, run, workdir, config["url"], os.environ, os.getcwd())
        status = run_installer(argv, env)
    except Unresolvable as error:
        raise CannotVerify(str(error)) from None
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if status not in (EXIT_NOT_FOUND, EXIT_NOT_EXECUTABLE):  # else nothing ran, so nothing was fetched
        status = report_run(config, run["id"], status)
    finish_run(config, run["id"])  # after its decisions were read
    return status


def finish_run(config: dict, run_id: str) -> None:
    """End the run: its token reads the index no more. If the service cannot be told, the
    install's status stands and the token lasts until it expires, which is said."""
    try:
        end_run(config, run_id)
    except CannotVerify as error:
        say(f"this run's token could not be ended ({error}); it works until the run expires")


def report_run(config: dict, run_id: str, status: int) -> int:
    """The gate's status once the installer exited with `status`: 3 and every denial printed when
    the run recorded one (pip, uv and pnpm do not show the index's reasons, and a resolver may
    even succeed around a denial), 4 when the run's decisions cannot be read (fail closed)."""
    try:
        denials, more = run_denials(config, run_id)
    except CannotVerify as error:
        say(f"the installer exited {status}, but this run's decisions cannot be read: {error}")
        say("what it installed cannot be verified (fail closed); exit status 4")
        return EXIT_UNVERIFIED
    # Refusals that deny no project: a version hidden for a dependency it declares (a URL, git or
    # path source), for known malware or by a rule beyond names, and a name the upstream does not have. The resolver may
    # pick another version (or fails by itself), so they are said, and the installer's status stands.
    # So is an upstream that failed the index (untrusted, unreachable): pip prints only a status.
    # A few are said one by one, the rest counted: a packument can hide thousands of versions.
    others = [d for d in denials if not is_project_denial(d)]
    for decision in others[:REFUSALS_SHOWN]:
        say(f"{SAID_AS.get(decision.get('reason'), 'hidden')}: {index_denial_text(decision)}")
    unsaid = len(others[REFUSALS_SHOWN:])
    if unsaid or more:
        beyond = " (and more the gate did not read)" if more else ""
        say(f"and {unsaid} more such refusal(s){beyond}: {config['base']}/runs/{run_id}/decisions lists them")
    denials = [d for d in denials if is_project_denial(d)]
    if not denials:
        return status
    refused = [d for d in denials if d.get("reason") == RUN_FAILED]
    firsts = {(d.get("language"), d.get("name") or d.get("spec")): d for d in denials if d not in refused}
    for decision in firsts.values():
        say(f"denied: {index_denial_text(decision)}")
        hint = request_hint(decision)
        if hint and hint not in str(decision.get("message")):
            say(f"  to ask for it: {hint}")
    if refused:
        counted = f"{len(refused)}{' or more' if more else ''}"
        say(f"after that denial the package index refused this run {counted} more fetch(es) ({RUN_FAILED})")
    say(f"the package index refused this install the package(s) above (the installer exited {status}); exit status 3")
    return EXIT_DENIED


def is_project_denial(decision: dict) -> bool:
    return not decision.get("declared_by") and decision.get("reason") not in (
        *HIDDEN_VERSIONS,
        NOT_FOUND,
        UPSTREAM_FAILED,
    )


def request_hint(decision: dict) -> str | None:
    name, language = decision.get("name"), decision.get("language")
    if not name or not language or (decision.get("params") or {}).get("pattern"):
        return None  # a name a deny pattern denies cannot be approved: nothing to ask for
    return f'runcode-policy-gate request {language} {name} --why "..."'


def index_denial_text(decision: dict) -> str:
    """`beta (python) - not-on-the-allow-list: <message>` for one decision of the index."""
    text = (
        f"{decision.get('name') or decision.get('spec')} ({decision.get('language')}) \u2014 {decision.get('reason')}"
    )
    why = decision.get("message") or decision.get("detail")
    return f"{text}: {why}" if why else text


def run_installer(argv: list[str], env: dict) -> int:
    """Run the installer as a child (so the gate can explain a failure); pass signals on."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        child = subprocess.Popen(argv, env=env)
    except FileNotFoundError:
        say(f"allowed, but {argv[0]!r} was not found")
        return EXIT_NOT_FOUND
    except OSError as error:
        say(f"allowed, but {argv[0]!r} could not be executed: {error}")
        return EXIT_NOT_EXECUTABLE
    forwarded = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.signal(s, lambda signum, frame: child.send_signal(signum)) for s in forwarded}
    try:
        status = child.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 128 - status if status < 0 else status  # killed by a signal: the shell's convention


def shown(command: list[str]) -> str:
    return " ".join(shlex.quote(part) for part in command)  # shlex.join needs Python 3.8


def say(message: str) -> None:
    print(f"{PREFIX} {message}", file=sys.stderr, flush=True)
