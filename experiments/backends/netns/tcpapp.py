"""Kernel TCP endpoints of the netns backend: a bulk sender and receiver, or iperf3.

``python -m experiments.backends.netns.tcpapp --config FILE`` runs in the
endpoint's namespace.  The sender is real kernel TCP: ``TCP_CONGESTION`` (reno
or cubic), SACK from the namespace's ``net.ipv4.tcp_sack`` (set by the backend:
on for ``tcp.variant: sack``), the payload of tcp_user.bulk (same seed, same
bytes, same SHA-256 as the other backends).

What the sender logs, in the schema of docs/LOGS.md (derivation in docs/NETNS.md):

* ``cwnd``: ``TCP_INFO`` sampled every ``netns.cwnd_poll_ms`` (5 ms); an event
  whenever snd_cwnd, snd_ssthresh or the MSS changed; ``cwnd`` and ``ssthresh``
  in bytes (segments x snd_mss), ``mss`` so cwnd/mss = segments.  An unset
  ssthresh (TCP_INFINITE_SSTHRESH) is logged as 2^30, as tcp_user does.
* ``loss``: the kernel's own count of loss events in the sender's namespace,
  read at the same period from /proc/net/netstat: every new fast recovery
  (TcpExt TCPRenoRecovery + TCPSackRecovery, entered on three dupacks or SACK
  evidence) is a ``dupack`` loss, every retransmission timeout (TCPTimeouts) an
  ``rto`` loss.  Counters are exact, unlike ca_state sampling, which misses a
  recovery shorter than the sampling period.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from experiments.backends.kernel_counters import parse_tcpext
from routing.drivers.eventlog import EventLog
from tcp_user.bulk import DELIVER_LOG_BYTES

Emit = Callable[..., None]

TCP_INFO_LEN = 232
# the fixed head of struct tcp_info (linux/tcp.h): 8 u8, 24 u32 (rto ... total_retrans), then the u64 tcpi_pacing_rate
_TCP_INFO = struct.Struct("=8B24IQ")
#: tcpi_pacing_rate when the socket is not paced (sk_pacing_rate ~0U: no limit)
UNPACED = (1 << 64) - 1
INFINITE_SSTHRESH = 0x7FFFFFFF
SSTHRESH_CAP = 1 << 30
CA_STATES = ("open", "disorder", "cwr", "recovery", "loss")
RECOVERY_COUNTERS = ("TCPRenoRecovery", "TCPSackRecovery")
RTO_COUNTERS = ("TCPTimeouts",)
REPORT_COUNTERS = RECOVERY_COUNTERS + RTO_COUNTERS + ("TCPLossProbes", "TCPSpuriousRTOs", "TCPFastRetrans",
                                                      "TCPSlowStartRetrans", "TCPSynRetrans", "TCPDSACKRecv")
TIMESTAMP_OPTION_LEN = 12


def tcp_info(sock: socket.socket) -> dict[str, int]:
    """The fields of TCP_INFO the sender logs."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN)
    v = _TCP_INFO.unpack_from(raw)
    u32 = v[8:]
    return {"state": v[0], "ca_state": v[1], "retransmits": v[2], "backoff": v[4], "rto_us": u32[0], "snd_mss": u32[2],
            "unacked": u32[4], "lost": u32[6], "retrans": u32[7], "rtt_us": u32[15],
            "snd_ssthresh": u32[17], "snd_cwnd": u32[18], "total_retrans": u32[23], "pacing_rate": v[32]}


def pacing_bps(info: dict[str, int]) -> float | None:
    """The socket's pacing rate in bit/s (TCP_INFO's tcpi_pacing_rate is bytes/s); None when it is not paced.
    Linux (4.13 on) paces TCP itself, without the fq qdisc, when the congestion control asks for it (BBR);
    for Reno and CUBIC the rate is computed (2x cwnd/srtt in slow start, 1.2x after) but only fq applies it."""
    rate = info.get("pacing_rate")
    return None if rate is None or rate >= UNPACED else rate * 8.0


def read_tcpext(path: str = "/proc/net/netstat") -> dict[str, int]:
    """TcpExt counters of this network namespace."""
    with open(path) as f:
        return parse_tcpext(f.read())


