"""The gate's exchanges with the policy service: /evaluate, POST /runs and a run's decisions.

Standard library only, like the whole gate. Every answer that is not a clear, well-formed one
becomes CannotVerify, so the caller fails closed.
"""

from __future__ import annotations

import http.client
import json
import socket
import urllib.error
import urllib.parse
import urllib.request

DEFAULT_TIMEOUT = 10.0
DEFAULT_INSTALLER_PATH = "/usr/local/bin:/usr/bin:/bin"
MAX_ANSWER_BYTES = 16 * 1024 * 1024  # far above any real answer; bounds memory on a rogue reply
# A run's decisions the gate reads: its project denials come first, so these hold them, and the
# answer stays below MAX_ANSWER_BYTES however many the run recorded (a decision's spec and detail
# are bounded by 4,096 characters each: 500 of them are a few MiB at most).
RUN_DECISIONS_READ = 500


class CannotVerify(Exception):
    """No trustworthy answer: the gate must not run the command (fail closed)."""


class ErrorAnswer(CannotVerify):
    """The service answered with an error status; `errors` are its problem's field errors."""

    def __init__(self, text: str, status: int, errors: list):
        super().__init__(text)
        self.status, self.errors = status, errors


class CommandRefused(Exception):
    """The service will not parse the command (422 about `command`): a usage error, not a doubt."""


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # Following a redirect would re-send the bearer token to wherever it points, and turn the
    # POST into a GET: treat any redirect as an error answer instead.
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def config_from(env) -> dict:
    url, token = env.get("RUNCODE_POLICY_URL", "").strip(), env.get("RUNCODE_POLICY_TOKEN", "").strip()
    if not url or not token:
        missing = [n for n, v in (("RUNCODE_POLICY_URL", url), ("RUNCODE_POLICY_TOKEN", token)) if not v]
        raise CannotVerify(f"{' and '.join(missing)} not set")
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise CannotVerify(f"RUNCODE_POLICY_URL must be an http:// or https:// URL, not {url!r}")
    workspace = env.get("RUNCODE_POLICY_WORKSPACE", "").strip() or "default"
    base = f"{url.rstrip('/')}/api/v1/workspaces/{urllib.parse.quote(workspace, safe='')}"
    return {
        "base": base,
        "url": url,
        "token": token,
        "timeout": timeout_from(env),
        "sandbox": env.get("RUNCODE_POLICY_SANDBOX") or socket.gethostname(),
        "actor": env.get("RUNCODE_POLICY_ACTOR") or None,
        "path": env.get("RUNCODE_POLICY_INSTALLER_PATH") or DEFAULT_INSTALLER_PATH,
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


def ask(config: dict, question: dict) -> dict:
    """POST the question (`{"command": argv}` or `{"language", "specs"}`) to /evaluate; the parsed
    answer, or CannotVerify for anything else."""
    try:
        answer = call(config, "POST", "/evaluate", {**question, "context": context_of(config)})
    except ErrorAnswer as error:
        if error.status == 422 and any(str(e.get("field", "")).startswith("command") for e in error.errors):
            raise CommandRefused(str(error)) from None
        raise
    if not (
        isinstance(answer.get("allowed"), bool)
        and isinstance(answer.get("decisions"), list)
        and all(isinstance(d, dict) for d in answer["decisions"])
    ):
        raise CannotVerify("the answer does not have the shape of an evaluation")
    return answer


def create_run(config: dict) -> dict:
    """POST /runs: the index-only token the installer gets, and the index URLs."""
    run = call(config, "POST", "/runs", {"context": context_of(config)})
    if not all(isinstance(run.get(key), str) and run[key] for key in ("id", "token", "pypi", "npm")):
        raise CannotVerify("the answer does not have the shape of a run")
    return run


def run_denials(config: dict, run_id: str) -> tuple[list[dict], bool]:
    """The run's denied decisions, its project denials first (as GET /runs/{id}/decisions lists
    them), at most RUN_DECISIONS_READ of its decisions; and whether it has more."""
    path = f"/runs/{urllib.parse.quote(run_id, safe='')}/decisions"
    try:
        answer = call(config, "GET", f"{path}?limit={RUN_DECISIONS_READ}")
    except ErrorAnswer as error:
        if error.status != 422:
            raise
        answer = call(config, "GET", path)  # a service older than the gate takes no limit
    decisions = answer.get("decisions")
    if not isinstance(decisions, list):
        raise CannotVerify("the answer does not have the shape of a run's decisions")
    denied = [d for d in decisions if isinstance(d, dict) and d.get("allowed") is False]
    return denied, answer.get("truncated") is True


def end_run(config: dict, run_id: str) -> None:
    """DELETE /runs/{id}: the run's token reads the index no more, so nothing the install left
    running (a postinstall script) can use it."""
    call(config, "DELETE", f"/runs/{urllib.parse.quote(run_id, safe='')}")


def context_of(config: dict) -> dict:
    return {"sandbox": config["sandbox"], "source": "run-code", "actor": config["actor"]}


def call(config: dict, method: str, path: str, body: dict | None = None) -> dict:
    """One JSON exchange with the service; the answer object, or CannotVerify for anything else."""
    # No proxy from the environment: the sandbox reaches the service directly, and an egress
    # proxy would (rightly) refuse the service's private or loopback address anyway.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirects)
    url = config["base"] + path
    request = urllib.request.Request(
        url,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Authorization": f"Bearer {config['token']}",
        },
    )
    try:
        with opener.open(request, timeout=config["timeout"]) as response:
            if response.status == 204:  # done, and nothing to say
                return {}
            return parse_answer(response.read(MAX_ANSWER_BYTES + 1))
    except urllib.error.HTTPError as error:
        raise error_answer(error) from None
    except urllib.error.URLError as error:
        if isinstance(error.reason, (TimeoutError, socket.timeout)):  # noqa: UP041 - as below
            raise CannotVerify(f"no answer within {config['timeout']:g} s") from None
        raise CannotVerify(f"service unreachable at {url}: {error.reason}") from None
    except (TimeoutError, socket.timeout):  # noqa: UP041 - distinct classes before Python 3.10
        raise CannotVerify(f"no answer within {config['timeout']:g} s") from None
    except (OSError, http.client.HTTPException) as error:
        raise CannotVerify(f"the exchange with {url} failed: {error!r}") from None


