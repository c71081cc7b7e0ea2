"""What one worker process spends on the package index and on streamed answers, bounded
(docs/index-upstream.md).

Under granian (WSGI, a fixed pool of blocking request threads) a request holds its thread until
its body is sent: a client that stops reading, or an upstream that trickles, holds it for as long
as that lasts. So, per worker process:

- index requests, exports (their answers stream) and verifications hold at most `slots` threads at once
  (the pool minus RESERVED_THREADS, which stay free for `/healthz`, `/evaluate` and the
  console); past that, 503 with Retry-After. A
  busy worker is not a stuck one, though: when every slot is taken but one of them was taken
  less than QUEUE_SECONDS ago (a page answered from the cache takes milliseconds), a request
  waits up to QUEUE_SECONDS for a slot before it is refused; slots all held longer than that
  (clients that stopped reading, a trickling upstream) refuse at once;
- one token holds all of those slots but one (at least two): the last stays free for other
  tokens, and a client's next request never finds its previous one still counted while its
  response closes (pip fetches one file after another, and retries a 503 but not a 429);
  past that, 429 with Retry-After;
- each token has a token bucket for index fetches, and one for each API route declared with a
  rate of its own (`rate=` in interface.api.routing: starting runs, filing requests,
  verifications); an empty bucket is 429 with Retry-After (the seconds until the next request fits);
- a route whose answer is a long pass over the store (a verification: seconds of CPU on a large
  chain, its answer only ready at the end) holds one of those slots while it runs, and at most its
  Rate's `at_once` of them run at once on a worker, whoever asks; past that, 429 at once, its
  bucket unspent. (Ten verifications by one auditor token held every thread of two workers, and
  `/healthz` and `/evaluate` waited up to a minute behind them: the gate, denying after 10 s,
  denied every sandbox meanwhile.)

A body the app holds whole in memory (a judged page, a refusal) is handed to the server as one
buffer, its slot released at once: granian sends a list in one write, while it pulls an iterator
chunk by chunk through Python, taking the GIL for each. Streamed bodies (files, relays) stay
iterators, their slot held until they are sent.

The buckets and counts are per worker process (workers share no memory): a token's limit over
the whole service is the per-worker one times the workers its connections land on. They are keyed
by a digest of the token the credential carries, however the header spells it (the scheme's case,
the spaces after it, Basic's user name): one token is one key, and a bad token spends its own
bucket, nobody else's.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections import OrderedDict
from http.cookies import CookieError, SimpleCookie
from typing import TYPE_CHECKING

from flask import request

from domain.limits import INDEX_FETCHES_PER_MINUTE
from interface.exports import STREAMING
from interface.index.access import SLOT, credentials
from interface.problems import problem

if TYPE_CHECKING:
    from interface.api.routing import Api, Rate

RESERVED_THREADS = 2  # request threads index requests never take
QUEUE_SECONDS = 0.5  # the longest a request waits for a slot that quick requests hold
UNBOUNDED_SLOTS = 64  # when the server's thread count is unknown (the development server)
MAX_KEYS = 10_000  # tokens whose buckets a worker remembers (least recently seen forgotten)
_INDEX = ("/pypi/", "/npm/")
IN_MEMORY = "runcode_policy.body_in_memory"  # environ: the app's response has its whole body in memory


def slots_for(threads: int | None) -> int:
    return UNBOUNDED_SLOTS if threads is None else max(1, threads - RESERVED_THREADS)


class Bucket:
    """`per_minute` requests a minute, as many at once (refilled continuously)."""

    def __init__(self, per_minute: int, now: float):
        self.capacity, self.rate = float(per_minute), per_minute / 60.0
        self.level, self.at = self.capacity, now

    def take(self, now: float) -> float:
        """0 when a request fits now (and spends it); else the seconds until one does."""
        self.level = min(self.capacity, self.level + (now - self.at) * self.rate)
        self.at = now
        if self.level >= 1:
            self.level -= 1
            return 0.0
        return (1 - self.level) / self.rate


class Buckets:
    def __init__(self, per_minute: int):
        self.per_minute = per_minute
        self._buckets: OrderedDict[str, Bucket] = OrderedDict()

    def take(self, key: str, now: float) -> float:
        bucket = self._buckets.pop(key, None) or Bucket(self.per_minute, now)
        self._buckets[key] = bucket
        while len(self._buckets) > MAX_KEYS:
            self._buckets.popitem(last=False)
        return bucket.take(now)


class IndexBounds:
    """WSGI middleware around the whole app: index requests and exports take a slot for as long
    as their body is being sent, verifications while they run; index fetches and the routes with
    a rate of their own (run starts, filed requests, verifications) spend their token's bucket."""

    def __init__(self, app, threads: int | None, session_cookie: str = "session", rated: tuple[Api, ...] = ()):
        self.app = app
        self.session_cookie = session_cookie  # the console's: its exports are keyed by its session
        self.slots = slots_for(threads)
        self.per_token = max(2, self.slots - 1)
        self._held: dict[str, int] = {}  # slots held per token
        self._running: dict[str, int] = {}  # slots held per kind of request ("exports", "verifications")
        self._taken: list[float] = []  # when each held slot was taken (monotonic), oldest first
        self._lock = threading.Lock()
        self._released = threading.Condition(self._lock)
        self._fetches = Buckets(INDEX_FETCHES_PER_MINUTE)
        self._rated = [
            (e.method, _path(api.prefix + e.rule), e.rate) for api in rated for e in api.endpoints if e.rate is not None
        ]
        self._buckets = {rate: Buckets(rate.per_minute) for _, _, rate in self._rated}  # one per Rate

    def __call__(self, environ, start_response):
        path, method = environ.get("PATH_INFO", ""), environ.get("REQUEST_METHOD", "")
        for rated_method, pattern, rate in self._rated:
            if method == rated_method and pattern.match(path):
                return self._rated_call(rate, environ, start_response)
        if not path.startswith(_INDEX):
            if method == "GET":  # an export streams: it takes a slot too, once it is known to be one
                return self._export_in_a_slot(environ, start_response)
            return self.app(environ, start_response)
        refusal = self._spend(self._fetches, environ, "index requests")
        key = _key(environ)
        if refusal is not None:
            return refusal(environ, start_response)
        holder = self._take_slot(key)
        if not isinstance(holder, _Slot):
            return holder(environ, start_response)
        environ[SLOT] = holder  # the index re-keys it once it knows who asks
        return self._answer_holding(holder, environ, start_response)

    def _rated_call(self, rate: Rate, environ, start_response):
        """A route with a rate of its own. One that runs long (`at_once`) takes its slot first: a
        request refused for want of one spends nothing of its token's bucket."""
        holder = None
        if rate.at_once is not None:
            scope = _workspace_key(environ) if rate.one_per_workspace else None
            holder = self._take_slot(_key(environ), rate.what, rate.at_once, scope)
            if not isinstance(holder, _Slot):
                return holder(environ, start_response)
        refused = self._spend(self._buckets[rate], environ, rate.what)
        if refused is not None:
            if holder is not None:
                holder.release()
            return refused(environ, start_response)
        if holder is None:
            return self.app(environ, start_response)
        return self._answer_holding(holder, environ, start_response)

    def _answer_holding(self, holder: _Slot, environ, start_response):
        """The app's answer, `holder` released once its body is sent (at once when the body is
        whole in memory, as a verification's is: its work was done before it)."""
        said: list = []

        def starting(status, headers, *rest):
            said.append(next((int(v) for k, v in headers if k.lower() == "content-length" and v.isdigit()), None))
            return start_response(status, headers, *rest)

        try:
            body = self.app(environ, starting)
        except BaseException:
            holder.release()
            raise
        releasing = _Releasing(body, holder.release, said[-1] if said else None)
        if not environ.get(IN_MEMORY):
            return releasing
        try:
            return [b"".join(body)]
        finally:
            releasing.close()

    def _export_in_a_slot(self, environ, start_response):
        """An export (decisions as CSV or JSONL, through the API or the console) streams its rows
        as they are read, so a client that reads slowly holds its thread as the index's streamed
        bodies do: it takes a slot the same way before its first byte is sent, keyed by its token
        (the console's, by its session cookie). Every other answer takes none."""
        said = []
        body = self.app(environ, lambda *started: said.append(started))
        if not environ.get(STREAMING) or not said:
            if said:
                start_response(*said[-1])
            return body
        key = _key(environ) if environ.get("HTTP_AUTHORIZATION") else _digest(self._session(environ))
        holder = self._take_slot(key, "exports")
        if not isinstance(holder, _Slot):
            if hasattr(body, "close"):
                body.close()  # no more of it is read: the export's rows are read as they are sent
            return holder(environ, start_response)
        start_response(*said[-1])
        return _Releasing(body, holder.release)

    def _session(self, environ) -> str:
        """The console session's cookie value alone (other cookies would make a key per request)."""
        jar = SimpleCookie()
        try:
            jar.load(environ.get("HTTP_COOKIE", ""))
        except CookieError:
            return environ.get("HTTP_COOKIE", "")
        found = jar.get(self.session_cookie)
        return found.value if found is not None else ""

    def _spend(self, buckets: Buckets, environ, what: str):
        with self._lock:
            wait = buckets.take(_key(environ), time.monotonic())
        if not wait:
            return None
        seconds = max(1, math.ceil(wait))
        detail = (
            f"too many {what} with this token: at most {buckets.per_minute} a minute per worker; retry in {seconds} s"
        )
        return refusal(429, "Too Many Requests", detail, seconds)

    def _take_slot(self, key: str, what: str = "index requests", at_once: int | None = None, scope: str | None = None):
        """The slot taken, or the refusal; `at_once`: the most slots requests of `what` hold;
        `scope`: the workspace asking, which holds one of them at most."""
        scoped = f"{what} of {scope}" if scope is not None else None
        with self._lock:
            if self._held.get(key, 0) >= self.per_token:
                detail = (
                    f"this token already has {self.per_token} {what} in progress on this worker "
                    "(the most one token may hold); retry when one has finished"
                )
                return refusal(429, "Too Many Requests", detail, 1)
            if at_once is not None and self._running.get(what, 0) >= at_once:
                detail = (
                    f"the most {what} this worker runs at once ({at_once}) are in progress; retry when one has finished"
                )
                return refusal(429, "Too Many Requests", detail, 1)
            if scoped is not None and self._running.get(scoped, 0) >= 1:
                detail = f"one of this workspace's {what} is in progress on this worker; retry when it has finished"
                return refusal(429, "Too Many Requests", detail, 1)
            until = time.monotonic() + QUEUE_SECONDS
            while len(self._taken) >= self.slots:
                now = time.monotonic()
                if now >= until or now - self._taken[-1] >= QUEUE_SECONDS:  # all held long: stuck, not busy
                    detail = (
                        f"all {self.slots} slots of this worker for index requests and exports are busy (slow "
                        "upstreams or clients that stopped reading); retry shortly"
                    )
                    return refusal(503, "Index busy", detail, 1)
                self._released.wait(until - now)
            self._held[key] = self._held.get(key, 0) + 1
            counted = (what,) if scoped is None else (what, scoped)
            for kind in counted:
                self._running[kind] = self._running.get(kind, 0) + 1
            taken = time.monotonic()
            self._taken.append(taken)
        return _Slot(self, key, taken, counted)

    def _rekey(self, slot: _Slot, key: str) -> str | None:
        """Count `slot` as `key`'s; why not when that key holds its share already (it keeps its own)."""
        with self._lock:
            if key == slot.key:
                return None
            if self._held.get(key, 0) >= self.per_token:
                return (
                    f"this sandbox already has {self.per_token} index requests in progress on this worker, "
                    "its runs' together (the most one token may hold); retry when one has finished"
                )
            self._drop(slot.key)
            self._held[key] = self._held.get(key, 0) + 1
            slot.key = key
        return None

    def _drop(self, key: str, counts: dict[str, int] | None = None) -> None:
        counts = self._held if counts is None else counts
        left = counts.get(key, 0) - 1
        if left > 0:
            counts[key] = left
        else:
            counts.pop(key, None)

    def _release(self, key: str, taken: float, counted: tuple[str, ...]) -> None:
        with self._lock:
            self._drop(key)
            for kind in counted:
                self._drop(kind, self._running)
            self._taken.remove(taken)
            self._released.notify()


