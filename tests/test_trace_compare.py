"""A recording and its replay side by side (issue 25, "Show"): ``aspan plot RECORDED REPLAYED --out`` on a
netns-style run and a sim run of the same experiment, ``aspan trace compare`` of their links, and the
experiment files that record on netns and replay on the sim (experiments/trace-record-netns.yaml,
experiments/replay-netns-record.yaml).  Fabricated runs (plots/testing.py): no network, no root."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from experiments.cli import main as aspan
from experiments.runner import check_backend_support
from experiments.schema import ExperimentError, load_file
from experiments.trace import compare_table, extract, loss_bins, select, table
from plots.cli import plot_command
from plots.testing import NODES, basic_flow_events, ev, write_experiment, write_rep
from tracefiles import read_rows

ROOT = Path(__file__).resolve().parent.parent


def probes(heard: list[int]) -> list[dict]:
    """C's ``etx`` events about B once a second from t = 1 s (the flow's start): B sent 10 probes a second,
    C had heard ``heard[i]`` of them by the i-th event (so link B>C lost 10 - Δheard of each 10)."""
    return [ev(1.0 + i, "C", "etx", nbr=NODES["B"], forward=0.9, reverse=1.0, quality=1.1,
               heard=h, seq=10 * i + 9) for i, h in enumerate(heard)]


def fabricated(tmp_path: Path) -> tuple[Path, Path]:
    """The same experiment (variant ``sack``) recorded on netns (5 dupack losses, ends at 3 s, B>C loses 2
    of 10 probes in the flow's first second) and replayed on the sim (1 loss, ends at 2 s, B>C loses 1 of 10 in that second)."""
    rec, rep = tmp_path / "rec", tmp_path / "rep"
    write_experiment(rec, ["sack"], backend="netns")
    write_experiment(rep, ["sack"], backend="sim")
    write_rep(rec, "sack", 0, basic_flow_events(losses=5, t_end=3.0) + probes([10, 18, 28]), backend="netns")
    write_rep(rep, "sack", 0, basic_flow_events(losses=1, t_end=2.0) + probes([10, 19, 29]), backend="sim")
    return rec, rep


def test_plot_puts_the_replay_beside_the_recording(tmp_path: Path) -> None:
    rec, rep = fabricated(tmp_path)
    out = tmp_path / "cmp"
    assert plot_command([rec, rep], out, labels=["recorded", "replayed"]) == 0
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"| recorded | `{rec}` | rec | netns |" in report
    assert f"| replayed | `{rep}` | rep | sim |" in report
    assert "### B = replayed vs A = recorded" in report
    for fig in ("cwnd_time", "losses"):   # the cwnd over time and the losses at the sender, both runs in one
        assert (out / "figures" / f"{fig}.png").stat().st_size > 0
    summary = pd.read_csv(out / "summary.csv")
    by = {lab: summary[summary["label"] == lab].iloc[0] for lab in ("recorded", "replayed")}
    assert by["recorded"]["losses_dupack"] == 5 and by["replayed"]["losses_dupack"] == 1
    assert by["replayed"]["goodput_mbps"] > by["recorded"]["goodput_mbps"]   # 1 s shorter, same bytes
    row = next(line for line in report.splitlines() if line.startswith("| sack | ") and "losses_dupack" in line)
    assert "| 5 (1) | 1 (1) | -4 " in row   # A (recorded) and B (replayed), in that order
    assert not list(rec.glob("report.md")) and not list(rep.glob("report.md"))   # inputs untouched


def test_trace_compare_bins_each_link_of_each_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec, rep = fabricated(tmp_path)
    a, b = extract(rec), extract(rep)
    assert loss_bins(a, 1.0)["B>C"].round(6).tolist() == [0.2, 0.0]
    assert loss_bins(b, 1.0)["B>C"].round(6).tolist() == [0.1, 0.0]
    assert loss_bins(a, 2.0)["B>C"].round(6).tolist() == [0.1]   # pooled: 2 of 20
    text = compare_table([a, b], ["recorded", "replayed"], 1.0)
    assert text.splitlines()[0] == "| t (s) | B>C recorded | B>C replayed |"
    assert text.splitlines()[2:] == ["| 0-1 | 20.0 | 10.0 |", "| 1-2 | 0.0 | 0.0 |"]
    csv = tmp_path / "rec.csv"
    assert aspan(["trace", "extract", str(rec), "-o", str(csv)]) == 0
    capsys.readouterr()
    assert aspan(["trace", "compare", str(csv), str(rep), "--label", "recorded", "--label", "replayed",
                  "--bin-s", "1"]) == 0   # a trace file and a run directory
    assert "| 0-1 | 20.0 | 10.0 |" in capsys.readouterr().out
    assert aspan(["trace", "compare", str(rec), str(rep), "--run", "sack/rep3", "--run", "all"]) == 2
    assert "no run 'sack/rep3'; it holds sack/rep0" in capsys.readouterr().err
    assert aspan(["trace", "compare", str(rec), str(rep), "--label", "one"]) == 2
    assert "--label given 1 time(s) for 2 sources" in capsys.readouterr().err


def test_the_recording_and_its_replay_pair_up() -> None:
    """The replay plays the checked-in recording on every directed link of the recorded chain, under the
    recording's variant name (what pairs them in the comparison); local replays it over the same emulated
    links (routing/overlay/udp_link.py), the Pis refuse it (their links are the radios)."""
    recorded = load_file(ROOT / "experiments/trace-record-netns.yaml")
    replay = load_file(ROOT / "experiments/replay-netns-record.yaml")
    assert recorded.base["backend"] == "netns" and replay.base["backend"] == "sim"
    assert {v.name for v in recorded.variants} <= {v.name for v in replay.variants}
    assert replay.base["link"] == recorded.base["link"] and replay.base["flows"] == recorded.base["flows"]
    trace = table(read_rows(ROOT / "experiments/traces/chain-netns.csv"))
    assert len(trace) < 1000   # a small file
    rep0 = select(trace, "sack/rep0")
    assert sorted(rep0["link"].unique()) == ["A>B", "B>A", "B>C", "C>B", "C>D", "D>C"]
    # what the script did shows in the recording: B loses what it hears once its ramp is up, B>A never
    lossy = loss_bins(select(trace, "sack"), 100.0).loc[0.0]
    assert 0.03 < lossy["A>B"] < 0.1 and 0.03 < lossy["C>B"] < 0.1 and lossy["B>A"] == 0.0
    for variant in replay.variants:
        links = variant.config["loss"]["links"]
        assert set(links) == {"A>B", "B>A", "B>C", "C>B", "C>D", "D>C"} or set(links) == {"A-B", "B-C", "C-D"}
    check_backend_support(replay, "local")
    with pytest.raises(ExperimentError, match="link.rate_mbps: cannot run on backend pi"):
        check_backend_support(replay, "pi")


def test_trace_compare_on_a_diamond_from_csv_rows() -> None:
    """Any topology: the links are whatever the traces hold (here a diamond's four, as a csv reads them:
    strings), each trace's bins side by side, a link one trace lacks shown as ``-``."""
    def rows(links: dict[str, list[int]]) -> list[dict[str, str]]:
        return [{"variant": "v", "repetition": "0", "link": link, "t_s": str(t), "dt_s": "1.0", "sent": "10",
                 "heard": str(h), "delivery": str(h / 10), "etx": ""}
                for link, heard in links.items() for t, h in enumerate(heard, start=-1)]
    a = table(rows({"A>B": [10, 9, 10], "A>C": [10, 5, 5], "B>D": [10, 10, 10], "C>D": [10, 10, 8]}))
    b = table(rows({"A>B": [10, 10, 10], "A>C": [10, 7, 6], "B>D": [10, 10, 10]}))
    assert a["sent"].dtype.kind in "if" and a["etx"].isna().all()
    lines = compare_table([a, b], ["a", "b"], 2.0).splitlines()
    assert lines[0] == ("| t (s) | A>B a | A>B b | A>C a | A>C b | B>D a | B>D b | C>D a | C>D b |")
    assert lines[2:] == ["| 0-2 | 5.0 | 0.0 | 50.0 | 35.0 | 0.0 | 0.0 | 10.0 | - |"]   # settling (t -1) left out
