"""The local backend: node processes on loopback UDP, started and always stopped by the runner."""
import json
import os
import random
import signal
import socket
from pathlib import Path
import pandas as pd
from aspan.fields import AspanFields
from tests.runs import alive, kill_group, node_pids, start_run, wait_for
from routing.overlay.wire import DATA, Packet, encode
from tcp_user.segment import ACK, Segment


CONTRACT = ["variant", "flow", "repetition", "seed", "segments", "duration_s", "goodput_mbps", "losses_dupack",
            "losses_rto", "cwnd_median", "tx_per_pkt_p50", "tx_per_pkt_p99", "tx_per_pkt_max",
            "cache_max_segments", "snoop_hits", "local_retransmissions"]


def write_exp(tmp: Path, segments: int = 400, loss: float = 0.005, variants=None, max_s: float = 90) -> Path:
    variants = variants or [{"name": "sack", "tcp": {"variant": "sack"}},
                            {"name": "aspan", "tcp": {"variant": "sack"},
                             "snoop": {"policy": "adaptive", "pkt_qos": 1.0}}]
    doc = {"name": "t", "backend": "local", "repetitions": 1,
           "loss": {"default": {"model": "bernoulli", "rate": loss} if loss else {"model": "none"}},
           "etx": {"settle_s": 1.0}, "limits": {"max_duration_s": max_s},
           "flows": [{"sender": "A", "receiver": "D", "segments": segments}], "variants": variants}
    p = tmp / "t.yaml"
    import yaml
    p.write_text(yaml.safe_dump(doc))
    return p


def only_run_dir(out: Path) -> Path:
    [d] = list((out / "t").iterdir())
    return d


def test_local_run_carries_every_segment_and_cleans_up(tmp_path, no_leftover_nodes):
    exp = write_exp(tmp_path)
    p = start_run(exp, tmp_path / "runs", "--no-plot")
    out, _ = p.communicate(timeout=240)
    assert p.returncode == 0, out
    run = only_run_dir(tmp_path / "runs")
    df = pd.read_csv(run / "summary.csv")
    assert list(df.columns[: len(CONTRACT)]) == CONTRACT
    assert list(df["variant"]) == ["sack", "aspan"]
    assert df["integrity_ok"].all() and (df["status"] == "ok").all()
    assert (df["segments"] == 400).all()
    assert (df["tx_per_pkt_p50"] >= 3).all()  # three hops at least
    for rep in run.glob("*/rep0"):
        meta = json.loads((rep / "meta.json").read_text())
        assert meta["status"] == "ok" and set(meta["exit_codes"].values()) == {0}
        for pid in node_pids(rep).values():
            assert not alive(pid)
        # a relay's cost once data flows (bench/local_goodput.py): CPU, datagrams, wake-ups of its loop
        [stop] = [json.loads(l) for l in (rep / "B.log").read_text().splitlines() if '"node_stop"' in l]
        assert stop["rx_flow_datagrams"] >= 400 and stop["cpu_flow_s"] > 0
        assert type(stop["sleeps_flow"]) is int and 1 <= stop["sleeps_flow"] <= stop["rx_flow_datagrams"] + 1000


def start_long_run(tmp_path: Path):
    """Start a run too long to finish during the test; return it once data reaches D."""
    exp = write_exp(tmp_path, segments=200000, loss=0.0, variants=[{"name": "reno"}])
    p = start_run(exp, tmp_path / "runs", "--no-plot")
    try:
        run = wait_for(lambda: next((tmp_path / "runs" / "t").glob("*"), None), 30, "run dir")
        rep = run / "reno" / "rep0"
        wait_for(lambda: len(node_pids(rep)) == 4 and '"deliver"' in (rep / "D.log").read_text(),
                 120, "data flowing")
    except BaseException:
        kill_group(p)
        raise
    return p, rep


def _stop_run_with(tmp_path: Path, sig: int, group: bool) -> Path:
    """Stop a running local run with ``sig`` (to its process group, as a terminal's Ctrl-C, or to
    the runner alone, as ``kill``); check every node stopped; return the rep dir."""
    p, rep = start_long_run(tmp_path)
    try:
        pids = node_pids(rep)
        if group:
            os.killpg(p.pid, sig)
        else:
            os.kill(p.pid, sig)
        out, _ = p.communicate(timeout=60)
    finally:
        kill_group(p)
    assert p.returncode == 130, out    # issue 13: interrupted (SIGINT or SIGTERM)
    for pid in pids.values():
        wait_for(lambda: not alive(pid), 15, f"node {pid} to stop")
    return rep


