"""Captures (routing/drivers/capture.py, routing/drivers/pcapng.py) and the Wireshark dissector (routing/wireshark/aspan.lua).

The tshark tests skip where tshark is not installed, and fail there under
ASPAN_REQUIRE_ROOT_TESTS=1 (CI installs tshark: .ci/run).
"""
from __future__ import annotations

from tests import ROOT
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
import pytest
from scapy.all import IP, UDP, rdpcap
from aspan.fields import FIXED_ONE
from routing.kernel.ip_option import decode_option
from routing.kernel.ipv4 import find_option
from routing.kernel.forwarder import HOOK_FWD, HOOK_OUT
from routing.drivers.pcapng import PcapngWriter




LUA = ROOT / "routing" / "wireshark" / "aspan.lua"


REQUIRED = os.environ.get("ASPAN_REQUIRE_ROOT_TESTS") == "1"


ADDR = {"A": "10.2.1.1", "B": "10.2.1.2", "C": "10.2.1.3", "D": "10.2.1.4"}


CAPTURE_EXP = """
name: cap
backend: sim
repetitions: 1
etx: {settle_s: 2}
capture: {enabled: true, max_mb: %s}
loss: {default: {model: bernoulli, rate: 0.01}}
flows: [{sender: A, receiver: D, segments: 300}]
variants:
  - {name: aspan, tcp: {variant: sack}, snoop: {policy: adaptive, pkt_qos: 1.0}}
"""


def tshark_or_skip() -> str:
    path = shutil.which("tshark")
    if path is None:
        msg = "tshark is not installed (apt-get install tshark)"
        if REQUIRED:
            pytest.fail(msg + " (ASPAN_REQUIRE_ROOT_TESTS=1: this test must run here)")
        pytest.skip(msg)
    return path


def tshark_fields(pcap: Path, fields: list[str], display_filter: str = "") -> list[list[str]]:
    cmd = [tshark_or_skip(), "-X", f"lua_script:{LUA}", "-r", str(pcap), "-T", "fields", "-E", "separator=|"]
    if display_filter:
        cmd += ["-Y", display_filter]
    for fld in fields:
        cmd += ["-e", fld]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return [line.split("|") for line in r.stdout.splitlines()]


