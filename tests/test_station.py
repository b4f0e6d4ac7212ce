"""The Pis' driver view of each neighbour (issue 25, item 1; routing/drivers/station.py): the ``iw station dump``
parser, the recorder thread, and the trace columns it fills (experiments/trace.py)."""
from __future__ import annotations

import json
import threading

import pytest

from experiments.runner import run_experiment
from experiments.schema import load_experiment
from experiments.trace import extract
from routing.drivers.station import MAX_STATIONS, StationRecorder, parse_station_dump

DUMP = """Station 02:aa:00:00:00:02 (on wlan0)
\tinactive time:\t120 ms
\trx bytes:\t123456
\trx packets:\t1234
\ttx bytes:\t654321
\ttx packets:\t4321
\ttx retries:\t56
\ttx failed:\t3
\tsignal:  \t-52 [-54, -55] dBm
\tsignal avg:\t-60 [-61, -62] dBm
\ttx bitrate:\t65.0 MBit/s MCS 7
\trx bitrate:\t54.0 MBit/s
\texpected throughput:\t38.085Mbps
\tauthorized:\tyes
Station 02:AA:00:00:00:03 (on wlan0)
\tsignal:  \t-71 dBm
\ttx bitrate:\tgarbage
"""


def test_the_dump_gives_each_station_its_numbers_and_skips_what_it_cannot_read():
    a, c = parse_station_dump(DUMP)
    assert a == {"mac": "02:aa:00:00:00:02", "rx_packets": 1234, "tx_packets": 4321, "tx_retries": 56,
                 "tx_failed": 3, "signal_dbm": -52, "tx_bitrate_mbps": 65.0, "rx_bitrate_mbps": 54.0,
                 "expected_mbps": 38.085}
    assert c == {"mac": "02:aa:00:00:00:03", "signal_dbm": -71}        # "signal avg" is not "signal"
    assert parse_station_dump("") == [] and parse_station_dump("junk\n\tsignal: -1 dBm\n") == []


def test_a_dump_of_forged_stations_is_bounded():
    many = "".join(f"Station 02:00:00:00:{i // 256:02x}:{i % 256:02x} (on wlan0)\n\tsignal: -80 dBm\n"
                   for i in range(MAX_STATIONS + 50))
    assert len(parse_station_dump(many)) == MAX_STATIONS


def test_the_recorder_logs_each_station_and_stops_after_a_failed_dump():
    events = []
    calls = []

    def dump(iface):
        calls.append(iface)
        if len(calls) == 3:
            raise OSError("iw dev wlan0 station dump exited 237: command failed: No such device (-19)")
        return DUMP

    rec = StationRecorder("wlan0", lambda t, ev, **f: events.append((ev, f)), interval_s=0.01, dump=dump)
    rec.start()
    rec._thread.join(timeout=10)
    assert not rec._thread.is_alive() and len(calls) == 3                  # no fourth dump after the failure
    assert [e for e, _ in events] == ["station", "station", "station", "station", "station_error"]
    assert events[-1][1]["error"].endswith("No such device (-19)")
    assert rec.stats == {"dumps": 2, "stations": 4, "errors": 1}
    rec.stop()


def test_the_trace_puts_the_drivers_view_beside_each_directed_link(tmp_path):
    """A sim run given station events as the Pis' nodes would log them (and meta.json's MAC addresses):
    link A>B gets the signal B heard A at, and A's bitrate, retries and failures toward B."""
    doc = {"name": "s", "backend": "sim", "repetitions": 1, "topology": {"chain": ["A", "B"]},
           "etx": {"settle_s": 1.0}, "flows": [{"sender": "A", "receiver": "B", "segments": 3000}],
           "variants": [{"name": "v"}]}
    run_dir = run_experiment(load_experiment(doc, "s.yaml"), out=tmp_path, plot=False, progress=lambda s: None)
    rep = run_dir / "v" / "rep0"
    meta = json.loads((rep / "meta.json").read_text())
    macs = {"A": "02:aa:00:00:00:01", "B": "02:aa:00:00:00:02"}
    meta["mac_filter"] = {"macs": macs}
    (rep / "meta.json").write_text(json.dumps(meta))
    start = next(json.loads(l)["t"] for l in (rep / "A.log").read_text().splitlines() if '"flow_start"' in l)
    with (rep / "A.log").open("a") as f:          # A about B: what A sends to B
        for k, retries in enumerate((10, 14, 20)):
            f.write(json.dumps({"t": start + k + 0.5, "node": "A", "ev": "station", "mac": macs["B"],
                                "tx_bitrate_mbps": 54.0, "tx_retries": retries, "tx_failed": k}) + "\n")
    with (rep / "B.log").open("a") as f:          # B about A: the signal B hears A at
        f.write(json.dumps({"t": start + 1.5, "node": "B", "ev": "station", "mac": macs["A"], "signal_dbm": -61}) + "\n")
    tr = extract(run_dir)
    ab = tr[(tr["link"] == "A>B") & (tr["t_s"] == 1.0)].iloc[0]
    assert ab["signal_dbm"] == -61 and ab["tx_bitrate_mbps"] == 54.0
    assert ab["tx_retries"] == 4 and ab["tx_failed"] == 1                  # during the interval, not since the start
    ba = tr[(tr["link"] == "B>A") & (tr["t_s"] == 1.0)].iloc[0]
    assert ba.isna()[["signal_dbm", "tx_bitrate_mbps"]].all()            # nothing logged for that direction