class LossCounter:
    """New loss events since the last call, from the namespace's TcpExt counters."""

    def __init__(self, read: Callable[[], dict[str, int]] = read_tcpext) -> None:
        self._read = read
        self.first = read()
        self._last = self.first

    def new_events(self) -> tuple[int, int]:
        """(new fast recoveries, new retransmission timeouts)."""
        now = self._read()
        rec = sum(now.get(k, 0) - self._last.get(k, 0) for k in RECOVERY_COUNTERS)
        rto = sum(now.get(k, 0) - self._last.get(k, 0) for k in RTO_COUNTERS)
        self._last = now
        return max(rec, 0), max(rto, 0)

    def totals(self) -> dict[str, int]:
        return {k: self._last.get(k, 0) - self.first.get(k, 0) for k in REPORT_COUNTERS}


class Sampler(threading.Thread):
    """Samples TCP_INFO (cwnd, ssthresh) and the loss counters every ``period_s``."""

    def __init__(self, flow: str, emit: Emit, period_s: float, losses: LossCounter,
                 sock: socket.socket | None = None) -> None:
        super().__init__(name="tcp-info", daemon=True)
        self.flow = flow
        self._emit = emit
        self.period_s = period_s
        self.losses = losses
        self.sock = sock
        self.halt = threading.Event()
        self._last: tuple[int, int, int] | None = None
        self.samples = 0
        self.info: dict[str, int] = {}
        self.loss_events = {"dupack": 0, "rto": 0}

    def run(self) -> None:
        while not self.halt.wait(self.period_s):
            self.sample(time.time())

    def sample(self, now: float) -> None:
        if self.sock is not None:
            try:
                info = tcp_info(self.sock)
            except OSError:
                info = {}
            if info and info["snd_mss"]:
                self.info = info
                self.samples += 1
                key = (info["snd_cwnd"], info["snd_ssthresh"], info["snd_mss"])
                if key != self._last:
                    self._last = key
                    mss = info["snd_mss"]
                    ss = SSTHRESH_CAP if info["snd_ssthresh"] >= INFINITE_SSTHRESH else info["snd_ssthresh"] * mss
                    self._emit(now, "cwnd", flow=self.flow, cwnd=info["snd_cwnd"] * mss, ssthresh=ss, mss=mss,
                               ca_state=CA_STATES[info["ca_state"]] if info["ca_state"] < 5 else info["ca_state"],
                               pacing_bps=pacing_bps(info))
        rec, rto = self.losses.new_events()
        for kind, n in (("dupack", rec), ("rto", rto)):
            # a timeout's event carries the timer TCP_INFO showed at this sample (the backed-off RTO), as
            # tcp_user's does, when the socket gave one
            extra = {"rto": self.info["rto_us"] / 1e6} if kind == "rto" and self.info else {}
            for _ in range(n):
                self.loss_events[kind] += 1
                self._emit(now, "loss", flow=self.flow, kind=kind, seq=None, source="TcpExt", **extra)


# ---- the bulk transfer ---------------------------------------------------------------
CHUNK = 1 << 20


def payload_chunks(seed: int, size: int, chunk: int = CHUNK) -> Iterator[bytes]:
    """tcp_user.bulk.bulk_payload(seed, size) in pieces of ``chunk`` bytes (a multiple of 4).

    random.Random.randbytes draws 32-bit words in order, so pieces whose sizes are
    multiples of 4 concatenate to the same bytes: memory stays bounded for any size.
    """
    rng = random.Random(seed)
    left = size
    while left > 0:
        n = min(chunk, left)
        yield rng.randbytes(n)
        left -= n


def payload_sha256(seed: int, size: int) -> str:
    h = hashlib.sha256()
    for piece in payload_chunks(seed, size):
        h.update(piece)
    return h.hexdigest()


def _wait_until(t: float) -> None:
    while True:
        d = t - time.time()
        if d <= 0:
            return
        time.sleep(min(d, 0.5))


def _connect(sock: socket.socket, addr: tuple[str, int], until: float) -> None:
    while True:
        try:
            sock.connect(addr)
            return
        except ConnectionRefusedError:   # the receiver is not listening yet
            if time.time() > until:
                raise
            time.sleep(0.05)


def _ready_then_go(conf: dict[str, Any]) -> float:
    """Say this app is prepared, wait for the runner's go (t0 fixed), return the flow's start time."""
    ready = Path(conf["ready_file"])
    ready.with_suffix(".tmp").write_text(str(os.getpid()))
    ready.with_suffix(".tmp").replace(ready)
    go = Path(conf["go_file"])
    while not go.exists():
        time.sleep(0.01)
    return float(json.loads(go.read_text())["t_flows"]) + float(conf["flow"]["start_s"])


def _timestamps_on() -> bool:
    try:
        return Path("/proc/sys/net/ipv4/tcp_timestamps").read_text().strip() != "0"
    except OSError:
        return True


