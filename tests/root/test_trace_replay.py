"""Replaying a link trace on every backend (issue 25, item 2), on a diamond (two paths A-B-D and A-C-D).

The trace: every link delivers everything, except B>D, which delivers 100 % until 5 s before the flows
start and 70 % from then on.  The runs settle 8 s, so the probes (10 a second) measure both stretches
before the flow: 30 probes at 100 %, at least 50 at 70 %.  Each backend's run is itself extracted
(experiments/trace.py) and must show the replayed link losing what the trace says, when it says so, and
the other links nothing (on netns the loss is a node's, so both links into D replay B>D).

A trace's link must be a link of the topology: anything else is refused before the run, by ``load`` and
``aspan validate`` against every backend.
"""
from __future__ import annotations

from pathlib import Path
import pandas as pd
import pytest
import yaml
from tests.runs import start_run
from experiments.runner import run_experiment
from experiments.schema import load_experiment
from experiments.trace import extract, write
from tests.system.test_trace_replay import check_replayed, doc, write_trace


@pytest.mark.root
def test_netns_replays_a_link_as_the_loss_of_the_node_that_hears_it(netns: Path) -> None:
    """Kernel TCP: the trace as D's loss (the NFQUEUE handler does not know the previous hop, so loss.links is
    refused there): D hears both its links through B>D's recording."""
    write_trace(netns)
    loss = {"default": {"model": "none"}, "nodes": {"D": {"model": "trace", "file": "diamond.csv", "link": "B>D"}}}
    exp = netns / "t.yaml"
    exp.write_text(yaml.safe_dump(doc("netns", loss)))
    p = start_run(exp, netns / "runs", "--no-plot")
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0, out
    [run_dir] = list((netns / "runs" / "t").iterdir())
    df = pd.read_csv(run_dir / "summary.csv")
    assert (df["status"] == "ok").all() and df["integrity_ok"].all(), df.to_string()
    check_replayed(run_dir, {"B>D", "C>D"})


PROBE_INTERVAL_S = 0.025


def dense(d: dict) -> dict:
    """The closed loop's experiment with probes every PROBE_INTERVAL_S, recording and replay alike."""
    d["etx"] = {**d["etx"], "interval_s": PROBE_INTERVAL_S}
    return d


@pytest.mark.root
def test_closed_loop_recorded_on_netns_replayed_on_the_sim_and_local(netns: Path) -> None:
    """Issue 25, item 3, once (bench/trace_netns_loop.py does it over 20 repetitions and on local too):
    kernel TCP on netns under the scripted fade and burst at B, extracted, replayed on the sim and on
    local (over the same emulated link: routing/overlay/udp_link.py), every directed link its own recording.
    Binned by 2 s, the replay's links lose what the recorded ones lost (mean absolute difference under 0.05, none over 0.15; on local, in real time, 0.08
    and 0.2; each interval in the bin of its middle: binned by its start, the recording's interval from
    3.8 s that held the burst at 4.0 s fell a bin earlier than the replay's from 4 s, and the test
    failed); the goodput within 50 %.  The probes go out every 25 ms here (the bench's 100 ms gives about 40
    a bin on the two links into B: a binomial standard deviation of 0.06 a bin at 15 % loss on each side, and
    one CI run's sim replay missed the mean bound by 0.006 on noise alone); 160 a bin halve that
    (measured: 5-13 % over two repetitions; the sim's TCP is not the kernel's; the 20-repetition errors
    of both are in docs/LOGS.md, "Link traces")."""
    from bench.trace_netns_loop import LINKS, doc as loop_doc, goodputs, script_trace
    script = netns / "script.csv"
    script_trace(script, 0.08)
    fade = {"model": "trace", "file": str(script), "link": "A>B", "down": [[4.0, 4.3]]}
    exp = netns / "loop.yaml"
    exp.write_text(yaml.safe_dump(dense(loop_doc("netns", {"default": {"model": "none"}, "nodes": {"B": fade}}, 1, 1,
                                                  8000))))
    p = start_run(exp, netns / "rec", "--no-plot")
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0, out
    [rec_dir] = list((netns / "rec" / "loop-netns").iterdir())
    recorded = extract(rec_dir)
    trace = netns / "recorded.parquet"
    write(recorded, trace)
    links = {k: {"model": "trace", "file": str(trace)} for k in LINKS}

    def binned(t: pd.DataFrame) -> pd.Series:
        t = t[t["link"].isin(["A>B", "C>B"]) & (t["t_s"] >= 0) & (t["t_s"] < 10)].copy()
        # by each interval's middle: the netns nodes log at their own times (3.8 s to 4.8 s, say), and a
        # burst from 4.0 s belongs to the bin from 4 s, as in the replay's intervals on whole seconds
        t["bin"] = ((t["t_s"] + t["dt_s"] / 2) // 2).astype(int)
        g = t.groupby("bin")[["sent", "heard"]].sum()
        return 1 - g["heard"] / g["sent"]

    rec = binned(recorded)
    assert rec.max() > 0.04                     # the script reached the links (the fade, the burst)
    g_rec = goodputs(rec_dir)[0]
    for backend in ("sim", "local"):
        d = dense(loop_doc(backend, {"default": {"model": "none"}, "links": links}, 100, 1, 8000))
        rep_dir = run_experiment(load_experiment(d, str(netns / "loop.yaml")), out=netns / backend, plot=False,
                                 progress=lambda s: None)
        rep = binned(extract(rep_dir))
        common = rec.index.intersection(rep.index)
        assert len(common) >= 4, backend
        diff = (rec[common] - rep[common]).abs()
        # the replay's own probes sample what it replays (about 160 a bin: a standard deviation of 0.025 at
        # 10 % loss) in intervals on whole seconds, the recording's on the netns nodes' own times: the recorded
        # burst interval (3.6-4.6 s, 36 % loss, binned at 4-6 s) replays over 3.6-4.6 s, and the replay's
        # probes lost in it fall partly into its [3, 4) interval, binned at 2-4 s.  The sim's draws and times
        # are the same in every run; local's are not: in one CI run 4 of the 5 probes lost there fell in
        # [3, 4) (mean 0.055, the 4-6 s bin 0.146 off)
        mean_bound, max_bound = (0.05, 0.15) if backend == "sim" else (0.08, 0.2)
        print(f"closed loop: {backend} bins off by mean {diff.mean():.3f}, max {diff.max():.3f}")
        assert diff.mean() < mean_bound and diff.max() < max_bound, (backend, pd.DataFrame({"recorded": rec,
                                                                                              "replayed": rep}))
        g_rep = goodputs(rep_dir)[0]
        print(f"closed loop: recorded {g_rec:.3f}, {backend} replay {g_rep:.3f} Mbit/s")
        assert g_rep == pytest.approx(g_rec, rel=0.5), (backend, g_rec, g_rep)
