"""routing/drivers/station.py's rules at their edges (issue 30, mutation run; issue 25 item 1 for the rules).

The module's docstring: one ``station`` event per station of ``iw dev IFACE station dump`` every
``interval_s`` (1 s on the pi backend), counters as integers and rates as Mb/s, at most MAX_STATIONS
stations a dump, fields that cannot be read left out, a dump that cannot be had logged once as
``station_error`` (its text cut) and recording stopped, and no recorder on a backend without
``station_dump``.
"""
from __future__ import annotations

import subprocess
import threading
import pytest
import routing.drivers.station as station
from routing.drivers.station import (MAX_STATIONS, STATION_DUMP_S, StationRecorder, dump_command,
                                     parse_station_dump, recorder_from_config)
import json
from experiments.runner import run_experiment
from experiments.schema import load_experiment
from experiments.trace import extract


def test_counters_are_ints_and_rates_floats_whatever_the_text():
    (st,) = parse_station_dump("Station 02:00:00:00:00:01 (on wlan0)\n"
                               "\ttx bitrate:\t65 MBit/s\n\trx bitrate:\t1.5 MBit/s\n\tsignal:\t-7 dBm\n"
                               "\ttx retries:\t0\n\texpected throughput:\t2Mbps\n")
    assert st == {"mac": "02:00:00:00:00:01", "tx_bitrate_mbps": 65.0, "rx_bitrate_mbps": 1.5, "signal_dbm": -7,
                  "tx_retries": 0, "expected_mbps": 2.0}
    assert [type(st[k]) for k in ("tx_bitrate_mbps", "signal_dbm", "tx_retries", "expected_mbps")] == \
        [float, int, int, float]


def test_only_a_station_line_with_a_mac_opens_a_station_and_lines_before_it_are_ignored():
    text = ("\tsignal:\t-1 dBm\n"                                   # before any station
            "Station 02:00:00:00:00 (on wlan0)\n\tsignal:\t-2 dBm\n"  # five octets: no station
            "Station 02:00:00:00:00:0g (on wlan0)\n"                  # not hex
            "Station 02:00:00:00:00:0a(on wlan0)\n"                   # no space after the address
            "Station 02:00:00:00:00:0B (on wlan0)\n"
            "\tno colon here -3\n\tsignal -4 dBm\n\ttx failed:\t9\n")
    assert parse_station_dump(text) == [{"mac": "02:00:00:00:00:0b", "tx_failed": 9}]


def test_labels_are_read_whole_and_values_from_their_start():
    (st,) = parse_station_dump("Station 02:00:00:00:00:01 (on wlan0)\n"
                               "\tsignal avg:\t-60 dBm\n\t  signal  :  -61 dBm\n"
                               "\ttx packets:\tmany 5\n\trx packets:\t12\n")
    assert st == {"mac": "02:00:00:00:00:01", "signal_dbm": -61, "rx_packets": 12}


def test_the_bound_is_exactly_max_stations_and_nothing_after_it_is_read():
    lines = "".join(f"Station 02:00:00:00:{i // 256:02x}:{i % 256:02x} (on wlan0)\n\ttx failed:\t{i}\n"
                    for i in range(MAX_STATIONS + 1))
    out = parse_station_dump(lines)
    assert MAX_STATIONS == 256 and len(out) == MAX_STATIONS
    assert out[-1]["tx_failed"] == MAX_STATIONS - 1          # the 257th's fields do not land on the 256th
    exact = "".join(f"Station 02:00:00:00:00:{i:02x} (on wlan0)\n" for i in range(3))
    assert len(parse_station_dump(exact)) == 3


def test_the_command_and_the_pi_backend_s_period():
    assert dump_command("wlan1") == ["iw", "dev", "wlan1", "station", "dump"]
    assert STATION_DUMP_S == 1.0


class FakeRun:
    def __init__(self, returncode: int, stdout: str = "", stderr: str = "") -> None:
        self.result = subprocess.CompletedProcess([], returncode, stdout, stderr)
        self.calls: list[tuple[list[str], dict]] = []

    def __call__(self, cmd, **kw):
        self.calls.append((cmd, kw))
        return self.result


def test_a_failed_iw_is_an_os_error_naming_its_status_and_a_cut_stderr(monkeypatch):
    fake = FakeRun(237, stderr="  " + "x" * 500 + "  ")
    monkeypatch.setattr(station.subprocess, "run", fake)
    with pytest.raises(OSError, match=r"^iw dev wlan0 station dump exited 237: x{200}$"):
        station._run_dump("wlan0")
    assert fake.calls == [(["iw", "dev", "wlan0", "station", "dump"],
                           {"capture_output": True, "text": True, "timeout": 5})]
    monkeypatch.setattr(station.subprocess, "run", FakeRun(0, stdout="Station ..."))
    assert station._run_dump("wlan0") == "Station ..."


