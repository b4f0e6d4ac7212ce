"""Issue 27, item 2: a node's per-packet log lines are bounded by what its configured flows could cause.
Lines of traffic no configured flow explains are aggregated as drop lines are (routing.forwarding.flowlog), the
log stays under the documented bound (docs/LOGS.md, "Traffic no configured flow explains") and
node_stop's totals count every datagram exactly; a normal run's logs do not change.
"""
import hashlib
import json
from collections import Counter
import pytest
import experiments.build as build
from aspan.events import as_sink
from aspan.fields import AspanFields
from experiments.backends import sim
from experiments.build import build_node, configured_flows
from experiments.schema import load_experiment
from routing.drivers.eventlog import EventLog
from routing.forwarding.flowlog import (FLOOD_LOG_BYTES_PER_S, MAX_LINE_BYTES, PER_PACKET_EVENTS, FlowLog,
                                        exact_totals)
from routing.forwarding.step import DROP_LINES_PER_S, DROP_REASONS
from routing.overlay.wire import DATA, Packet, encode
from tcp_user.segment import ACK, Segment


A, B, C, D = "10.2.1.1", "10.2.1.2", "10.2.1.3", "10.2.1.4"


def chain_cfg(policy: str = "every"):
    return load_experiment({"name": "flood", "etx": {"settle_s": 0}, "snoop": {"policy": policy},
                            "flows": [{"sender": "A", "receiver": "D", "segments": 10}]}, "flood.yaml").variants[0].config


def forged(k: int) -> bytes:
    """The k-th datagram of the flood: a well-formed data segment of a flow nobody configured (A's and
    D's addresses, sender ports no flow uses), mostly through B, one in 8 addressed to B itself (no
    endpoint: dropped) and one in 16 to an address without a route (dropped)."""
    dst = B if k % 8 == 0 else "10.9.9.9" if k % 16 == 1 else D
    seg = Segment((1000 * k) % 2**32, 1, ACK, 65535, (), b"f" * 1000)
    return encode(Packet(DATA, A, 40000 + k % 1000, dst, 6000, 1, AspanFields(), seg))


def flood(tmp_path, rate: int, seconds: float):
    """Node B of the chain (its configured flow A->D idle) hears ``rate`` forged datagrams a second of
    virtual time, driven as the UDP driver drives it (drop and count lines every 50 ms, then node_stop)."""
    path = tmp_path / "B.log"
    log = EventLog(path, "B", batch=True)
    core = build_node(chain_cfg(), "B", 1, log, 0.0)
    step = core.engine.step
    n = int(rate * seconds)
    t0, flushed = 100.0, 100.0
    for k in range(n):
        now = t0 + k / rate
        core.on_datagram(forged(k), now, A)
        if now - flushed >= 0.05:
            step.flush_drops(now)
            log.flush()
            flushed = now
    end = t0 + seconds
    step.flush_drops(end, final=True)
    log.emit(end, "node_stop", address=B, **exact_totals(step), snoop=dict(core.engine.agent.stats))
    log.close()
    return path, n, core