def mark_in_memory(response, environ: dict | None = None):
    """After each request (`environ`, default this request's): say when its body is whole in
    memory (not streamed), for IndexBounds."""
    if not response.is_streamed:
        (request.environ if environ is None else environ)[IN_MEMORY] = True
    return response


def _path(rule: str) -> re.Pattern:
    """A route's rule (`/workspaces/<ws>/runs`) as a pattern of the paths it answers, a trailing
    slash or not (Flask redirects one: it is spent too)."""
    return re.compile("^" + re.sub(r"<[^>]+>", "[^/]+", re.escape(rule)) + "/?$")


def _key(environ) -> str:
    header = environ.get("HTTP_AUTHORIZATION", "")
    return _digest(credentials(header) or header)  # a header that carries no token is its own key


def _workspace_key(environ) -> str:
    """The workspace a route's path names (`/api/v1/workspaces/<ws>/...`); the deployment's own
    routes share one key."""
    parts = environ.get("PATH_INFO", "").split("/")
    return "workspace:" + parts[4] if parts[1:4] == ["api", "v1", "workspaces"] and len(parts) > 4 else "deployment"


def _digest(credential: str) -> str:
    return hashlib.sha256(credential.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def refusal(status: int, title: str, detail: str, retry_after: int):
    """problem+json, the reason in the status line too (pip, uv) and in `error` (npm prints it)."""
    answer = problem(status, title, detail, headers={"Retry-After": str(retry_after)}, phrase=detail)
    answer.set_data(json.dumps({**json.loads(answer.get_data()), "error": detail}))
    return answer


class _Slot:
    """One request's slot: whose it counts as, what it is taken for, and its release (once)."""

    def __init__(self, bounds: IndexBounds, key: str, taken: float, counted: tuple[str, ...]):
        self._bounds, self.key, self._taken, self._counted, self._released = bounds, key, taken, counted, False

    def rekey(self, key: str) -> str | None:
        """Count it as `key`'s (the API token a run's token was started by, so that one sandbox's
        runs together hold one token's share: 120 runs a minute each took a share of their own,
        and one sandbox held every slot); why not, when that key holds its share."""
        return self._bounds._rekey(self, _digest("token:" + key))

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._bounds._release(self.key, self._taken, self._counted)


class _Releasing:
    """The app's body, releasing the slot once it is sent, broken off or dropped (whichever
    comes first; the server may not call close(), but it drops the body). With the body's
    `length` known, the slot is released as its last bytes are handed over: granian may ask past
    them only when it drops the body, seconds later, and a client's next request (pip's, npm's,
    one file after another) then found its previous one still counted (429)."""

    def __init__(self, body, release, length: int | None = None):
        self._body, self._release, self._length, self._sent = body, release, length, 0
        self._done = self._freed = False

    def __iter__(self):
        try:
            for chunk in self._body:
                self._sent += len(chunk)
                if self._length is not None and self._sent >= self._length:
                    self._free()
                yield chunk
        finally:
            self.close()

    def __del__(self):
        self.close()

    def _free(self) -> None:
        if not self._freed:
            self._freed = True
            self._release()

    def close(self) -> None:
        if self._done:
            return
        self._done = True
        try:
            if hasattr(self._body, "close"):
                self._body.close()
        finally:
            self._free()
