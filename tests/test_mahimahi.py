"""Mahimahi mm-link traces (issue 25, item 4): a link of a trace exported as delivery opportunities, and a
Mahimahi trace imported as the link's rate (``link: {mahimahi: FILE}``) on sim, local (tests/test_udp_link.py)
and netns, refused on pi.  The queue's rule in virtual time; a sim run's goodput under a trace whose rate changes; a netns
run (root) whose kernel TCP goodput tracks the trace's rate."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from conftest import start_run
from experiments.cli import main
from experiments.runner import check_backend_support, run_experiment
from experiments.schema import ExperimentError, load_experiment
from experiments.trace import COLUMNS, write
import tracefiles
from routing.links import mahimahi
from routing.links.mahimahi import PACKET_SIZE, OpportunityQueue, Schedule
from test_linkem import FakePacket
from test_netns_backend import netns  # noqa: F401  (the fixture: skips without root, checks nothing is left)

#: the rate at which a trace with one opportunity every millisecond carries its bytes
ONE_PER_MS_MBPS = PACKET_SIZE * 8 / 1000


def rows(link: str, deliveries: list[float | None]) -> list[dict[str, Any]]:
    """A trace of ``link``: one interval a second from t_s -2 (settling), None: a gap (nothing sent)."""
    out = []
    for i, d in enumerate(deliveries):
        out.append({"variant": "v", "repetition": 0, "link": link, "t_s": float(i - 2), "dt_s": 1.0,
                    "sent": 0 if d is None else 100, "heard": 0 if d is None else round(100 * d),
                    "delivery": math.nan if d is None else d, "etx": 1.0})
    return out


def test_export_writes_one_opportunity_per_1504_bytes_the_link_delivered(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """At the nominal rate 12.032 Mbit/s a fully delivering link gets one opportunity a millisecond; the
    recorded delivery scales that, a gap holds the last measured delivery, settling is not exported."""
    tr = tmp_path / "tr.csv"
    write(pd.DataFrame(rows("A>B", [0.0, 0.0, 1.0, 1.0, 0.5, None, 0.25]) + rows("B>A", [1.0] * 7), columns=COLUMNS), tr)
    out = tmp_path / "ab.mm"
    assert main(["trace", "export-mahimahi", str(tr), "--link", "A>B", "--rate-mbps", str(ONE_PER_MS_MBPS),
                 "-o", str(out)]) == 0
    assert "3250 delivery opportunities" in capsys.readouterr().out
    ms = tracefiles.read_mahimahi(out)
    per_s = [sum(1 for t in ms if s * 1000 <= t < (s + 1) * 1000) for s in range(5)]
    assert per_s == [1000, 1000, 500, 500, 250]
    assert ms == sorted(ms) and ms[0] == 0 and ms[-1] == 4999
    gaps = {b - a for a, b in zip(ms[1000:2000], ms[1001:2000])}
    assert gaps == {1}                                                   # spread evenly, not in bursts
    assert {b - a for a, b in zip(ms[2000:3000], ms[2001:3000])} == {2}
    # a link, run or source that is not there is named, exit 2
    assert main(["trace", "export-mahimahi", str(tr), "--link", "A>C", "-o", str(out)]) == 2
    assert "no link 'A>C'" in capsys.readouterr().err
    assert main(["trace", "export-mahimahi", str(tr), "--link", "A>B", "--run", "x/rep0", "-o", str(out)]) == 2
    assert main(["trace", "export-mahimahi", str(tmp_path / "none.csv"), "--link", "A>B", "-o", str(out)]) == 2


def test_parse_names_the_line_that_is_not_a_trace(tmp_path: Path) -> None:
    p = tmp_path / "bad.mm"
    for text, why in [("1\n2\nx\n", r"bad.mm:3: expected a whole number"), ("5\n3\n", r"bad.mm:2: 3 ms is before"),
                      ("", "at least one opportunity after 0 ms"), ("0\n0\n", "at least one opportunity after 0 ms")]:
        p.write_text(text)
        with pytest.raises(tracefiles.MahimahiError, match=why):
            tracefiles.read_mahimahi(p)


def test_an_opportunity_carries_1504_bytes_of_the_queue_and_an_idle_one_is_wasted() -> None:
    q = OpportunityQueue(Schedule([10, 20, 20, 30]), origin=100.0, delay_s=0.005, queue_packets=3)
    assert q.admit(100.0, 752) == pytest.approx(100.015)          # the first opportunity: 10 ms after the origin
    assert q.admit(100.001, 752) == pytest.approx(100.015)        # the rest of the same opportunity
    assert q.admit(100.002, 2000) == pytest.approx(100.025)       # 1504 at 20 ms, 496 in the second one at 20 ms
    assert q.admit(100.003, 100) is None and q.dropped == 1       # three queued: drop-tail
    assert q.admit(100.019, 1008) == pytest.approx(100.025)       # the rest of that second 20 ms opportunity
    assert q.admit(100.022, 100) == pytest.approx(100.035)        # 30 ms
    assert q.admit(100.031, 100) == pytest.approx(100.045)        # idle at 31 ms: the period is 30 ms, 40 ms is 10 ms
    assert q.admit(100.050, 100) == pytest.approx(100.055)        # idle: 40 ms's leftover is gone; 50 ms is 20 ms
    early = OpportunityQueue(Schedule([10, 20, 20, 30]), origin=100.0, delay_s=0.0, queue_packets=3)
    assert early.admit(99.975, 100) == pytest.approx(99.98)       # before the origin the trace loops too (-20 ms)


def test_a_saturated_queue_carries_the_traces_rate_second_by_second() -> None:
    """Virtual time: 1500-byte packets offered at 20 Mbit/s into a trace of 12 Mbit/s for a second, then
    3 Mbit/s: what leaves each second is the trace's opportunities x 1504 bytes, within one packet."""
    ms = list(range(1000)) + [1000 + 4 * i for i in range(250)]
    q = OpportunityQueue(Schedule(ms + [2000]), origin=0.0, delay_s=0.0, queue_packets=10_000)
    out = [q.admit(i * 0.0006, 1500) for i in range(int(2 / 0.0006))]
    done = [t for t in out if t is not None]
    for s, opp in ((0, 1000), (1, 251)):
        got = sum(1500 for t in done if s <= t < s + 1)
        assert abs(got - opp * PACKET_SIZE) <= 1500, (s, got, opp * PACKET_SIZE)