def run_sender(conf: dict[str, Any], log: EventLog) -> None:
    fl = conf["flow"]
    size = fl["segments"] * fl["segment_size"]
    first = next(payload_chunks(fl["data_seed"], size), b"")   # ready to send as soon as the flow starts
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Closed by a stop (SIGTERM) mid-transfer, the socket resets at once instead of lingering in
    # FIN_WAIT1 for minutes: on a Pi (no namespace that dies with the run) such an orphan would keep
    # the flow's address and port, and the next run with the same seed could not bind them.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, conf["congestion"].encode())
    # TCP_MAXSEG counts the timestamp option in: add it so each segment carries segment_size bytes.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG,
                    fl["segment_size"] + (TIMESTAMP_OPTION_LEN if _timestamps_on() else 0))
    sock.bind((fl["src"], fl["sport"]))
    sampler = Sampler(fl["name"], log.emit, conf["poll_ms"] / 1000.0, LossCounter(), sock)
    _wait_until(_ready_then_go(conf))
    log.emit(time.time(), "flow_start", flow=fl["name"], segments=fl["segments"], segment_size=fl["segment_size"],
             variant=conf["variant"], congestion=conf["congestion"], traffic="bulk")
    _connect(sock, (fl["dst"], fl["dport"]), time.time() + 10.0)
    sampler.sample(time.time())
    sampler.start()
    h = hashlib.sha256(first)
    sock.sendall(first)
    for i, piece in enumerate(payload_chunks(fl["data_seed"], size)):
        if i:
            h.update(piece)
            sock.sendall(piece)
    digest = h.hexdigest()
    sock.shutdown(socket.SHUT_WR)
    while sock.recv(4096):    # the receiver closes once it has read everything: all data acknowledged
        pass
    sampler.halt.set()
    sampler.join()
    sampler.sample(time.time())
    log.emit(time.time(), "flow_end", flow=fl["name"], bytes=size, sha256=digest,
             retransmits=sampler.info.get("total_retrans"), tcpext=sampler.losses.totals(),
             cwnd_samples=sampler.samples)
    sock.close()


def run_receiver(conf: dict[str, Any], log: EventLog) -> None:
    fl = conf["flow"]
    size = fl["segments"] * fl["segment_size"]
    expected = payload_sha256(fl["data_seed"], size)
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind((fl["dst"], fl["dport"]))
    lsock.listen(4)
    _ready_then_go(conf)
    while True:
        conn, peer = lsock.accept()
        if peer == (fl["src"], fl["sport"]):
            break
        log.emit(time.time(), "drop", reason="no_route", ptype="tcp", detail=f"unexpected connection from {peer}")
        conn.close()
    lsock.close()
    h = hashlib.sha256()
    buf = bytearray(1 << 18)
    view = memoryview(buf)
    received = logged = 0
    while True:
        n = conn.recv_into(buf)
        if n == 0:
            break
        h.update(view[:n])
        received += n
        if received - logged >= DELIVER_LOG_BYTES:
            logged = received
            log.emit(time.time(), "deliver", flow=fl["name"], bytes=received)
    now = time.time()
    if received != logged:
        log.emit(now, "deliver", flow=fl["name"], bytes=received)
    digest = h.hexdigest()
    log.emit(now, "flow_end", flow=fl["name"], bytes=received, sha256=digest,
             ok=digest == expected and received == size)
    conn.close()


# ---- iperf3 ----------------------------------------------------------------------------
#: How long the iperf3 client retries while the server does not listen yet.  Both start at the go signal;
#: a loaded machine or a slow Pi can take seconds to exec and bind the server (a count of 50 quick
#: retries ran out under a load average of 8 here).
IPERF3_SERVER_WAIT_S = 30.0


def run_iperf3_receiver(conf: dict[str, Any], log: EventLog) -> None:
    fl = conf["flow"]
    size = fl["segments"] * fl["segment_size"]
    _ready_then_go(conf)
    r = subprocess.run(["iperf3", "-s", "-1", "-J", "-B", fl["dst"], "-p", str(fl["dport"])],
                       capture_output=True, text=True)
    res = _iperf3_json(r, "server")
    if "sum_received" not in res.get("end", {}):
        raise RuntimeError("iperf3 server: no result (did the client connect?)")
    got = int(res["end"]["sum_received"]["bytes"])
    now = time.time()
    log.emit(now, "deliver", flow=fl["name"], bytes=got)
    # iperf3 checks no payload, and its server stops counting when the client reports the end of the
    # test (bytes still in flight are read but not counted): ``ok`` means both ends finished without error.
    log.emit(now, "flow_end", flow=fl["name"], bytes=got, sha256=None, ok=got > 0, requested=size,
             traffic="iperf3", integrity="not checked (iperf3)")


