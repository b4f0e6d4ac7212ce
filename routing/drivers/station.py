"""What the Pi's driver says of each neighbour, once a second (issue 25, item 1): ``iw dev IFACE station dump``.

On the pi backend every node (the overlay's ``aspan node`` and the kernel plane's node daemon) runs a
:class:`StationRecorder`: every ``interval_s`` it runs ``iw dev IFACE station dump`` and logs a
``station`` event per station (neighbour) the driver knows: its MAC address, the signal of what this
node hears from it (dBm), the bitrate this node sends to it at (Mb/s), the retries and failures of what
this node sent it so far, and the driver's expected throughput (Mb/s) where it gives one.  The link trace
(experiments/trace.py) puts them beside the probes' delivery, per directed link and interval.

A dump that cannot be had (no ``iw``, not a wireless interface) is logged once as ``station_error`` and
recording stops: the run goes on without it.  Parsing never raises: fields that are missing or malformed
are left out of the event.
"""
from __future__ import annotations

import re
import subprocess
import threading
import time
from typing import Any, Callable

STATION_DUMP_S = 1.0        # how often the pi backend's nodes read the dump (the issue: once a second)
MAX_STATIONS = 256          # a dump listing more (forged beacons in an open cell) is cut here, and says so

_FIELDS: dict[str, tuple[str, str]] = {   # iw's label -> (event field, number pattern)
    "signal": ("signal_dbm", r"(-?\d+)"),
    "tx bitrate": ("tx_bitrate_mbps", r"([\d.]+) MBit/s"),
    "rx bitrate": ("rx_bitrate_mbps", r"([\d.]+) MBit/s"),
    "tx retries": ("tx_retries", r"(\d+)"),
    "tx failed": ("tx_failed", r"(\d+)"),
    "tx packets": ("tx_packets", r"(\d+)"),
    "rx packets": ("rx_packets", r"(\d+)"),
    "expected throughput": ("expected_mbps", r"([\d.]+)Mbps"),
}


def parse_station_dump(text: str) -> list[dict[str, Any]]:
    """The stations of an ``iw dev ... station dump`` listing, in its order (at most MAX_STATIONS)."""
    out: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for line in text.splitlines():
        m = re.match(r"Station ([0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}) ", line)
        if m:
            if len(out) >= MAX_STATIONS:
                break
            cur = {"mac": m.group(1).lower()}
            out.append(cur)
            continue
        if cur is None or ":" not in line:
            continue
        label, _, value = line.strip().partition(":")
        spec = _FIELDS.get(label.strip())
        if spec is None:
            continue
        v = re.match(r"\s*" + spec[1], value)
        if v:
            num = float(v.group(1))
            cur[spec[0]] = int(num) if spec[0] in ("tx_retries", "tx_failed", "tx_packets", "rx_packets",
                                                   "signal_dbm") else num
    return out


def dump_command(iface: str) -> list[str]:
    return ["iw", "dev", iface, "station", "dump"]


def _run_dump(iface: str) -> str:
    r = subprocess.run(dump_command(iface), capture_output=True, text=True, timeout=5)
    if r.returncode != 0:
        raise OSError(f"iw dev {iface} station dump exited {r.returncode}: {r.stderr.strip()[:200]}")
    return r.stdout


class StationRecorder:
    """A thread logging a ``station`` event per station every ``interval_s`` (module docstring)."""

    def __init__(self, iface: str, emit: Callable[..., None], interval_s: float = 1.0,
                 dump: Callable[[str], str] = _run_dump) -> None:
        self.iface = iface
        self.emit = emit
        self.interval_s = interval_s
        self.dump = dump
        self.stats = {"dumps": 0, "stations": 0, "errors": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="station-dump", daemon=True)

    def record(self, now: float) -> bool:
        """One dump; False once it failed (logged as ``station_error``; recording then stops)."""
        try:
            text = self.dump(self.iface)
        except (OSError, subprocess.SubprocessError) as e:
            self.stats["errors"] += 1
            self.emit(now, "station_error", iface=self.iface, error=str(e)[:300])
            return False
        self.stats["dumps"] += 1
        for st in parse_station_dump(text):
            self.stats["stations"] += 1
            self.emit(now, "station", **st)
        return True

    def _loop(self) -> None:
        while not self._stop.is_set():
            if not self.record(time.time()):
                return
            self._stop.wait(self.interval_s)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=6.0)


def recorder_from_config(sd: dict[str, Any] | None, emit: Callable[..., None]) -> StationRecorder | None:
    """A node's recorder, started, from its config's ``station_dump`` (``iface``, ``interval_s``: the pi
    backend writes it); None without one (every other backend)."""
    if not sd:
        return None
    rec = StationRecorder(str(sd["iface"]), emit, float(sd.get("interval_s", STATION_DUMP_S)))
    rec.start()
    return rec