def test_record_emits_each_station_at_its_time_and_counts():
    events = []
    rec = StationRecorder("wlan0", lambda t, ev, **f: events.append((t, ev, f)),
                          dump=lambda iface: "Station 02:00:00:00:00:01 (on x)\n\tsignal:\t-5 dBm\n"
                                             "Station 02:00:00:00:00:02 (on x)\n")
    assert rec.interval_s == 1.0 and rec.stats == {"dumps": 0, "stations": 0, "errors": 0}
    assert rec.record(7.5) is True
    assert events == [(7.5, "station", {"mac": "02:00:00:00:00:01", "signal_dbm": -5}),
                      (7.5, "station", {"mac": "02:00:00:00:00:02"})]
    assert rec.stats == {"dumps": 1, "stations": 2, "errors": 0}


@pytest.mark.parametrize("exc", [OSError("e" * 400), subprocess.TimeoutExpired(["iw"], 5)])
def test_a_dump_that_cannot_be_had_is_one_station_error_with_its_text_cut(exc):
    events = []

    def dump(iface):
        raise exc

    rec = StationRecorder("wlan3", lambda t, ev, **f: events.append((t, ev, f)), dump=dump)
    assert rec.record(2.0) is False
    assert events == [(2.0, "station_error", {"iface": "wlan3", "error": str(exc)[:300]})]
    assert rec.stats == {"dumps": 0, "stations": 0, "errors": 1}


def test_the_loop_waits_the_interval_between_dumps_and_stop_ends_it():
    calls = threading.Semaphore(0)
    n = []

    def dump(iface):
        n.append(1)
        calls.release()
        return ""

    rec = StationRecorder("wlan0", lambda *a, **k: None, interval_s=30.0, dump=dump)
    rec.start()
    assert calls.acquire(timeout=10)
    assert not calls.acquire(timeout=0.3)            # the next dump is 30 s away
    rec.stop()
    assert not rec._thread.is_alive() and len(n) == 1
    assert rec._thread.daemon and rec._thread.name == "station-dump"
    StationRecorder("wlan0", lambda *a, **k: None).stop()    # never started: stop does not wait


def test_a_recorder_only_where_the_config_asks_for_one(monkeypatch):
    assert recorder_from_config(None, lambda *a, **k: None) is None
    assert recorder_from_config({}, lambda *a, **k: None) is None
    fake = FakeRun(0, stdout="")
    monkeypatch.setattr(station.subprocess, "run", fake)
    rec = recorder_from_config({"iface": "wlan7", "interval_s": "60"}, lambda *a, **k: None)
    try:
        assert rec is not None and rec._thread.is_alive() and (rec.iface, rec.interval_s) == ("wlan7", 60.0)
    finally:
        rec.stop()
    assert fake.calls and fake.calls[0][0] == ["iw", "dev", "wlan7", "station", "dump"]
    rec2 = recorder_from_config({"iface": "wlan8"}, lambda *a, **k: None)
    try:
        assert rec2.interval_s == STATION_DUMP_S
    finally:
        rec2.stop()


def test_every_counter_is_an_int():
    (st,) = parse_station_dump("Station 02:00:00:00:00:01 (on wlan0)\n\ttx retries:\t3\n\ttx failed:\t4\n"
                               "\ttx packets:\t5\n\trx packets:\t6\n\tsignal:\t-70 dBm\n")
    assert st == {"mac": "02:00:00:00:00:01", "tx_retries": 3, "tx_failed": 4, "tx_packets": 5, "rx_packets": 6,
                  "signal_dbm": -70}
    assert all(type(v) is int for k, v in st.items() if k != "mac")


def test_the_label_ends_at_the_first_colon():
    (st,) = parse_station_dump("Station 02:00:00:00:00:01 (on wlan0)\n\tsignal:\t-52 dBm (chains: -54 -55)\n")
    assert st == {"mac": "02:00:00:00:00:01", "signal_dbm": -52}


def test_each_failed_dump_is_counted():
    def dump(iface):
        raise OSError("no")

    rec = StationRecorder("wlan0", lambda *a, **k: None, dump=dump)
    assert rec.record(1.0) is False and rec.record(2.0) is False
    assert rec.stats["errors"] == 2


def test_the_loop_stamps_each_event_with_the_wall_clock():
    import time as _time
    got = []
    done = threading.Event()

    def emit(t, ev, **f):
        got.append((t, ev))
        done.set()

    rec = StationRecorder("wlan0", emit, interval_s=30.0, dump=lambda iface: "Station 02:00:00:00:00:01 (on x)\n")
    before = _time.time()
    rec.start()
    try:
        assert done.wait(10)
    finally:
        rec.stop()
    assert got[0][1] == "station" and before <= got[0][0] <= _time.time()


def test_the_recorder_from_the_config_logs_through_the_emit_it_is_given(monkeypatch):
    monkeypatch.setattr(station.subprocess, "run", FakeRun(0, stdout="Station 02:00:00:00:00:09 (on wlan0)\n"))
    got = []
    done = threading.Event()

    def emit(t, ev, **f):
        got.append((ev, f))
        done.set()

    rec = recorder_from_config({"iface": "wlan0", "interval_s": 30}, emit)
    try:
        assert done.wait(10)
    finally:
        rec.stop()
    assert got[0] == ("station", {"mac": "02:00:00:00:00:09"})


# ====================================================================================================
# The Pis' driver view of each neighbour (issue 25, item 1; routing/drivers/station.py): the ``iw station dump``
# parser, the recorder thread, and the trace columns it fills (experiments/trace.py).


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