def sim_capture(tmp_path: Path, max_mb: float = 5) -> Path:
    exp = tmp_path / "cap.yaml"
    exp.write_text(CAPTURE_EXP % max_mb)
    r = subprocess.run([sys.executable, "-m", "experiments", "run", str(exp), "--out", str(tmp_path / "runs"),
                        "--no-plot"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    [rep] = list((tmp_path / "runs").glob("cap/*/aspan/rep0"))
    return rep


def log_events(path: Path, ev: str) -> list[dict]:
    return [e for e in map(json.loads, path.read_text().splitlines()) if e["ev"] == ev]


# ---- the writer --------------------------------------------------------------------------------------
def test_the_writer_keeps_its_bound_and_says_it_cut(tmp_path):
    w = PcapngWriter(tmp_path / "x.pcapng", max_bytes=1000)
    frame = bytes(IP(src="10.2.1.1", dst="10.2.1.2") / UDP(sport=1, dport=2) / (b"x" * 100))
    written = [w.write(0.001 * i, frame, f"packet {i}") for i in range(20)]
    w.close()
    assert (tmp_path / "x.pcapng").stat().st_size <= 1000
    assert w.cut and w.dropped == written.count(False) > 0 and w.packets == written.count(True) > 0
    pkts = rdpcap(str(tmp_path / "x.pcapng"))
    assert len(pkts) == w.packets
    assert pkts[1][IP].src == "10.2.1.1" and abs(float(pkts[1].time) - 0.001) < 1e-9
    assert [c.decode() for c in pkts[2].comments] == ["packet 2"]


# ---- a sim run with captures, decoded by tshark with the dissector -----------------------------------
def test_a_capture_decoded_by_the_dissector_matches_the_nodes_log(tmp_path):
    tshark_or_skip()
    rep = sim_capture(tmp_path)
    c = ADDR["C"]
    sent = tshark_fields(rep / "C.pcapng", ["aspan.seq", "aspan.hop", "aspan.pkt_effort_word", "aspan.crc_ok",
                                            "frame.comment", "aspan.hops"], f"ip.src == {c} && aspan.type == 1 && aspan.len > 0")
    tx = log_events(rep / "C.log", "tx")
    # every data transmission the node logged, in order, is one captured packet it sent, with the
    # dissector's hop equal to the log's (the header's hops byte is one more: this one included)
    assert [(int(s[0]), int(s[1])) for s in sent] == [(e["seq"], e["hop"]) for e in tx]
    assert all(int(s[5]) == int(s[1]) + 1 for s in sent)
    assert all(s[3] in ("1", "True") for s in sent)                      # CRC checked, correct
    assert all(0 <= int(s[2]) <= FIXED_ONE for s in sent)
    notes = [s[4] for s in sent]
    assert sum(n.startswith("local retransmission") for n in notes) == sum(e["kind"] == "local" for e in tx) > 0
    cached = [n for n in notes if n.startswith("cached here (A-SPAN)")]
    assert cached and all("< pkt_qos 1.000000" in n for n in cached)
    # the suppressed dupacks are the received ACKs the node noted so, as many as it counted
    stop = log_events(rep / "C.log", "node_stop")[0]
    held = tshark_fields(rep / "C.pcapng", ["aspan.ack"], f'ip.dst == {c} && frame.comment contains "answered from the cache"')
    assert len(held) == stop["drops"]["suppressed"] > 0
    assert stop["capture"]["cut"] is False and stop["capture"]["packets"] > len(sent)


def test_the_dissectors_hop_is_the_logs_hop_from_the_senders_first_send(tmp_path):
    """Issue 28, item 6: A's first send is hop 0 in the log and in the dissector (the hops byte: 1)."""
    tshark_or_skip()
    rep = sim_capture(tmp_path)
    a = ADDR["A"]
    sent = tshark_fields(rep / "A.pcapng", ["aspan.seq", "aspan.hop", "aspan.hops", "_ws.col.Info"],
                         f"ip.src == {a} && aspan.type == 1 && aspan.len > 0")
    tx = log_events(rep / "A.log", "tx")
    assert sent and [(int(s[0]), int(s[1])) for s in sent] == [(e["seq"], e["hop"]) for e in tx]
    assert {int(s[1]) for s in sent} == {0} and {int(s[2]) for s in sent} == {1}
    assert all(" hop=0 " in s[3] for s in sent)


def test_a_capture_cut_at_its_bound_says_so(tmp_path):
    rep = sim_capture(tmp_path, max_mb=0.05)
    stop = log_events(rep / "C.log", "node_stop")[0]
    assert stop["capture"]["cut"] is True and stop["capture"]["dropped"] > 0
    assert (rep / "C.pcapng").stat().st_size <= 50_000


def test_the_dissector_decodes_the_ipv4_option_as_the_forwarder_wrote_it(tmp_path):
    tshark_or_skip()
    from tests.routing.kernel.test_forwarder import data, node
    fw = {n: node(n)[0] for n in "ABC"}
    w = PcapngWriter(tmp_path / "k.pcapng", 10**7)
    expected = []
    for i in range(6):
        pkt = data(1000 + 1000 * i)
        for n, hook in (("A", HOOK_OUT), ("B", HOOK_FWD), ("C", HOOK_FWD)):
            v = fw[n].on_packet(hook, pkt, 1.0 + i)
            pkt = v.payload if v.payload is not None else pkt
            f, hops = decode_option(pkt, find_option(pkt, (pkt[0] & 15) * 4, 94))
            expected.append([f"{f.pkt_effort:.6f}", f"{f.pkt_qos:.6f}", str(hops), str(f.snoop_count)])
            w.write(1.0 + i, pkt, f"left {n}")
    w.close()
    got = tshark_fields(tmp_path / "k.pcapng", ["aspan_opt.pkt_effort", "aspan_opt.pkt_qos", "aspan_opt.hops",
                                                "aspan_opt.snoop_count"])
    assert [[f"{float(r[0]):.6f}", f"{float(r[1]):.6f}", r[2], r[3]] for r in got] == expected
    assert {r[3] for r in got} == {"0", "1"}           # C cached (pkt_qos 0.99): snoop_count went to 1


def test_the_kernel_data_plane_writes_what_leaves_the_handler_with_notes(tmp_path):
    from routing.drivers.capture import KernelTap
    from tests.routing.kernel.test_forwarder import ack, data, node
    fw, _ = node("C")                       # pkt_qos 0.99, p 0.995: C caches (0.995^3 < 0.99)
    tap = KernelTap(tmp_path / "C.pcapng", 10**7)
    fw.capture(tap)
    a, _ = node("A")
    b, _ = node("B")
    seg = b.on_packet(HOOK_FWD, a.on_packet(HOOK_OUT, data(1000), 1.0).payload, 1.0).payload
    out = fw.on_packet(HOOK_FWD, seg, 1.0)
    fw.on_packet(HOOK_FWD, ack(1000), 1.1)     # D still waits for 1000: the first ACK of it passes
    fw.on_packet(HOOK_FWD, ack(1000), 1.2)     # the dupack for the cached segment: answered locally
    tap.close()
    pkts = rdpcap(str(tmp_path / "C.pcapng"))
    assert bytes(pkts[0]) == out.payload                      # the option as C rewrote it
    assert pkts[0].comments[0].decode().startswith("cached here (A-SPAN)")
    assert not pkts[1].comments
    assert pkts[2].comments[0].decode().startswith("duplicate ACK for a segment cached here")
    assert pkts[3].comments[0].decode().startswith("local retransmission") and pkts[3][IP].src == ADDR["A"]
    assert len(pkts) == 4