def test_the_shaper_holds_each_verdict_until_its_opportunity() -> None:
    from routing.drivers.link_shaper import LinkShaper
    t = [0.0]
    q = OpportunityQueue(Schedule([5, 10]), origin=0.0, delay_s=0.001, queue_packets=5)
    sh = LinkShaper.without_queue({3: ("A->B", q)}, lambda *a, **f: None, 100, lambda: t[0])
    pkts = [FakePacket(3, 1500), FakePacket(3, 1500)]
    for p in pkts:
        sh._on_packet(p)
    assert sh.next_due() == pytest.approx(0.006)
    sh.release(0.0065)
    assert [p.verdict for p in pkts] == ["accept", None]
    sh.release(0.0111)
    assert [p.verdict for p in pkts] == ["accept", "accept"] and sh.stats["released"] == 2


def exp_doc(backend: str, link: dict[str, Any], **over: Any) -> dict[str, Any]:
    d = {"name": "mm", "backend": backend, "seed": 1, "repetitions": 1,
         "topology": {"nodes": ["A", "B", "C", "D"], "links": [["A", "B"], ["A", "C"], ["B", "D"], ["C", "D"]]},
         "link": link, "etx": {"settle_s": 2.0}, "limits": {"max_duration_s": 120},
         "flows": [{"sender": "A", "receiver": "D", "segments": 3000, "segment_size": 1000}],
         "variants": [{"name": "v"}]}
    d.update(over)
    return d


