"""plots.figures, plots.report and plots.cli on hand-written run directories."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path
import pytest
from plots.cli import main, plot_command
from plots.data import load_run, sweep_value_for
from plots.figures import SWEEP_METRICS
from plots.report import write_report
from plots.summary import read_summary
from plots.testing import basic_flow_events, write_experiment, write_rep


BASE_FIGURES = ["losses", "cwnd_cdf", "cwnd_time", "tx_per_pkt_cdf", "tx_per_packet"]


SNOOP_FIGURES = ["snoop_cache_time", "snoop_memory", "snoop_hits"]


def _assert_figures(fig_dir: Path, names: list[str]) -> None:
    for name in names:
        for ext in ("png", "svg"):
            path = fig_dir / f"{name}.{ext}"
            assert path.is_file() and path.stat().st_size > 0, path


def make_run(root: Path, name: str = "run", variants: tuple[str, ...] = ("aspan", "reno"),
             reps: int = 2, **experiment: object) -> Path:
    """Variants whose name contains 'reno' or 'sack' do not snoop."""
    run = root / name
    write_experiment(run, variants, **experiment)
    for v in variants:
        snoop = not ("reno" in v or "sack" in v)
        for k in range(reps):
            write_rep(run, v, k, basic_flow_events(snoop=snoop, losses=k + (0 if snoop else 3)))
    return run


def test_plot_command_writes_figures_report_and_summary(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture) -> None:
    run = make_run(tmp_path)
    assert plot_command([run]) == 0
    _assert_figures(run / "figures", BASE_FIGURES + SNOOP_FIGURES)
    assert (run / "summary.csv").is_file()
    assert str(run / "figures") in capsys.readouterr().out
    report = (run / "report.md").read_text()
    for v in ("aspan", "reno"):
        assert v in report
    embedded = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", report)
    assert "figures/losses.png" in embedded and "figures/cwnd_cdf.png" in embedded
    for rel in embedded:
        assert not Path(rel).is_absolute() and (run / rel).is_file()
    assert "± " in report                       # mean ± std table
    assert "| aspan | A->D:6001 | 1 |" in report            # per-rep table row: variant, flow, repetition


def test_legend_is_variant_name(tmp_path: Path) -> None:
    run = make_run(tmp_path, variants=("snoop_1", "snoop_2", "reno"))
    plot_command([run])
    svg = (run / "figures" / "cwnd_cdf.svg").read_text()
    for v in ("snoop_1", "snoop_2", "reno"):
        assert v in svg
    cache_svg = (run / "figures" / "snoop_cache_time.svg").read_text()
    assert "snoop_1" in cache_svg and "reno" not in cache_svg   # non-snooping variant skipped
    assert "node B" in cache_svg and "node C" in cache_svg


def test_no_snooping_variant_at_all(tmp_path: Path) -> None:
    run = make_run(tmp_path, variants=("reno", "sack"))
    assert plot_command([run]) == 0
    _assert_figures(run / "figures", BASE_FIGURES)
    for name in SNOOP_FIGURES:
        assert not (run / "figures" / f"{name}.png").exists()
    report = (run / "report.md").read_text()
    # item 5 of issue 15: only what applies to the experiment (no snoop, no schemes, no sweep)
    assert "Not drawn" not in report
    for caption in ("Snoop", "schemes", "Sweep"):
        assert caption not in report


def test_failed_and_incomplete_reps(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    write_rep(run, "aspan", 2, basic_flow_events(cwnds=[999_000]), status="failed",
              error="node C crashed")
    write_rep(run, "reno", 2, basic_flow_events(snoop=False, finish=False),
              tail={"B": '{"t": 9, "node": "B", "ev"'})
    plot_command([run])
    data = load_run(run)
    aspan = data.groups()[0]
    assert [r.repetition for r in aspan.usable] == [0, 1]      # failed rep left out
    report = (run / "report.md").read_text()
    assert "aspan rep 2: **failed** (excluded from figures): node C crashed" in report
    assert "reno rep 2: **incomplete**" in report
    assert "skipped 1 bad log line(s) (B: 1)" in report
    # the failed rep's huge cwnd must not reach the CDF
    assert max(r.cwnd["cwnd_seg"].max() for r in aspan.usable) == 5.0
    assert aspan.reps[2].cwnd["cwnd_seg"].max() == 999.0
    assert list(read_summary(run)["status"]) == ["ok", "ok", "failed", "ok", "ok", "incomplete"]


def test_summary_kept_unless_resummarize(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    (run / "summary.csv").write_text("variant,repetition\n")  # a stale file
    plot_command([run])
    assert (run / "summary.csv").read_text() == "variant,repetition\n"
    assert "--resummarize" in (run / "report.md").read_text()
    plot_command([run], resummarize=True)
    assert len(read_summary(run)) == 4


def test_report_uses_summary_csv_rows(tmp_path: Path) -> None:
    run = make_run(tmp_path, reps=1)
    plot_command([run])
    csv = (run / "summary.csv").read_text().replace("sim,True", "pi,True")
    (run / "summary.csv").write_text(csv)
    write_report(run)
    assert "| pi |" in (run / "report.md").read_text()


def _sweep_run(tmp_path: Path) -> Path:
    values = [1.0, 0.99, 0.95, 0.9]
    run = tmp_path / "qos"
    variants = [{"name": f"qos_{v}", "aspan": {"pkt_qos": v}} for v in values[:2]]
    variants += [{"name": f"qos_{v}"} for v in values[2:]] + [{"name": "reno"}]
    write_experiment(run, variants, sweep={"field": "aspan.pkt_qos", "values": values})
    for i, v in enumerate(values):
        for k in range(2):
            extra = {"sweep_value": v} if i == 0 else {}
            write_rep(run, f"qos_{v}", k, basic_flow_events(losses=i + k), **extra)
    write_rep(run, "reno", 0, basic_flow_events(snoop=False, losses=6))
    return run


def test_sweep_values_and_figures(tmp_path: Path) -> None:
    run = _sweep_run(tmp_path)
    data = load_run(run)
    assert data.sweep == ("aspan.pkt_qos", [1.0, 0.99, 0.95, 0.9])
    values = {(r.variant, r.repetition): r.sweep_value for r in data.reps}
    assert values[("qos_1.0", 0)] == 1.0        # meta sweep_value
    assert values[("qos_0.99", 1)] == 0.99      # experiment.yaml variant field
    assert values[("qos_0.9", 0)] == 0.9        # variant name
    assert values[("reno", 0)] is None
    plot_command([run])
    _assert_figures(run / "figures", [f"sweep_{m}" for m in SWEEP_METRICS])
    svg = (run / "figures" / "sweep_losses.svg").read_text()
    assert "aspan.pkt_qos" in svg and "reno (not swept)" in svg
    report = (run / "report.md").read_text()
    assert "figures/sweep_cwnd_median.png" in report
    assert "not part of the sweep over aspan.pkt_qos" in report


def test_no_sweep_no_sweep_figures(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    plot_command([run])
    assert not list((run / "figures").glob("sweep_*"))


def test_sweep_value_from_name_needs_listed_value() -> None:
    spec = ("pkt_qos", [0.9, 0.95])
    assert sweep_value_for({}, "aspan-q0.95", {}, spec) == 0.95
    assert sweep_value_for({}, "aspan-q0.5", {}, spec) is None
    assert sweep_value_for({"sweep_value": 0.5}, "x", {}, spec) == 0.5
    assert sweep_value_for({}, "fast", {}, ("mode", ["fast", "slow"])) == "fast"


def _hashes(*roots: Path) -> dict[str, str]:
    """sha256 of every file under ``roots`` (path -> digest), and every directory (-> "dir")."""
    out = {}
    for root in roots:
        for p in sorted(root.rglob("*")):
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


def test_compare_never_writes_into_inputs(tmp_path: Path) -> None:
    """Issue 15 item 2: ``plot RUN... --out DIR`` leaves every input byte-identical, even a
    run without summary.csv and with --resummarize; report.md and summary.csv go to DIR."""
    lossless = make_run(tmp_path, "lossless", variants=("aspan", "reno"), reps=1)
    lossy = make_run(tmp_path, "lossy", variants=("aspan", "sack"), reps=1)
    plot_command([lossless])                  # one run, no --out: written into the run
    assert (lossless / "report.md").is_file() and (lossless / "summary.csv").is_file()
    before = _hashes(lossless, lossy)         # lossy: no summary, no figures, no report
    out = tmp_path / "cmp"
    assert plot_command([lossless, lossy], out=out, resummarize=True) == 0
    assert plot_command([lossy], out=tmp_path / "single") == 0
    assert _hashes(lossless, lossy) == before
    _assert_figures(out / "figures", BASE_FIGURES + SNOOP_FIGURES)
    report = (out / "report.md").read_text()
    for rel in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", report):
        assert (out / rel).is_file()
    assert str(lossless) in report and str(lossy) in report
    combined = read_summary(out / "summary.csv")
    assert sorted(set(combined["label"])) == ["lossless", "lossy"] and len(combined) == 4
    assert (tmp_path / "single" / "report.md").is_file()


def test_compare_needs_out_outside_inputs(tmp_path: Path) -> None:
    a = make_run(tmp_path, "a", reps=1)
    b = make_run(tmp_path, "b", reps=1)
    before = _hashes(a, b)
    with pytest.raises(ValueError, match="--out"):
        plot_command([a, b])
    with pytest.raises(ValueError, match="inside the input run"):
        plot_command([a, b], out=b / "cmp")
    assert _hashes(a, b) == before


def test_compare_legends_from_experiment_backend_and_label(tmp_path: Path) -> None:
    sim = make_run(tmp_path / "sim", "same-exp", variants=("snoop_1",), reps=1)
    local = tmp_path / "local" / "same-exp"
    write_experiment(local, ["snoop_1"])
    write_rep(local, "snoop_1", 0, basic_flow_events(), backend="local")
    out = tmp_path / "cmp"
    plot_command([sim, local], out=out)
    svg = (out / "figures" / "cwnd_cdf.svg").read_text()
    assert "sim: snoop_1" in svg and "local: snoop_1" in svg      # same experiment: backend
    plot_command([sim, local], out=out, labels=["ns-3 like", "loopback"], force=True)
    svg = (out / "figures" / "cwnd_cdf.svg").read_text()
    assert "ns-3 like: snoop_1" in svg and "loopback: snoop_1" in svg
    with pytest.raises(ValueError, match="--label"):
        plot_command([sim, local], out=out, labels=["only one"], force=True)


def test_compare_refuses_an_existing_out_without_force(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture) -> None:
    """Issue 28 item 3: an existing, non-empty --out is not overwritten unless --force; the message
    names the directory and the command exits non-zero."""
    a = make_run(tmp_path, "a", reps=1)
    b = make_run(tmp_path, "b", reps=1)
    out = tmp_path / "cmp"
    out.mkdir()
    assert plot_command([a, b], out=out) == 0          # an empty directory is fine
    before = _hashes(out)
    assert main([str(a), str(b), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(out) in err and "--force" in err
    assert _hashes(out) == before
    assert main([str(a), str(b), "--out", str(out), "--force"]) == 0


def test_compare_sweeps(tmp_path: Path) -> None:
    a = _sweep_run(tmp_path / "a")
    b = _sweep_run(tmp_path / "b")
    plot_command([a, b], out=tmp_path / "cmp")
    _assert_figures(tmp_path / "cmp" / "figures", ["sweep_losses", "sweep_memory"])
    svg = (tmp_path / "cmp" / "figures" / "sweep_losses.svg").read_text()
    assert "a/qos" in svg and "b/qos" in svg        # same name and backend: parent/name


def test_non_run_dir_raises(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match=re.escape(str(empty))):
        plot_command([empty])
    with pytest.raises(ValueError, match="does not exist"):
        plot_command([tmp_path / "missing"])
    run = make_run(tmp_path)
    with pytest.raises(ValueError, match="not a run directory"):
        plot_command([run, empty])
    assert not (run / "report.md").exists()    # checked before anything is written
    assert main([str(empty)]) == 2
    assert "expected" in capsys.readouterr().err


def test_run_dir_without_reps(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_experiment(run, ["aspan"])
    assert plot_command([run]) == 0
    assert "No repetitions found" in (run / "report.md").read_text()
    assert (run / "summary.csv").read_text().startswith("variant,flow,repetition,seed,")


def test_figures_reproducible(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    plot_command([run])
    first = {p.name: p.read_bytes() for p in (run / "figures").glob("*.*")}
    plot_command([run])
    assert first == {p.name: p.read_bytes() for p in (run / "figures").glob("*.*")}


def test_main_entry_point(tmp_path: Path) -> None:
    run = make_run(tmp_path, reps=1)
    assert main([str(run), "--resummarize"]) == 0
    assert (run / "report.md").is_file()


def test_unreadable_summary_csv_is_noted_not_fatal(tmp_path: Path) -> None:
    run = make_run(tmp_path, reps=1)
    (run / "summary.csv").write_text("")
    assert plot_command([run]) == 0
    assert "summary.csv unreadable" in (run / "report.md").read_text()
    assert (run / "summary.csv").read_text() == ""


def test_two_flows_drawn_one_line_each(tmp_path: Path) -> None:
    """Issue 15 item 1: with two flows, the figures and report name each flow; the memory
    figure (per repetition) shows the variant once."""
    from plots.testing import reverse_flow_events
    run = tmp_path / "two"
    write_experiment(run, ["aspan"])
    flows = [{"sender": "A", "receiver": "D", "segments": 3, "segment_size": 1000},
             {"sender": "D", "receiver": "A", "segments": 2, "segment_size": 1000}]
    for k in range(2):
        events = sorted(basic_flow_events() + reverse_flow_events(), key=lambda e: e["t"])
        write_rep(run, "aspan", k, events, flows=flows)
    plot_command([run])
    for name in ("cwnd_cdf", "cwnd_time", "tx_per_pkt_cdf", "losses"):
        svg = (run / "figures" / f"{name}.svg").read_text()
        assert "aspan A-&gt;D:6001" in svg and "aspan D-&gt;A:6002" in svg, name
    memory = (run / "figures" / "snoop_memory.svg").read_text()
    assert "D-&gt;A" not in memory and "aspan" in memory
    report = (run / "report.md").read_text()
    assert "| aspan A->D:6001 | 2 |" in report and "| aspan D->A:6002 | 2 |" in report
    assert "Flows: A->D:6001, D->A:6002" in report


@pytest.mark.parametrize("lo, hi, labels", [
    (3, 200, ["3", "5", "10", "20", "30", "50", "100", "200"]),
    (1, 8000, ["1", "3", "10", "30", "100", "300", "1000", "3000"]),
])
def test_log_ticks_are_plain_numbers(lo: float, hi: float, labels: list[str]) -> None:
    """Issue 15 item 3: log axes carry readable labels between the decades."""
    from matplotlib.figure import Figure

    from plots.figures import log_ticks
    ax = Figure().add_subplot()
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    log_ticks(ax.xaxis, lo, hi)
    ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
    assert [ax.xaxis.get_major_formatter()(t) for t in ticks] == labels


def test_bars_show_each_repetition_as_a_dot(tmp_path: Path) -> None:
    """Issue 15 item 3: every bar carries one dot per repetition at that repetition's value."""
    from matplotlib.figure import Figure

    from plots.figures import _bars_with_dots
    run = make_run(tmp_path, variants=("aspan",), reps=3)     # losses_dupack 0, 1, 2
    groups = load_run(run, write=False).groups()
    ax = Figure().add_subplot()
    _bars_with_dots(ax, groups, {"losses_dupack": "three dupacks"})
    dots = sorted(float(y) for c in ax.collections for _x, y in c.get_offsets())
    assert dots == [0.0, 1.0, 2.0]
    assert [p.get_height() for p in ax.patches] == [1.0]        # the bar: the mean


def test_many_variants_get_one_panel_each(tmp_path: Path) -> None:
    run = make_run(tmp_path, variants=("a1", "a2", "a3", "a4", "a5"), reps=1)
    plot_command([run])
    svg = (run / "figures" / "cwnd_time.svg").read_text()
    assert svg.count("(rep 0)") == 5 and "<g id=\"axes_5\"" in svg