def run_iperf3_sender(conf: dict[str, Any], log: EventLog) -> None:
    fl = conf["flow"]
    size = fl["segments"] * fl["segment_size"]
    sampler = Sampler(fl["name"], log.emit, conf["poll_ms"] / 1000.0, LossCounter())
    _wait_until(_ready_then_go(conf))
    t_start = time.time()
    log.emit(t_start, "flow_start", flow=fl["name"], segments=fl["segments"], segment_size=fl["segment_size"],
             variant=conf["variant"], congestion=conf["congestion"], traffic="iperf3")
    sampler.start()
    cmd = ["iperf3", "-c", fl["dst"], "-p", str(fl["dport"]), "-B", fl["src"], "--cport", str(fl["sport"]),
           "-n", str(size), "-C", conf["congestion"], "-J", "-i", "0.1",
           "-M", str(fl["segment_size"] + (TIMESTAMP_OPTION_LEN if _timestamps_on() else 0))]
    r = run_iperf3_client(cmd)
    sampler.halt.set()
    sampler.join()
    sampler.sample(time.time())
    res = _iperf3_json(r, "client")
    t0 = float(res["start"]["timestamp"]["timesecs"])
    for iv in res.get("intervals", []):
        for st in iv.get("streams", [])[:1]:
            if "snd_cwnd" in st:
                # iperf3 reports cwnd in bytes per interval (-i 0.1): the sampling of this mode
                log.emit(t0 + float(st["end"]), "cwnd", flow=fl["name"], cwnd=int(st["snd_cwnd"]),
                         ssthresh=None, mss=fl["segment_size"], source="iperf3")
    sent = res["end"]["sum_sent"]
    log.emit(time.time(), "flow_end", flow=fl["name"], bytes=int(sent["bytes"]), sha256=None,
             retransmits=int(sent.get("retransmits", 0)), tcpext=sampler.losses.totals(), traffic="iperf3")


def run_iperf3_client(cmd: list[str], wait_s: float = IPERF3_SERVER_WAIT_S) -> subprocess.CompletedProcess[str]:
    """Run the iperf3 client ``cmd``, again every 0.1 s for up to ``wait_s`` while the server refuses
    the connection (it may not listen yet).  iperf3 3.12 with -J exits 0 when the connection is
    refused, with the error in its JSON, so the output is what tells."""
    deadline = time.monotonic() + wait_s
    while True:
        r = subprocess.run(cmd, capture_output=True, text=True)
        if "connection refused" not in (r.stdout + r.stderr).lower() or time.monotonic() >= deadline:
            return r
        time.sleep(0.1)


def _iperf3_json(r: subprocess.CompletedProcess[str] | None, side: str) -> dict[str, Any]:
    if r is None:
        raise RuntimeError(f"iperf3 {side} did not run")
    try:
        res = json.loads(r.stdout)
    except ValueError:
        raise RuntimeError(f"iperf3 {side} exited {r.returncode}: {r.stderr.strip() or r.stdout[-500:]}") from None
    if r.returncode != 0 or "error" in res:
        raise RuntimeError(f"iperf3 {side} exited {r.returncode}: {res.get('error', r.stderr.strip())}")
    return res


ROLES = {("sender", "bulk"): run_sender, ("receiver", "bulk"): run_receiver,
         ("sender", "iperf3"): run_iperf3_sender, ("receiver", "iperf3"): run_iperf3_receiver}


def _watch_parent(parent: int) -> None:
    """Exit if the runner that started this app disappears (no orphans)."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(3)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.backends.netns.tcpapp")
    ap.add_argument("--config", required=True)
    args = ap.parse_args(argv)
    conf = json.loads(Path(args.config).read_text())
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    log = EventLog(Path(conf["log"]), conf["node"])
    try:
        ROLES[(conf["role"], conf["traffic"])](conf, log)
    except Exception as e:
        log.emit(time.time(), "app_error", role=conf["role"], error=f"{type(e).__name__}: {e}")
        print(f"{conf['role']} {conf['node']}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    finally:
        log.close()
    done = Path(conf["done_file"])
    done.with_suffix(".tmp").write_text(json.dumps({"node": conf["node"], "role": conf["role"], "t": time.time()}))
    done.with_suffix(".tmp").replace(done)
    return 0


if __name__ == "__main__":
    sys.exit(main())