def test_a_flood_of_forged_segments_of_no_configured_flow_stays_under_the_documented_bound(tmp_path):
    rate, seconds = 20_000, 5.0
    path, n, core = flood(tmp_path, rate, seconds)
    raw = path.read_bytes().splitlines(keepends=True)
    lines = [json.loads(x) for x in raw]
    # the documented bound, in every second of the flood, and every line within MAX_LINE_BYTES
    assert lines[-1]["ev"] == "node_stop"
    per_second = Counter()
    for x, e in zip(raw[:-1], lines[:-1]):
        assert len(x) <= MAX_LINE_BYTES, x
        per_second[int(e["t"] - 100.0)] += len(x)
    assert max(per_second.values()) <= FLOOD_LOG_BYTES_PER_S
    assert path.stat().st_size - len(raw[-1]) <= (seconds + 1) * FLOOD_LOG_BYTES_PER_S
    # each name: at most DROP_LINES_PER_S lines of its own a second, the rest counted
    own = Counter((e["ev"] if e["ev"] != "drop" else e["reason"], int(e["t"] - 100.0))
                  for e in lines if e["ev"] not in ("unexplained", "node_stop") and "count" not in e)
    assert max(own.values()) <= DROP_LINES_PER_S
    # node_stop's totals count every datagram exactly: forwarded or dropped by a named reason
    stop = lines[-1]
    assert stop["ev"] == "node_stop"
    through = sum(1 for k in range(n) if k % 8 and k % 16 != 1)
    assert stop["tx"]["fwd"] == through and stop["tx"]["send"] == stop["tx"]["local"] == 0
    assert stop["drops"]["no_route"] == n - through and sum(stop["drops"].values()) == n - through
    assert stop["tx"]["fwd"] + sum(stop["drops"].values()) == n
    snoop = stop["snoop"]
    assert snoop["cached"] + snoop["cache_full"] == through        # B caches every segment it can
    assert stop["unexplained"] == {"tx": through, "cache": snoop["cached"], "cache_full": snoop["cache_full"]}
    # and the lines say the same: own lines plus count lines, per name
    for ev, total in stop["unexplained"].items():
        logged = sum(1 for e in lines if e["ev"] == ev)
        counted = sum(e["count"] for e in lines if e["ev"] == "unexplained" and e["event"] == ev)
        assert logged + counted == total
    dropped = sum(e.get("count", 1) for e in lines if e["ev"] == "drop")
    assert dropped == n - through
    # the bytes: a flood of 100,000 forged segments writes a few dozen kB, not 25 MB
    assert path.stat().st_size < 0.01 * n * 250


def test_the_lines_of_a_configured_flow_are_all_written(tmp_path):
    """The same flood as the configured flow A->D (its addresses and ports): every line is written (what
    the plots count), and no line says ``unexplained``."""
    log = EventLog(tmp_path / "B.log", "B")
    core = build_node(chain_cfg(), "B", 1, log, 0.0)
    [flow] = configured_flows(chain_cfg())
    assert flow == f"{A}:5000>{D}:6000"
    for k in range(500):
        seg = Segment(1000 * k, 1, ACK, 65535, (), b"f" * 1000)
        core.on_datagram(encode(Packet(DATA, A, 5000, D, 6000, 1, AspanFields(), seg)), 100.0 + k / 10_000, A)
    core.engine.step.flush_drops(101.0, final=True)
    log.close()
    lines = [json.loads(x) for x in (tmp_path / "B.log").read_text().splitlines()]
    assert sum(e["ev"] == "tx" for e in lines) == 500 and sum(e["ev"] == "cache" for e in lines) == 500
    assert not any(e["ev"] == "unexplained" for e in lines)
    assert exact_totals(core.engine.step) == {"drops": dict.fromkeys(DROP_REASONS, 0)}   # node_stop as before


def test_every_per_packet_event_of_an_unexplained_flow_is_aggregated_and_counted():
    """Each per-packet event name, 25 times in one second for a flow no configured flow explains: 20 lines,
    then one count line of 5; the same events of a configured flow all pass; events of no flow pass."""
    out = []
    gate = FlowLog(as_sink(lambda now, ev, **f: out.append((ev, f))), ["1.1.1.1:1>2.2.2.2:2"])
    calls = {"tx": lambda fl, t: gate.tx(t, fl, 1, 10, "fwd", 1),
             "cache": lambda fl, t: gate.cache(t, 1, 10, fl),
             "cache_full": lambda fl, t: gate.cache_full(t, fl, 1),
             "hit": lambda fl, t: gate.hit(t, fl, 1),
             "ack_gen": lambda fl, t: gate.ack_gen(t, fl, 1, 100, "ackall")}
    calls.update({ev: (lambda ev: lambda fl, t: gate.emit(t, ev, flow=fl, seq=1))(ev)
                  for ev in PER_PACKET_EVENTS if ev not in calls})
    assert sorted(calls) == sorted(PER_PACKET_EVENTS)
    for ev, call in calls.items():
        for k in range(25):
            call("9.9.9.9:1>2.2.2.2:2", 10.0 + k / 100)
            call("1.1.1.1:1>2.2.2.2:2", 10.0 + k / 100)
    gate.emit(10.5, "etx", nbr="x", forward=1.0)
    gate.flush_counts(11.0, final=True)
    by_ev = Counter(ev for ev, _ in out)
    for ev in PER_PACKET_EVENTS:
        assert by_ev[ev] == 25 + DROP_LINES_PER_S
    counts = {f["event"]: f["count"] for ev, f in out if ev == "unexplained"}
    assert counts == dict.fromkeys(PER_PACKET_EVENTS, 25 - DROP_LINES_PER_S)
    assert gate.counts == dict.fromkeys(PER_PACKET_EVENTS, 25)
    assert by_ev["etx"] == 1
    assert all("flow" not in f for ev, f in out if ev == "cache")   # the cache line is the node's, as before


