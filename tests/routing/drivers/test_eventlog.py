"""routing.drivers.eventlog: the one log writer of every backend (docs/LOGS.md)."""
import json
import subprocess
import sys
from aspan.agent import SnoopAgent
from aspan.events import CallbackSink, EventWriter
from aspan.fields import AspanFields
from aspan.policy import SnoopConfig
from routing.drivers.eventlog import EventLog


FLOW = ("10.2.1.1", 5000, "10.2.1.4", 6000)


class GenericLog(EventLog):
    """The same file writer with every packet event written through the generic ``emit``."""

    tx = EventWriter.tx
    cache = EventWriter.cache


def test_lines_from_two_writers_never_interleave(tmp_path):
    path = tmp_path / "A.log"
    code = ("import sys; from pathlib import Path; from routing.drivers.eventlog import EventLog\n"
            "log = EventLog(Path(sys.argv[1]), 'A', batch=True)\n"
            "for i in range(3000):\n"
            "    log.emit(1.0 + i, 'x', who=sys.argv[2], i=i, pad='p' * 300)\n"
            "    log.tx(2.0, '10.2.1.1:5000>10.2.1.4:6000', i, 1000, 'send', 0)\n"
            "log.close()\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), w]) for w in "12"]
    for p in procs:
        assert p.wait(timeout=60) == 0
    lines = path.read_text().splitlines()
    assert len(lines) == 12000
    recs = [json.loads(l) for l in lines]
    assert {r["ev"] for r in recs} == {"x", "tx"}
    assert sum(r["ev"] == "tx" and r["seq"] == 7 for r in recs) == 2


def test_the_fast_writers_write_the_lines_the_generic_emit_writes(tmp_path):
    fast, slow = EventLog(tmp_path / "f.log", "B", batch=True), GenericLog(tmp_path / "s.log", "B", batch=True)
    for log in (fast, slow):
        agent = SnoopAgent("B", SnoopConfig(policy="every"), log)
        for i in range(3):
            agent.on_data(FLOW, 1 + 1000 * i, 1000, AspanFields(1.0, 0.99, 0, 0, 0), 1.0, 1, 0.5 + i, None)
            log.tx(0.5 + i, "10.2.1.1:5000>10.2.1.4:6000", 1 + 1000 * i, 1000, "fwd", None if i == 2 else i)
        agent.on_ack(FLOW, 2001, 4.25)
        log.close()
    lines = (tmp_path / "f.log").read_text().splitlines()
    assert lines == (tmp_path / "s.log").read_text().splitlines()
    recs = [json.loads(l) for l in lines]
    assert [r["segments"] for r in recs if r["ev"] == "cache"] == [1, 2, 3, 1]
    assert recs[-1] == {"t": 4.25, "node": "B", "ev": "cache", "segments": 1, "bytes": 1000}
    assert [r["hop"] for r in recs if r["ev"] == "tx"] == [0, 1, None]


def test_a_plain_function_receives_every_typed_event():
    seen = []
    sink = CallbackSink(lambda now, ev, **f: seen.append((ev, f)))
    sink.drop(1.0, "loss", "tcp", "f", 5, 6, 0)
    sink.drop(1.0, "malformed", detail="CRC mismatch", size=3)
    sink.ack_gen(2.0, "f", 100, 2000, "ackall")
    assert seen == [("drop", {"reason": "loss", "ptype": "tcp", "flow": "f", "seq": 5, "ack": 6, "len": 0}),
                    ("drop", {"reason": "malformed", "detail": "CRC mismatch", "size": 3}),
                    ("ack_gen", {"flow": "f", "ack": 100, "window": 2000, "reason": "ackall"})]


def test_batched_lines_wait_for_flush_and_nothing_is_written_after_close(tmp_path):
    log = EventLog(tmp_path / "n.log", "N", batch=True)
    log.emit(1.0, "x", a="quote \" and \\ backslash", b=1.5, c=None, d=True)
    assert (tmp_path / "n.log").read_text() == ""
    log.flush()
    assert json.loads((tmp_path / "n.log").read_text()) == {"t": 1.0, "node": "N", "ev": "x",
                                                           "a": "quote \" and \\ backslash", "b": 1.5,
                                                           "c": None, "d": True}
    log.close()
    log.emit(2.0, "late")
    log.flush()
    assert len((tmp_path / "n.log").read_text().splitlines()) == 1
