"""Issue 28, items 3 and 4: comparisons that compare (every section, differences and ratios with 95 %
intervals), the medium's lateness in the report and on the terminal (the intervals: tests/plots/test_stats.py).
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any
import pytest
from plots.cli import main, plot_command
from plots.numbers import mean_std, plain
from plots.testing import basic_flow_events, ev, write_experiment, write_rep


# ----------------------------------------------------------------------------- stats


def test_numbers_in_plain_notation() -> None:
    assert plain(18000.0) == "18000" and plain(1.8e4) == "18000" and plain(44.76) == "44.8"
    assert plain(0.012345) == "0.0123" and plain(7) == "7" and plain(float("nan")) == ""
    assert plain(17999.6) == "18000" and plain(123456.7) == "123457"     # .3g: 1.8e+04, 1.23e+05
    assert mean_std([18000, 18000]) == "18000 ± 0"
    assert mean_std([44.76, 20, 60]) == "41.6 ± 20.2"
    assert "e+" not in mean_std([123456.0, 234567.0])


# ----------------------------------------------------------------------------- synthetic medium runs


def medium_run(root: Path, name: str, losses: list[int], retries: list[int], late_us: float = 50.0,
               variants: tuple[str, ...] = ("aspan", "sack")) -> Path:
    """A run on a medium (experiment.yaml resolved configs with medium dcf), one rep per entry of
    ``losses``/``retries``: dupack losses and MAC retries at station B; 100 frames in medium.log with
    airtime 1000 us per transmission, the last 5 ``late_us`` late (the others 10 us)."""
    run = root / name
    cfg: dict[str, Any] = {"medium": {"model": "dcf"}, "topology": {"chain": ["A", "B", "C", "D"]},
                           "flows": [{"sender": "A", "receiver": "D"}]}
    write_experiment(run, [{"name": v, "config": cfg} for v in variants])
    for v in variants:
        for k, (loss, retry) in enumerate(zip(losses, retries)):
            events = basic_flow_events(snoop=v == "aspan", losses=loss)
            for station in "ABCD":
                events.append(ev(3.0, "medium", "mac", station=station, elapsed_s=2.0, frames=100,
                                 attempts=100 + (retry if station == "B" else 0),
                                 retries=retry if station == "B" else 0, collisions=1, hidden=0,
                                 ack_lost=0, mac_drops=0, queue_drops=0, airtime_ns=100_000_000))
            for i in range(100):
                events.append(ev(1.0 + i / 100, "medium", "frame", src="A", dst="B", bytes=1028, attempts=1,
                                 collisions=0, airtime_us=1000.0, late_us=late_us if i >= 95 else 10.0))
            write_rep(run, v, k, events)
    return run


def _headings(report: str) -> set[str]:
    return {line[3:].split(" (")[0] for line in report.splitlines() if line.startswith("## ")}


def _cells(report: str, start: str) -> list[str]:
    line = next(x for x in report.splitlines() if x.startswith(start))
    return [c.strip() for c in line.strip("|").split("|")]


def test_a_comparison_has_every_section_and_differences_with_intervals(tmp_path: Path) -> None:
    a = medium_run(tmp_path, "a", losses=[1, 2, 3], retries=[10, 20, 30])
    b = medium_run(tmp_path, "b", losses=[4, 5, 6], retries=[40, 50, 60])
    assert plot_command([a]) == 0
    single = (a / "report.md").read_text()
    assert "## Radio medium" in single
    out = tmp_path / "cmp"
    assert plot_command([a, b], out=out) == 0
    report = (out / "report.md").read_text()
    assert _headings(single) - _headings(report) == set(), "a section of the single report is missing"
    assert "figures/medium_retries.png" in report and (out / "figures" / "medium_retries.svg").is_file()
    # header: variants and repetitions per variant apart
    assert _cells(report, "| a |")[4:7] == ["2", "3", "1"]
    # losses_dupack: A = 1, 2, 3; B = 4, 5, 6 (the sender's dupack losses)
    cells = _cells(report, "| aspan | A->D:6001 | losses_dupack |")
    assert cells[3:5] == ["2.00 ± 1.00 (3)", "5.00 ± 1.00 (3)"]
    est, lo, hi = map(float, re.findall(r"-?[\d.]+", cells[5]))
    half = 2.776445105 * math.sqrt(2 / 3)
    assert (est, lo, hi) == pytest.approx((3.0, 3.0 - half, 3.0 + half), abs=0.01)
    ratio = [float(x) for x in re.findall(r"-?[\d.]+", cells[6])]
    assert ratio[0] == pytest.approx(2.5) and ratio[1] < 2.5 < ratio[2]
    # the medium's counters compared too: retries 10, 20, 30 vs 40, 50, 60
    cells = _cells(report, "| sack | all (medium) | retries |")
    assert cells[3:5] == ["20.0 ± 10.0 (3)", "50.0 ± 10.0 (3)"]
    assert float(re.findall(r"-?[\d.]+", cells[5])[0]) == pytest.approx(30.0)
    # the per-repetition table has the run label
    assert "| label | variant | flow | repetition |" in report


def test_a_run_without_a_common_variant_says_so(tmp_path: Path) -> None:
    a = medium_run(tmp_path, "a", losses=[1, 2], retries=[1, 2], variants=("aspan",))
    b = medium_run(tmp_path, "b", losses=[1, 2], retries=[1, 2], variants=("sack",))
    plot_command([a, b], out=tmp_path / "cmp")
    assert "No variant and flow common to both runs" in (tmp_path / "cmp" / "report.md").read_text()


def test_lateness_in_the_report_and_on_the_terminal(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """p99 of the frames' lateness against a tenth of the mean airtime per transmission (1000 us): 5 % of
    the frames at 500 us put p99 at 500 us > 100 us (warned); at 50 us it stays under (not warned)."""
    late = medium_run(tmp_path, "late", losses=[1], retries=[1], late_us=500.0)
    fine = medium_run(tmp_path, "fine", losses=[1], retries=[1], late_us=50.0)
    assert main([str(late)]) == 0
    err = capsys.readouterr().err
    assert "warning: aspan: the medium process delivered frames 0.500 ms late at p99" in err
    report = (late / "report.md").read_text()
    assert "## Medium lateness" in report and "> Warning: aspan" in report
    section = report[report.index("## Medium lateness"):]
    cells = _cells(section, "| aspan |")
    assert cells[1:9] == ["1", "100", "0.0100", "0.500", "0.500", "1", "0.500", "**late**"]
    assert main([str(fine)]) == 0
    assert "warning" not in capsys.readouterr().err
    assert "> Warning" not in (fine / "report.md").read_text()
    assert main([str(late), str(fine), "--out", str(tmp_path / "cmp")]) == 0
    assert "warning: late: aspan:" in capsys.readouterr().err


# ----------------------------------------------------------------------------- figures (item 5)


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The matplotlib figures plots.figures and plots.medium save, by name (nothing written)."""
    import plots.figures as figures
    import plots.medium as medium
    seen: dict[str, Any] = {}

    def save(fig: Any, out_dir: Path, name: str) -> list[Path]:
        seen[name] = fig
        return [out_dir / f"{name}.png"]
    monkeypatch.setattr(figures, "_save", save)
    monkeypatch.setattr(medium, "_save", save)
    return seen