def _interrupted_records(rep: Path, error: str) -> None:
    meta = json.loads((rep / "meta.json").read_text())
    assert meta["status"] == "interrupted" and meta["error"] == error
    for n in "ABCD":
        lines = (rep / f"{n}.log").read_text().splitlines()
        assert json.loads(lines[-1])["ev"] == "node_stop"  # logged to the end, flushed
    df = pd.read_csv(rep.parent.parent / "summary.csv")     # the rows it has (issue 13, item 1)
    assert list(df["status"]) == ["interrupted"] and list(df["variant"]) == ["reno"]


def test_ctrl_c_stops_every_node_and_keeps_logs(tmp_path, no_leftover_nodes):
    _interrupted_records(_stop_run_with(tmp_path, signal.SIGINT, group=True), "stopped by Ctrl-C")


def test_sigterm_to_the_runner_is_handled_like_ctrl_c(tmp_path, no_leftover_nodes):
    rep = _stop_run_with(tmp_path, signal.SIGTERM, group=False)
    _interrupted_records(rep, "stopped by SIGTERM")
    from experiments.cli import main
    assert main(["plot", str(rep.parent.parent), "--resummarize"]) == 0   # any run directory plots


def test_a_second_sigterm_cannot_leave_the_record_at_running(tmp_path, no_leftover_nodes):
    """``kill`` twice, 0.1 s apart, 20 times, at moments spread over the run's start and its transfer: every
    time the runner exits 130 with meta.json ``interrupted`` and the summary's row so (issue 40, item 6: the
    second signal used to cut the stop short and leave ``running`` in 7 of 8 tries), and no node is left."""
    import time
    exp = write_exp(tmp_path, segments=200000, loss=0.0, variants=[{"name": "reno"}])
    for i in range(20):
        out = tmp_path / f"runs{i}"
        p = start_run(exp, out, "--no-plot")
        try:
            rep = wait_for(lambda: next(out.glob("t/*/reno/rep0"), None), 30, "rep dir")
            wait_for(lambda: len(node_pids(rep)) == 4, 60, "the nodes")
            time.sleep(0.25 * (i % 8))          # from the nodes' start to well into the transfer
            pids = node_pids(rep)
            os.kill(p.pid, signal.SIGTERM)
            time.sleep(0.1)
            os.kill(p.pid, signal.SIGTERM)
            log, _ = p.communicate(timeout=60)
        finally:
            kill_group(p)
        assert p.returncode == 130, (i, log)
        meta = json.loads((rep / "meta.json").read_text())
        assert meta["status"] == "interrupted" and meta["error"] == "stopped by SIGTERM", (i, meta)
        df = pd.read_csv(rep.parent.parent / "summary.csv")
        assert list(df["status"]) == ["interrupted"], (i, df.to_string())
        for pid in pids.values():
            wait_for(lambda: not alive(pid), 15, f"node {pid} to stop")


def test_a_node_that_dies_is_named_and_the_others_are_stopped(tmp_path, no_leftover_nodes):
    p, rep = start_long_run(tmp_path)
    try:
        pids = node_pids(rep)
        os.kill(pids["B"], signal.SIGKILL)
        out, _ = p.communicate(timeout=90)
    finally:
        kill_group(p)
    assert p.returncode == 1, out      # issue 13: a failed repetition is not a success
    meta = json.loads((rep / "meta.json").read_text())
    assert meta["status"] == "failed"
    assert "node B exited with code -9" in meta["error"]
    assert "rep 0: failed (node B exited" in out
    for n, pid in pids.items():
        wait_for(lambda: not alive(pid), 15, f"node {n} to stop")
    assert '"deliver"' in (rep / "D.log").read_text()  # what was logged before the failure stays
    df = pd.read_csv(rep.parent.parent / "summary.csv")
    assert list(df["status"]) == ["failed"]