@pytest.fixture(params=[{"policy": "adaptive", "pkt_qos": 0.99}, {"scheme": "classic", "policy": "every"},
                        {"scheme": "ackall", "policy": "every"}], ids=["aspan", "classic", "ackall"])
def crossing(request):
    """A diamond with two crossing flows (A->D, C->B), 2 % loss: every node forwards and snoops (A-SPAN, and
    schemes with more per-packet events: local_rto, premature, ack_gen)."""
    return load_experiment({"name": "x", "seed": 3, "topology": {"nodes": ["A", "B", "C", "D"],
                            "links": [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]},
                            "loss": {"default": {"model": "bernoulli", "rate": 0.02}},
                            "snoop": request.param,
                            "flows": [{"sender": "A", "receiver": "D", "segments": 300},
                                      {"sender": "C", "receiver": "B", "segments": 300}]}, "x.yaml")


def _logs(rep_dir) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(rep_dir.glob("*.log"))}


def test_a_normal_run_logs_exactly_what_a_node_without_the_gate_logs(tmp_path, crossing, monkeypatch):
    """The sim run of two crossing flows on a diamond, node logs byte for byte, with the gate and with a
    plain sink: the configured flows' lines are all written, nothing is aggregated, node_stop unchanged."""
    gated = tmp_path / "gated"
    gated.mkdir()
    sim.run_rep(crossing.variants[0], 0, gated)
    monkeypatch.setattr(build, "node_sink", lambda cfg, log: as_sink(log))
    plain = tmp_path / "plain"
    plain.mkdir()
    sim.run_rep(crossing.variants[0], 0, plain)
    assert _logs(gated) == _logs(plain) and len(_logs(gated)) == 4
    text = "".join(p.read_text() for p in gated.glob("*.log"))
    assert all(f'"ev":"{ev}"' in text for ev in ("tx", "cache", "hit")) and "unexplained" not in text


def test_the_kernel_data_plane_aggregates_forged_flows_too(tmp_path):
    """netns: the NFQUEUE handler's forwarder (experiments.backends.netns.node._forwarder) relays forged
    kernel segments of no configured flow, stamped at A (B snoops them) or not (relayed unsnooped); its
    lines are aggregated the same way and its totals stay exact."""
    from scapy.all import IP, TCP, Raw

    from experiments.backends.netns.node import _forwarder
    from experiments.build import route_tables
    from routing.kernel.ip_option import stamp_option
    from routing.kernel.forwarder import HOOK_FWD

    class Prober:
        @staticmethod
        def quality(nbr):
            return 0.9

    log = EventLog(tmp_path / "B.log", "B", batch=True)
    cfg = chain_cfg()
    fw = _forwarder(cfg, "B", 1, 0.0, Prober(), log, 94, True, route_tables(cfg)["B"])
    n = 1000
    for k in range(n):
        raw = bytes(IP(src=A, dst=D, ttl=64) / TCP(sport=40000 + k % 50, dport=6000, seq=1000 * k, ack=1, flags="PA")
                    / Raw(b"f" * 100))
        pkt = stamp_option(raw, 20, AspanFields(0.5, 1.0, 0, 0, 0), 1, 94) if k % 2 else raw
        assert fw.on_packet(HOOK_FWD, pkt, 100.0 + k / 500).accept
    fw.step.flush_drops(102.0, final=True)
    log.close()
    lines = [json.loads(x) for x in (tmp_path / "B.log").read_text().splitlines()]
    totals = exact_totals(fw.step)
    assert totals["tx"]["fwd"] == n and totals["unexplained"]["tx"] == n
    assert sum(e["ev"] == "tx" for e in lines) <= 2 * DROP_LINES_PER_S        # 2 s of flood: not 1,000 lines
    assert sum(e["ev"] == "tx" for e in lines) + sum(
        e["count"] for e in lines if e["ev"] == "unexplained" and e["event"] == "tx") == n