def _groups(root: Path, **events: Any):
    from plots.data import load_run
    run = root / "run"
    write_experiment(run, ["aspan", "reno"])
    for v in ("aspan", "reno"):
        write_rep(run, v, 0, basic_flow_events(snoop=v == "aspan", **events))
    return load_run(run, write=False).groups()


def test_the_tail_of_transmissions_per_packet_is_drawn_on_a_log_axis(tmp_path: Path, drawn: dict) -> None:
    """Per packet 3, 6, 3 transmissions: the CCDF panel gives P(X >= 3) = 1 and P(X >= 6) = 1/3, log y."""
    from plots.figures import tx_per_pkt_cdf
    tx_per_pkt_cdf(_groups(tmp_path), tmp_path)
    cdf, ccdf = drawn["tx_per_pkt_cdf"].get_axes()
    assert cdf.get_yscale() == "linear" and ccdf.get_yscale() == "log"
    line = ccdf.get_lines()[0]
    assert list(line.get_xdata()) == [3.0, 6.0]
    assert list(line.get_ydata()) == pytest.approx([1.0, 1 / 3])


def test_cwnd_over_time_has_the_same_axis_in_every_run(tmp_path: Path, drawn: dict) -> None:
    """A run whose cwnd jumps 100-fold used to get a log axis, another a linear one: now both linear."""
    from plots.figures import cwnd_over_time
    cwnd_over_time(_groups(tmp_path / "a"), tmp_path)
    plain_axis = drawn["cwnd_time"].get_axes()[0].get_yscale()
    cwnd_over_time(_groups(tmp_path / "b", cwnds=(2000, 3000, 4000, 500_000)), tmp_path)
    assert drawn["cwnd_time"].get_axes()[0].get_yscale() == plain_axis == "linear"


def test_medium_retries_are_counts_on_a_symlog_axis(tmp_path: Path, drawn: dict) -> None:
    """Bars are the mean counts (20 retries, 0 hidden: no +0.5), on symlog so that 0 is drawn at 0."""
    from plots.medium import MediumRuns, retries_figure
    run = medium_run(tmp_path, "a", losses=[1, 2, 3], retries=[10, 20, 30], variants=("sack",))
    data = MediumRuns.of(run)
    retries_figure(data.mac, data.order, tmp_path)
    ax = drawn["medium_retries"].get_axes()[0]
    assert ax.get_yscale() == "symlog"
    heights = {c.get_label(): [p.get_height() for p in c.patches] for c in ax.containers}
    assert heights["retries"] == [20.0] and heights["hidden"] == [0.0] and heights["collisions"] == [4.0]
    tick_labels = [t.get_text() for t in ax.get_xticklabels()]
    assert all(t.get_rotation() in (0, 20) for t in ax.get_xticklabels()) and "sack" in tick_labels


def test_the_printed_figure_count_is_what_is_on_disk(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A plot leaves exactly the figures it drew (a stale one from an earlier plot is removed) and
    prints their number."""
    run = medium_run(tmp_path, "a", losses=[1, 2], retries=[1, 2])
    (run / "figures").mkdir()
    (run / "figures" / "medium_throughput_hops.png").write_bytes(b"stale")
    assert plot_command([run]) == 0
    printed = int(re.search(r"(\d+) figures in", capsys.readouterr().out).group(1))
    on_disk = {p.stem for p in (run / "figures").glob("*.png")}
    assert printed == len(on_disk) and "medium_throughput_hops" not in on_disk
    assert {p.stem for p in (run / "figures").glob("*.svg")} == on_disk
    report = (run / "report.md").read_text()
    assert not re.search(r"\d\.?\d*e[+-]\d", report), "a number in scientific notation in report.md"
