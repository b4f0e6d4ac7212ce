"""plots.style: the paper style of ``aspan plot --style paper`` next to the default notebook style."""
from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from experiments.cli import build_parser
from plots.cli import main, plot_command
from plots.style import NOTEBOOK, PAPER, current, new_figure, save, title, using
from tests.plots.test_figures import BASE_FIGURES, make_run


def _png_inches(path: Path, dpi: int) -> tuple[float, float]:
    width, height = struct.unpack(">II", path.read_bytes()[16:24])    # the IHDR chunk
    return width / dpi, height / dpi


def _svg_font_sizes(path: Path) -> list[float]:
    return [float(x) for x in re.findall(r"font-size: ([\d.]+)px", path.read_text())]


def test_paper_style_no_titles_pdf_and_a_column_wide(tmp_path: Path) -> None:
    paper = make_run(tmp_path, "paper")
    notebook = make_run(tmp_path, "notebook")
    plot_command([paper], style="paper")
    plot_command([notebook])
    for name in BASE_FIGURES:
        pdf = paper / "figures" / f"{name}.pdf"
        assert pdf.read_bytes().startswith(b"%PDF"), name
        assert b"CreationDate" not in pdf.read_bytes(), name          # reproducible metadata
        assert not (notebook / "figures" / f"{name}.pdf").exists()     # the notebook style writes none
    question = "does snooping lower the losses"
    assert question in (notebook / "figures" / "losses.svg").read_text()
    assert question not in (paper / "figures" / "losses.svg").read_text()
    assert "Observed packet loss" not in (paper / "figures" / "losses.svg").read_text()
    assert "Paper Fig" not in (paper / "figures" / "cwnd_cdf.svg").read_text()
    # a one-panel figure is one column wide (3.5 in), its text 7.5-9 pt; it is 2.3 in high and grows by its
    # legend's rows below it (plots.style.legend; at most 3 rows of 2 here)
    from plots.style import LEGEND_ROW_IN
    for name in ("losses", "cwnd_cdf", "cwnd_time"):
        w, h = _png_inches(paper / "figures" / f"{name}.png", PAPER.dpi)
        assert 3.4 <= w <= 3.6 and 2.0 <= h <= 2.6 + 3 * LEGEND_ROW_IN, (name, w, h)
        assert _png_inches(notebook / "figures" / f"{name}.png", NOTEBOOK.dpi)[0] == pytest.approx(6.4)
        sizes = _svg_font_sizes(paper / "figures" / f"{name}.svg")
        assert sizes and all(7.4 <= s <= 9.0 for s in sizes), (name, sizes)
    assert max(_svg_font_sizes(notebook / "figures" / "losses.svg")) > 9.0   # the default's title is larger
    # the report shows the question in the caption instead
    assert question in (paper / "report.md").read_text()