def _junk(rng: random.Random) -> list[bytes]:
    valid = encode(Packet(DATA, "10.2.1.1", 5000, "10.2.1.4", 6000, 1, AspanFields(),
                          Segment(1, 0, ACK, 0, (), b"z" * 500)))
    out = [bytes(rng.randrange(256) for _ in range(rng.randint(0, 300))) for _ in range(20)]
    out += [valid[: rng.randint(0, len(valid) - 1)] for _ in range(20)]
    for _ in range(20):
        b = bytearray(valid)
        i = rng.randrange(len(b) * 8)
        b[i // 8] ^= 1 << (i % 8)
        out.append(bytes(b))
    return out


def test_junk_from_a_stranger_address_is_counted_as_stranger_and_the_run_completes(tmp_path, no_leftover_nodes):
    """Issue 27, item 3: with the MAC off too, junk from an address that is not a neighbour's is dropped as
    ``stranger`` before it is parsed (the neighbours' own ports are held by their nodes: junk from a
    neighbour's address, ``malformed``, is tests/routing/drivers/test_udp_probe.py's, on sockets the test holds)."""
    exp = write_exp(tmp_path, segments=3000, loss=0.0, variants=[{"name": "sack", "tcp": {"variant": "sack"}}])
    p = start_run(exp, tmp_path / "runs", "--no-plot")
    try:
        run = wait_for(lambda: next((tmp_path / "runs" / "t").glob("*"), None), 30, "run dir")
        rep = run / "sack" / "rep0"
        wait_for(lambda: '"deliver"' in ((rep / "D.log").read_text() if (rep / "D.log").exists() else ""),
                 120, "data flowing")
        bind = tuple(json.loads((rep / "B.node.json").read_text())["bind"])
        junk = _junk(random.Random(5))
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for j in junk:
            s.sendto(j, bind)
        s.close()
        out, _ = p.communicate(timeout=240)
    finally:
        kill_group(p)
    assert p.returncode == 0, out
    df = pd.read_csv(run / "summary.csv")
    assert df["integrity_ok"].all() and (df["status"] == "ok").all()
    events = [json.loads(l) for l in (rep / "B.log").read_text().splitlines()]
    stranger = [e for e in events if e["ev"] == "drop" and e["reason"] == "stranger"]
    # 20 lines a second one by one, the rest of the burst as one line with a count (issue 13, item 4)
    assert sum(e.get("count", 1) for e in stranger) == len(junk) and len(stranger) == 21
    [stop] = [e for e in events if e["ev"] == "node_stop"]
    assert stop["drops"]["stranger"] == len(junk) and stop["drops"]["malformed"] == 0
    assert int(df["drops_malformed"].iloc[0]) == 0


def test_socket_drops_reads_the_kernel_counter(tmp_path):
    from routing.drivers.udp import socket_drops
    proc = tmp_path / "udp"
    proc.write_text(
        "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n"
        " 1: 0101007F:B9E8 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 1 2 0000000000000000 17\n")
    assert socket_drops(("127.0.1.1", 0xB9E8), str(proc)) == 17
    assert socket_drops(("127.0.1.2", 0xB9E8), str(proc)) is None
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.1.1", 0))
    try:
        assert socket_drops(s.getsockname()) == 0  # a fresh socket, read from the real /proc/net/udp
    finally:
        s.close()


def test_a_run_with_the_mac_on_completes_and_leaves_no_key_behind(tmp_path, no_leftover_nodes):
    """Issue 13, item 3: the authenticated overlay carries a whole flow; a stranger's datagrams are
    dropped as such; the key files are gone after the run."""
    exp = write_exp(tmp_path, segments=2000, loss=0.0,
                    variants=[{"name": "mac", "tcp": {"variant": "sack"}, "auth": {"mac": True}}])
    p = start_run(exp, tmp_path / "runs", "--no-plot")
    try:
        run = wait_for(lambda: next((tmp_path / "runs" / "t").glob("*"), None), 30, "run dir")
        rep = run / "mac" / "rep0"
        wait_for(lambda: '"deliver"' in ((rep / "D.log").read_text() if (rep / "D.log").exists() else ""),
                 120, "data flowing")
        bind = tuple(json.loads((rep / "B.node.json").read_text())["bind"])
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for j in _junk(random.Random(7)):
            s.sendto(j, bind)
        s.close()
        out, _ = p.communicate(timeout=240)
    finally:
        kill_group(p)
    assert p.returncode == 0, out
    df = pd.read_csv(run / "summary.csv")
    assert df["integrity_ok"].all() and (df["status"] == "ok").all()
    assert json.loads((rep / "meta.json").read_text())["auth"] is True
    assert not list(rep.glob("*.key"))
    [stop] = [json.loads(l) for l in (rep / "B.log").read_text().splitlines() if '"node_stop"' in l]
    assert stop["drops"]["stranger"] == 60 and stop["drops"]["malformed"] == 0