def steady_trace(path: Path, mbps: float, seconds: int = 60) -> None:
    tracefiles.write_mahimahi(path, mahimahi.opportunities(lambda t: 1.0, seconds, mbps))


def test_the_schema_reads_the_trace_and_pi_refuses_it(tmp_path: Path) -> None:
    steady_trace(tmp_path / "l.mm", 2.0)
    exp = load_experiment(exp_doc("sim", {"mahimahi": "l.mm"}), str(tmp_path / "t.yaml"))
    assert exp.variants[0].config["link"]["mahimahi"] == str((tmp_path / "l.mm").resolve())
    check_backend_support(exp, "sim")
    check_backend_support(exp, "netns")
    check_backend_support(exp, "local")
    with pytest.raises(ExperimentError, match=r"link\.mahimahi: cannot run on backend pi"):
        check_backend_support(exp, "pi")
    (tmp_path / "bad.mm").write_text("1\nx\n")
    with pytest.raises(ExperimentError, match=r"link\.mahimahi: .*bad\.mm:2: expected a whole number"):
        load_experiment(exp_doc("sim", {"mahimahi": "bad.mm"}), str(tmp_path / "t.yaml"))
    with pytest.raises(ExperimentError, match=r"link\.rate_mbps: a Mahimahi trace is the link's rate"):
        load_experiment(exp_doc("sim", {"mahimahi": "l.mm", "rate_mbps": 5}), str(tmp_path / "t.yaml"))
    p = tmp_path / "t.yaml"
    p.write_text(yaml.safe_dump(exp_doc("local", {"mahimahi": "l.mm"})))
    assert main(["validate", str(p)]) == 0
    assert main(["validate", str(p), "--backend", "pi"]) == 2


def goodput(run_dir: Path) -> float:
    df = pd.read_csv(run_dir / "summary.csv")
    assert (df["status"] == "ok").all() and df["integrity_ok"].all(), df.to_string()
    return float(df["goodput_mbps"].iloc[0])


def test_on_the_sim_the_goodput_follows_the_traces_rate(tmp_path: Path) -> None:
    """The diamond's two-hop path over links of a 2 Mbit/s and a 4 Mbit/s trace: the goodput (1000-byte
    segments, 1040-byte packets and ACKs sharing the links' other directions) takes most of each and never
    more (no loss: the queue is the only bottleneck)."""
    rates = {}
    for mbps in (2.0, 4.0):
        steady_trace(tmp_path / f"l{mbps}.mm", mbps)
        exp = load_experiment(exp_doc("sim", {"mahimahi": f"l{mbps}.mm"}), str(tmp_path / "t.yaml"))
        rates[mbps] = goodput(run_experiment(exp, out=tmp_path / f"r{mbps}", plot=False, progress=lambda s: None))
    print(f"sim goodput over Mahimahi links: {rates}")
    for mbps, got in rates.items():
        assert 0.7 * mbps < got < mbps, rates


@pytest.mark.root
def test_on_netns_kernel_tcps_goodput_tracks_the_traces_rate(netns: Path) -> None:
    """Kernel TCP through held verdicts served by a 4 Mbit/s Mahimahi trace: the goodput between 50 % and
    100 % of the trace's rate (generous: the VM's late releases, docs/NETNS.md)."""
    steady_trace(netns / "l.mm", 4.0, seconds=120)
    exp = netns / "t.yaml"
    exp.write_text(yaml.safe_dump(exp_doc("netns", {"mahimahi": "l.mm"}, netns={"realtime": True})))
    p = start_run(exp, netns / "runs", "--no-plot")
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0, out
    [run_dir] = list((netns / "runs" / "mm").iterdir())
    got = goodput(run_dir)
    print(f"netns goodput over a 4 Mbit/s Mahimahi link: {got:.2f} Mbit/s")
    assert 2.0 < got < 4.0, got