def test_paper_figures_reproducible_and_stale_pdfs_removed(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    plot_command([run], style="paper")
    first = {p.name: p.read_bytes() for p in (run / "figures").glob("*.*")}
    assert any(name.endswith(".pdf") for name in first)
    plot_command([run], style="paper")
    assert first == {p.name: p.read_bytes() for p in (run / "figures").glob("*.*")}
    plot_command([run])     # back to the notebook style: the paper's PDFs do not stay behind
    assert not list((run / "figures").glob("*.pdf"))


def test_style_option_on_both_entries(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run = make_run(tmp_path, reps=1)
    assert main([str(run), "--style", "paper"]) == 0
    assert "(png, svg, pdf)" in capsys.readouterr().out
    assert (run / "figures" / "losses.pdf").is_file()
    with pytest.raises(SystemExit):
        main([str(run), "--style", "poster"])
    assert "invalid choice: 'poster'" in capsys.readouterr().err
    args = build_parser().parse_args(["plot", str(run), "--style", "paper"])
    assert args.style == "paper"
    assert build_parser().parse_args(["plot", str(run)]).style == "notebook"
    with pytest.raises(ValueError, match="unknown; expected one of notebook, paper"):
        plot_command([run], style="poster")


def test_using_restores_the_style_and_title_hook(tmp_path: Path) -> None:
    assert current() is NOTEBOOK
    with using("paper"):
        assert current() is PAPER
        fig, ax = new_figure()
        assert tuple(fig.get_size_inches()) == pytest.approx((3.5, 4.2 * 3.5 / 6.4))
        title(ax, "A title")
        title(fig, "A suptitle")
        assert ax.get_title() == "" and fig.get_suptitle() == ""
        assert [p.suffix for p in save(fig, tmp_path, "x")] == [".png", ".svg", ".pdf"]
    assert current() is NOTEBOOK
    fig, ax = new_figure()
    title(ax, "A title")
    assert ax.get_title() == "A title" and tuple(fig.get_size_inches()) == (6.4, 4.2)
    assert [p.suffix for p in save(fig, tmp_path, "y")] == [".png", ".svg"]
    with pytest.raises(ValueError, match="unknown style 'poster'"):
        with using("poster"):
            pass


def test_paper_style_wraps_labels_longer_than_their_panel(tmp_path: Path) -> None:
    long = "fraction of packets with at least x transmissions (log)"
    with using(PAPER):
        fig, ax = new_figure()
        ax.set_ylabel(long)
        ax.set_xlabel("short")
        save(fig, tmp_path, "wrapped")
        assert "\n" in ax.get_ylabel() and ax.get_ylabel().replace("\n", " ") == long
        assert ax.get_xlabel() == "short"
    fig, ax = new_figure()
    ax.set_ylabel(long)
    save(fig, tmp_path, "kept")
    assert ax.get_ylabel() == long          # the notebook style leaves labels as written


def test_flow_names_drop_the_port_only_where_the_pair_is_unique() -> None:
    from plots.data import flow_names
    flows = ["D->F:6000", "A->F:6001", "A->F:6002", "F->D:6003"]
    assert flow_names(flows) == {f: f for f in flows}            # the notebook style keeps every port
    assert flow_names(flows, ports=False) == {"D->F:6000": "D->F", "A->F:6001": "A->F:6001",
                                              "A->F:6002": "A->F:6002", "F->D:6003": "F->D"}


def _two_flow_run(root: Path, flows: list[dict]) -> Path:
    from plots.testing import basic_flow_events, reverse_flow_events, write_experiment, write_rep
    run = root / "two"
    write_experiment(run, ["aspan"])
    for k in range(2):
        events = sorted(basic_flow_events() + reverse_flow_events(), key=lambda e: e["t"])
        write_rep(run, "aspan", k, events, flows=flows)
    return run


def test_paper_legends_name_a_flow_by_its_pair(tmp_path: Path) -> None:
    flows = [{"sender": "A", "receiver": "D", "segments": 3, "segment_size": 1000},
             {"sender": "D", "receiver": "A", "segments": 2, "segment_size": 1000}]
    run = _two_flow_run(tmp_path, flows)
    plot_command([run], style="paper")
    for name in ("cwnd_cdf", "losses"):
        svg = (run / "figures" / f"{name}.svg").read_text()
        assert "aspan A-&gt;D" in svg and "aspan D-&gt;A" in svg, name
        assert "A-&gt;D:6001" not in svg and "D-&gt;A:6002" not in svg, name
    assert "| aspan A->D:6001 | 2 |" in (run / "report.md").read_text()   # the report's tables keep the port
    plot_command([run])
    assert "aspan A-&gt;D:6001" in (run / "figures" / "cwnd_cdf.svg").read_text()   # the notebook style too


def test_overlay_runs_by_colour_variants_by_line_style() -> None:
    from plots.style import LINE_STYLES, colors, overlay
    looks = overlay(["r1", "r1", "r2", "r2"], ["sack", "aspan", "sack", "aspan"])
    assert [c for c, _ in looks] == [colors(2)[0], colors(2)[0], colors(2)[1], colors(2)[1]]
    assert [ls for _, ls in looks] == [LINE_STYLES[0], LINE_STYLES[1], LINE_STYLES[0], LINE_STYLES[1]]
    one = overlay(["", "", ""], ["a", "b", "c"])        # one run: a colour per line, as it always was
    assert [c for c, _ in one] == colors(3) and [ls for _, ls in one] == ["-", "--", "-."]


def test_an_overlay_of_two_runs_two_variants_two_flows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """2 runs x 2 variants x 2 flows: 8 lines in 2 colours (one per run) and 4 line styles (one per variant
    and flow, the same in both runs)."""
    import matplotlib.colors as mcolors
    import plots.figures as figures
    from plots.data import load_run
    from plots.testing import basic_flow_events, reverse_flow_events, write_experiment, write_rep
    flows = [{"sender": "A", "receiver": "D", "segments": 3, "segment_size": 1000},
             {"sender": "D", "receiver": "A", "segments": 2, "segment_size": 1000}]
    groups = []
    for name in ("one", "two"):
        run = tmp_path / name
        write_experiment(run, ["aspan", "sack"])
        for v in ("aspan", "sack"):
            for k in range(2):
                events = sorted(basic_flow_events(snoop=v == "aspan") + reverse_flow_events(), key=lambda e: e["t"])
                write_rep(run, v, k, events, flows=flows)
        groups += load_run(run, write=False).groups(name)
    assert len(groups) == 8
    drawn = []
    monkeypatch.setattr(figures, "_save", lambda fig, out_dir, name: drawn.append(fig) or [])
    figures.cwnd_cdf(groups, tmp_path)
    lines = {line.get_label(): line for line in drawn[0].axes[0].get_lines()}
    looks = {g.label: (mcolors.to_hex(lines[g.label].get_color()), str(lines[g.label].get_linestyle()))
             for g in groups}
    colour_of_run = {g.run: {looks[h.label][0] for h in groups if h.run == g.run} for g in groups}
    assert all(len(c) == 1 for c in colour_of_run.values()) and len(set.union(*colour_of_run.values())) == 2
    style_of = {(g.variant, g.flow): {looks[h.label][1] for h in groups if (h.variant, h.flow) == (g.variant, g.flow)}
                for g in groups}
    assert all(len(s) == 1 for s in style_of.values()) and len(set.union(*style_of.values())) == 4


def test_paper_legends_go_below_the_figure_and_the_figure_grows_by_their_rows() -> None:
    """plots.style.legend: notebook puts the legend on the axes; paper puts it below the figure, outside the
    data (two columns for short labels, one for long ones), the figure taller by its rows; a second panel's
    legend stays on its panel; no labelled lines, no legend."""
    from plots.style import LEGEND_ROW_IN, figure, legend
    fig, ax = new_figure()
    ax.plot([0, 1], [0, 1], label="sack")
    legend(ax)
    assert ax.get_legend() is not None and not fig.legends
    with using("paper"):
        fig, ax = new_figure()
        h = fig.get_figheight()
        for name in ("reno", "sack", "aspan-0.99"):
            ax.plot([0, 1], [0, 1], label=name)
        legend(ax, fontsize="small")
        assert ax.get_legend() is None and len(fig.legends) == 1
        assert fig.legends[0]._ncols == 2 and fig.get_figheight() == pytest.approx(h + 2 * LEGEND_ROW_IN)
        fig, ax = new_figure()
        h = fig.get_figheight()
        for name in ("papers-tcp: aspan-1.00-once", "linux-like: aspan-1.00-once"):
            ax.plot([0, 1], [0, 1], label=name)
        legend(ax)
        assert fig.legends[0]._ncols == 1 and fig.get_figheight() == pytest.approx(h + 2 * LEGEND_ROW_IN)
        fig = figure(6.4, 4.2)
        a, b = fig.subplots(1, 2)
        a.plot([0, 1], [0, 1], label="left")
        b.plot([0, 1], [0, 1], label="right")
        legend(a)
        legend(b)
        assert len(fig.legends) == 1 and a.get_legend() is None and b.get_legend() is not None
        fig, ax = new_figure()
        ax.plot([0, 1], [0, 1])
        legend(ax)
        assert not fig.legends and ax.get_legend() is None