def parse_answer(raw: bytes) -> dict:
    if len(raw) > MAX_ANSWER_BYTES:
        raise CannotVerify("the answer is too large to be a policy answer")
    try:
        answer = json.loads(raw)
    except ValueError:
        raise CannotVerify("the answer is not JSON") from None
    if not isinstance(answer, dict):
        raise CannotVerify("the answer does not have the shape of an evaluation")
    return answer


def error_answer(error: urllib.error.HTTPError) -> ErrorAnswer:
    """`HTTP 422 Invalid input: detail (field: message; ...)` from a problem+json body if any."""
    try:
        problem = json.loads(error.read(MAX_ANSWER_BYTES))
    except (OSError, ValueError):
        problem = None
    if not isinstance(problem, dict):
        return ErrorAnswer(f"HTTP {error.code} {error.reason}", error.code, [])
    title, detail = problem.get("title") or error.reason, problem.get("detail") or ""
    text = f"HTTP {error.code} {title}: {detail}".rstrip(": ")
    errors = [e for e in problem.get("errors") or [] if isinstance(e, dict)]
    if errors:
        text += " (" + "; ".join(f"{_named(e.get('field'))}: {e.get('message')}" for e in errors) + ")"
    return ErrorAnswer(text, error.code, errors)


# The fields of a request the gate fills from its own settings: a refusal names the setting too.
SET_BY = {"context.sandbox": "RUNCODE_POLICY_SANDBOX", "context.actor": "RUNCODE_POLICY_ACTOR"}


def _named(field) -> str:
    return f"{field}, set by {SET_BY[field]}" if field in SET_BY else str(field)
