"""Issue 13, item 4: drop lines are limited per reason and second; counters and totals stay exact."""
import json

from aspan.agent import SnoopAgent
from aspan.policy import SnoopConfig
from plots.logs import load_rep
from plots.summary import summarize_rep
from routing.overlay.engine import ForwardingEngine
from routing.drivers.eventlog import EventLog
from routing.links.loss import NoLoss
from routing.topology.routes import chain_routes
from routing.forwarding.step import DROP_LINES_PER_S

A, B, C, D = "10.2.1.1", "10.2.1.2", "10.2.1.3", "10.2.1.4"


def node(log):
    return ForwardingEngine(B, chain_routes([A, B, C, D])[B], NoLoss(), SnoopAgent("B", SnoopConfig()),
                            lambda n: 1.0, log)


def test_a_flood_of_junk_writes_a_bounded_number_of_lines_and_exact_totals(tmp_path):
    rep = tmp_path / "v" / "rep0"
    rep.mkdir(parents=True)
    (rep / "meta.json").write_text(json.dumps({"variant": "v", "repetition": 0, "status": "ok"}))
    log = EventLog(rep / "B.log", "B")
    eng = node(log)
    n_per_s, seconds = 5000, 3
    for k in range(n_per_s * seconds):
        eng.on_datagram(b"junk%d" % k, 100.0 + k / n_per_s)
    eng.step.flush_drops(100.0 + seconds, final=True)
    log.emit(100.0 + seconds, "node_stop", address=B, drops=eng.drops)
    log.close()
    lines = [json.loads(l) for l in (rep / "B.log").read_text().splitlines()]
    drops = [e for e in lines if e["ev"] == "drop"]
    assert len(drops) == seconds * (DROP_LINES_PER_S + 1)          # not 15,000 lines
    assert sum(e.get("count", 1) for e in drops) == n_per_s * seconds
    assert [e["count"] for e in drops if "count" in e] == [n_per_s - DROP_LINES_PER_S] * seconds
    assert lines[-1]["drops"]["malformed"] == n_per_s * seconds   # node_stop: exact
    assert [e["t"] for e in lines] == sorted(e["t"] for e in lines)
    assert summarize_rep(load_rep(rep))["drops_malformed"] == n_per_s * seconds


def test_few_drops_are_logged_one_by_one():
    events = []
    eng = node(lambda now, ev, **f: events.append((ev, f)))
    for k in range(DROP_LINES_PER_S):
        eng.on_datagram(b"x", float(k) / 100)
    eng.step.flush_drops(10.0, final=True)
    assert len(events) == DROP_LINES_PER_S and all("count" not in f for _, f in events)
