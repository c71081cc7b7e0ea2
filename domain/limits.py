"""Every bound a caller can reach, stated once: the rules, the API schemas and the docs use these."""

from __future__ import annotations

MAX_SPECS = 500  # specs per request, and decisions per request after a command's option expansion
# What that bounds an answer to: every field a caller controls at its limit, in characters that
# JSON escapes the most (tests/application/test_request_bounds.py builds that answer).
# (A label's character outside the BMP is 12 bytes of JSON: 4 MiB, stated before, was 5.8 MB.)
MAX_ANSWER_BYTES = 8 * 1024 * 1024
# Parsing is linear, but hostile npm ranges cost ~4 µs a character (bench/parse_worst_case.py):
# capping a request's total spec text bounds the CPU one request can take.
MAX_SPEC_CHARS = 64 * 1024
MAX_ERRORS = 100  # field errors one refusal names (the rest counted in one more)
# Entries in one list (allow or deny, per language): a Save past it is refused, naming the list.
# It bounds what one Save writes and what every evaluate's cache refresh loads.
MAX_LIST_ENTRIES = 10_000
MAX_TEXT = 4096  # one spec, entry or egress target
MAX_PAGE = 1000  # rows in one page of history, decisions or requests
# A run's decisions one answer lists (GET /runs/{id}/decisions): its project denials first, then
# its other refusals, then its allows; past it the answer says it is `truncated`.
MAX_RUN_DECISIONS = 10_000
MAX_CHANGES = 1000  # incremental changes in one request
MAX_RESOLVED = 64  # resolved addresses judged with one egress target, and kept in its decision
# Addresses the egress proxy judges of its own lookup of one name (all of them; a decision keeps
# MAX_RESOLVED, refused ones first). A name whose answer is longer is refused unjudged: a DNS
# answer over TCP holds thousands, and no real name has more than tens.
MAX_LOOKUP_ADDRESSES = 1024
MAX_ALLOWLIST = 10_000  # hostnames in an egress allowlist under test
MAX_NOTE = 2000  # a change's note
MAX_LABEL = 200  # a token's name, each value of a decision's context
MAX_FILTER = 500  # a filter value or cursor in a query
MAX_QUOTED = 100  # characters of a caller's text a refusal quotes back (`domain.text.quoted`)
# The widest integer both stores hold (SQLite's INTEGER, PostgreSQL's BIGINT): a version, sequence
# number or tree size a caller names past it is refused, never sent to the store (SQLite: 500).
MAX_INTEGER = 2**63 - 1
# Per token and per worker process (interface.index.bounds): a token bucket of this many a
# minute, as many at once. Far above what one install asks for; a runaway loop is refused.
RUN_STARTS_PER_MINUTE = 120  # POST /runs
REQUESTS_FILED_PER_MINUTE = 60  # POST /requests (filing or joining): each is a sealed event
INDEX_FETCHES_PER_MINUTE = 6000  # pages, packuments and files of the package index
# GET .../audit/verify: a linear pass over a chain and its read models (seconds on a large store,
# all CPU), so at most this many run at once per worker process, each in one of its index slots.
VERIFIES_PER_MINUTE = 6
VERIFIES_AT_ONCE = 2  # one of them a workspace's at most: others still get their turn
# The largest file the package index fetches whole before it serves it (checked against its page's
# digests, or a wheel read for what it declares; the biggest wheels on PyPI, CUDA builds, are
# around 2 GiB). Each one in flight is spooled to the temporary disk, outside the cache's bound.
MAX_INDEX_FILE_BYTES = 4 * 1024 * 1024 * 1024
# Decisions one answer of the package index records on its project's versions, for each thing it
# judges of them (the versions a rule hides; what the versions declare beyond the registry),
# refusals first: a packument of thousands of versions each declaring thousands of git
# dependencies is a bounded write. The last one recorded counts the hidden versions past it
# (`more_hidden` in its context), which none of them names.
MAX_VERSION_DECISIONS = 50
# A dependency closure (POST /allowlist/closure, approval with dependencies): names it may hold
# and upstream fetches (project pages, packuments, metadata files) one call may make.
MAX_CLOSURE_NAMES = 500
MAX_CLOSURE_FETCHES = 2000
# Names one imported requirements file or lockfile may list (every package of a lockfile).
MAX_IMPORT_NAMES = 5000
# Rules beyond names (`domain.rules`): version deny entries per language, and the length of one.
# A node range costs ~4 µs a character to read, so a Save's ranges stay within a second of work.
MAX_VERSION_DENIES = 1000
MAX_VERSION_DENY_TEXT = 256
