"""aspan/events.py's rules (issue 30, mutation run): each packet event with the fields docs/LOGS.md gives it.

docs/LOGS.md, "Events": ``tx`` (flow, seq, len, kind, hop), ``cache`` (segments, bytes; the flow is not
written), ``cache_full`` and ``hit`` (flow, seq), ``ack_gen`` (flow, ack, window, reason), ``drop``
(reason, and only the packet fields that are known: ptype, flow, seq, ack, len, then any detail).
``as_sink``: a sink as it is, a plain function through a writer of these events, None logs nothing.
"""
from __future__ import annotations

import pytest
from aspan.events import CallbackSink, EventWriter, NullSink, as_sink


def recorder():
    got = []
    return got, (lambda now, ev, **f: got.append((now, ev, f)))


def test_each_packet_event_has_the_fields_the_log_format_gives_it():
    got, emit = recorder()
    s = as_sink(emit)
    s.tx(1.0, "F", 7, 100, "fwd", 2)
    s.cache(2.0, 3, 300, "F")
    s.cache(2.5, 0, 0)
    s.cache_full(3.0, "F", 8)
    s.hit(4.0, "F", 9)
    s.ack_gen(5.0, "F", 10, 2000, "slack")
    assert got == [
        (1.0, "tx", {"flow": "F", "seq": 7, "len": 100, "kind": "fwd", "hop": 2}),
        (2.0, "cache", {"segments": 3, "bytes": 300}),
        (2.5, "cache", {"segments": 0, "bytes": 0}),
        (3.0, "cache_full", {"flow": "F", "seq": 8}),
        (4.0, "hit", {"flow": "F", "seq": 9}),
        (5.0, "ack_gen", {"flow": "F", "ack": 10, "window": 2000, "reason": "slack"}),
    ]
    assert s.flush_counts(6.0) is None and s.flush_counts(6.0, final=True) is None and len(got) == 6


def test_a_drop_names_only_what_is_known_of_the_packet_in_order():
    got, emit = recorder()
    s = as_sink(emit)
    s.drop(1.0, "loss")
    s.drop(2.0, "queue", ptype="tcp", flow="F", seq=0, ack=0, length=0)
    s.drop(3.0, "malformed", ptype="?", detail="short", size=3)
    assert got[0] == (1.0, "drop", {"reason": "loss"})
    assert got[1] == (2.0, "drop", {"reason": "queue", "ptype": "tcp", "flow": "F", "seq": 0, "ack": 0, "len": 0})
    assert list(got[1][2]) == ["reason", "ptype", "flow", "seq", "ack", "len"]
    assert got[2] == (3.0, "drop", {"reason": "malformed", "ptype": "?", "detail": "short", "size": 3})
    s.drop(4.0, "suppressed", ack=5)
    s.drop(5.0, "ttl", seq=6, length=7)
    assert got[3:] == [(4.0, "drop", {"reason": "suppressed", "ack": 5}),
                       (5.0, "drop", {"reason": "ttl", "seq": 6, "len": 7})]


def test_as_sink_keeps_a_sink_wraps_a_function_and_silences_none():
    sink = NullSink()
    assert as_sink(sink) is sink
    got, emit = recorder()
    wrapped = as_sink(emit)
    assert isinstance(wrapped, CallbackSink)
    wrapped.emit(0.5, "x", a=1)
    assert got == [(0.5, "x", {"a": 1})]
    assert isinstance(as_sink(None), NullSink)


def test_the_null_sink_writes_nothing_and_returns_nothing():
    s = NullSink()
    assert s.emit(0.0, "x", a=1) is None
    assert s.tx(0.0, "F", 1, 1, "send", 0) is None
    assert s.cache(0.0, 1, 1) is None
    assert s.hit(0.0, "F", 1) is None and s.cache_full(0.0, "F", 1) is None
    assert s.drop(0.0, "loss") is None and s.ack_gen(0.0, "F", 1, 1, "slack") is None


def test_a_writer_without_emit_refuses():
    with pytest.raises(NotImplementedError):
        EventWriter().emit(0.0, "x")
    with pytest.raises(NotImplementedError):
        EventWriter().hit(0.0, "F", 1)
