"""JSON on the hot paths of recording and sealing, through orjson where it means the same.

Every decision is written as JSON twice (its event's state, and the decisions row's `record`)
and read back once (the sealer hashes, attributes and counts it): with the standard library's
encoder and decoder that was a tenth of the CPU a decision costs. orjson does the same in a
fifth of the time. Where it refuses what the standard library takes (an integer beyond 64 bits,
`NaN`, a lone surrogate), the standard library answers, so what is read or written never
depends on which one ran.
"""

from __future__ import annotations

import json

import orjson

_SORTED = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode


def sorted_text(value) -> str:
    """`value` as compact JSON text with sorted keys (a row's copy of a record: read back by
    decoding; the one query matching its text, `reads.DECLARED`, matches this and the spaced
    text of rows written before)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # orjson.JSONEncodeError: a value it does not take
        return _SORTED(value)


# orjson reads an integer beyond 64 bits as a float, where the standard library keeps it exact:
# text with a run of 19 digits or more (the shortest that can leave 64 bits) is read by the latter.
# Found by mapping every digit to 9 and the rest to a space (a regular expression took four
# times as long as orjson's whole read).
_DIGITS_AS_NINES = bytes(57 if 48 <= byte <= 57 else 32 for byte in range(256))
_LONG_RUN = b"9" * 19


def loads(data: bytes):
    """Plain JSON data, as `json.loads` reads it (ValueError when it is not JSON)."""
    if _LONG_RUN in data.translate(_DIGITS_AS_NINES):
        return json.loads(data)
    return loads_inexact(data)


def loads_inexact(data: bytes):
    """`loads`, except that an integer beyond 64 bits may come back as a float: for a reader of
    nothing but a state's text and flags."""
    try:
        return orjson.loads(data)
    except ValueError:  # orjson.JSONDecodeError: not JSON, or JSON only the standard library takes
        return json.loads(data)


# Options under which orjson writes nothing the library's JSON transcoder would write otherwise:
# instants, dataclasses and subclasses of the built-in types go to `default` (the transcoder's own
# tagging, or a refusal), as the standard library's encoder sends them there.
_AS_TRANSCODED = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS


def transcoded_state(transcoder, state: dict) -> bytes:
    """A state as the library's `JSONTranscoder` encodes it (compact, UTF-8, instants tagged by
    its transcodings), in a fifth of the time: for states of plain data and instants, such as a
    recorded decision's. Not for a UUID (orjson writes it untagged) or a float that is not finite
    (it writes `null`): a record holds text, integers and flags (its context is text, checked)."""
    try:
        return orjson.dumps(state, default=transcoder._encode_obj, option=_AS_TRANSCODED)
    except TypeError:  # orjson.JSONEncodeError: what it does not take, the transcoder answers for
        return transcoder.encode(state)
