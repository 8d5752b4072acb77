"""Tape lines no well-behaved writer produces, and a hypothesis strategy for tapes that mix them with good ones."""

from __future__ import annotations

import json
from typing import Any

import orjson
from hypothesis import strategies as st

# Lines no well-behaved writer produces, each next to the entry it resembles.
HOSTILE: list[bytes] = [
    b'{"id": 7, "kind": "message", "payload": {"content": "\xc3\x28"}}',  # invalid UTF-8 inside a payload
    b'{"id":7,"kind":"message","payload":{"c":"\xed\xa0\x80"}}',  # a surrogate written as UTF-8 bytes
    b'{"id":7,"kind":"message","payload":{"c":"\xf4\x90\x80\x80"}}',  # beyond U+10FFFF
    b'{"id":7,"kind":"message","payload":{"c":"\\q"}}',  # an escape JSON does not have
    b'{"id":7,"kind":"message","payload":{"c":NaN, "d": Infinity}}',  # what Python's json writes
    b'{"id":7,"kind":"message","payload":{"c":"\\ud800"}}',  # a lone surrogate, escaped
    b'{"id":99999999999999999999,"kind":"anchor","payload":{"name":"huge id"}}',
    b'{"id":18446744073709551615,"kind":"anchor","payload":{"name":"u64 id"}}',
    b'{"id":-9223372036854775808,"kind":"anchor","payload":{"name":"lowest id"}}',
    b'{"id":7,"kind":"anchor","payload":{"name":"then not"},"kind":"message"}',  # the last key wins
    b'{"id":7,"kind":"message","payload":{"name":"then yes"},"kind":"anchor"}',
    b'{"id":7,"kind":"anchor","payload":{},"payload":[]}',
    b'{"id":7,"kind":"message","payload":{"text":"{\\"kind\\": \\"anchor\\", \\"payload\\": {}}"}}',
    b'{"id":7,"kind":"message","payload":{"kind":"anchor","name":"nested"}}',
    b'{"id": 7, "kind": "message", "payload": {"note": "\\"kind\\": \\"anchor\\""}, "meta": {}}',
    b'{"id":7,"kind":"\\u0061nchor","payload":{"name":"escaped kind"}}',
    b'{"\\u0069d":7,"kind":"anchor","payload":{"name":"escaped key"}}',
    b'{"id":7,"kind":"anchor","payload":{"name":"\\ud800 lone"}}',
    b'{"id":7,"kind":"anchor","payload":{"name":5}}',
    b'{"id":7,"kind":"anchor","payload":{"name":"a","name":"b"}}',
    b'{"id" : 7 , "kind" : "anchor" , "payload" : { "name" : "spaced out" } }',
    b'\xef\xbb\xbf{"id":7,"kind":"message","payload":{}}',
    b'  {"id":7,"kind":"message","payload":{}}',
    b'{"id":7,"kind":"message","payload":{}}\r',
    b'{"id":7,"kind":"message","payload":{}} trailing',
    b'{"id":7.0,"kind":"message","payload":{}}',
    b'{"id":true,"kind":"message","payload":{}}',
    b'{"id":7,"kind":"message","payload":{"c":' + b"[" * 1010 + b"]" * 1010 + b"}}",
    b'{"id":7,"kind":"message","payload":{"c":' + b"[" * 600 + b"]" * 600 + b"}}",
    b'{"id":7,"kind":"message","payload":{"a":1,}}',
    b'{"id": 7, "kind": "mess',
    b"[1, 2, 3]",
    b"",
    b"   ",
    b"\t",
]

# Runs of lines that a reader of whole JSON values would count right but line by line hold no entry: two
# entries on one line, next to one entry split over two lines, so the number of values matches the lines.
MISREAD: list[bytes] = [
    b'{"id":7,"kind":"message","payload":{}} {"id":8,"kind":"message","payload":{}}\n{"id":9,"kind":"message",\n'
    b'"payload":{}}',
    b'{"id":7,"kind":"message","payload":{"a":{}\n},"meta":{}}\n{"id":8,"kind":"event","payload":{}}'
    b'{"id":9,"kind":"anchor","payload":{"name":"glued"}}',
    b'{"id":7,"kind":"anchor","payload":{"name":"split"}\n}\n\n{"id":8,"kind":"message","payload":{}} {"id":9,'
    b'"kind":"message","payload":{}}',
]

texts = st.text(max_size=12)  # lone surrogates included: json.dumps escapes them, as Bub does
payloads = st.one_of(
    st.builds(lambda t: {"role": "user", "content": t}, texts),
    st.builds(lambda t: {"content": f"the anchor {t}", "kind": "anchor"}, texts),
    st.builds(lambda t: {"name": "run", "data": {"kind": "anchor", "text": t}}, texts),
)


@st.composite
def tape_lines(draw: st.DrawFn) -> list[bytes]:
    """Lines of a tape: Bub's spaced ones, bub_nb's compact ones, older ones with a ``timestamp`` for the date,
    anchors, and hostile lines between."""
    lines = []
    next_id = draw(st.integers(-3, 3))
    for _ in range(draw(st.integers(0, 30))):
        choice = draw(st.sampled_from(["bub", "compact", "stamped", "anchor", "hostile", "binary"]))
        next_id += draw(st.sampled_from([1, 1, 1, 0, -2, 1000]))
        if choice == "hostile":
            lines.append(draw(st.sampled_from(HOSTILE + MISREAD)))
            continue
        if choice == "binary":
            lines.append(draw(st.binary(max_size=30).filter(lambda b: b"\n" not in b)))
            continue
        if choice == "anchor":
            kind, payload = "anchor", {"name": draw(texts), "state": {"note": draw(texts)}}
        else:
            kind, payload = draw(st.sampled_from(["message", "event", "tool_result"])), draw(payloads)
        record = {"id": next_id, "kind": kind, "payload": payload, "meta": {}, "date": "2026-01-01T00:00:00+00:00"}
        if choice == "stamped":  # an older writer: a timestamp where the date is, meta left out now and then
            del record["date"]
            record["timestamp"] = draw(st.one_of(st.floats(0, 4e9), st.integers(-(2**70), 2**70), st.booleans()))
            if draw(st.booleans()):
                del record["meta"]
        if choice == "compact" and draw(st.booleans()):
            lines.append(orjson.dumps(record, option=orjson.OPT_NON_STR_KEYS) if _orjson_ok(record) else b"")
        else:
            lines.append(json.dumps(record, ensure_ascii=choice == "bub").encode("utf-8", "surrogatepass"))
    return lines


def _orjson_ok(record: dict[str, Any]) -> bool:
    try:
        orjson.dumps(record)
    except orjson.JSONEncodeError:
        return False
    return True
