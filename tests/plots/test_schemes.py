"""Scheme-comparison figures and report table (plots/schemes.py) on hand-written run directories."""
from pathlib import Path
import pytest
from plots.data import load_run
from plots.schemes import by_scenario, scheme_label, scheme_table
from plots.summary import summarize_rep
from plots.logs import load_rep
from plots.testing import basic_flow_events, ev, write_experiment, write_rep


def make_run(tmp: Path, scenarios: bool = True) -> Path:
    run = tmp / "run"
    names = ["lossy-reno", "lossy-classic", "bursty-reno", "bursty-snack"]
    write_experiment(run, names)
    for name in names:
        scenario = name.split("-")[0] if scenarios else ""
        for k in range(2):
            events = basic_flow_events(losses=1 + k, t_end=3.0 + k)
            if name.endswith("classic"):
                events.append(ev(1.6, "C", "premature", flow="f", seq=1000, after=0.001, min_rtt=0.01))
            write_rep(run, name, k, events, scenario=scenario)
    return run


def test_premature_column_counts_events(tmp_path):
    run = make_run(tmp_path)
    row = summarize_rep(load_rep(run / "lossy-classic" / "rep0"))
    assert row["premature_retransmissions"] == 1
    assert summarize_rep(load_rep(run / "lossy-reno" / "rep0"))["premature_retransmissions"] == 0


def test_cwnd_mean_is_time_weighted_to_the_flow_end(tmp_path):
    run = make_run(tmp_path)
    row = summarize_rep(load_rep(run / "lossy-reno" / "rep0"))
    # cwnd 2, 3, 4 for 0.1 s each from t = 1.0, then 5 until A's flow_end at 2.9
    assert row["cwnd_mean"] == pytest.approx((0.2 + 0.3 + 0.4 + 5 * 1.6) / 1.9)


def test_groups_by_scenario_and_labels(tmp_path):
    data = load_run(make_run(tmp_path))
    scen = by_scenario(data.groups())
    assert list(scen) == ["lossy", "bursty"]
    assert [scheme_label(g, "lossy") for g in scen["lossy"]] == ["reno", "classic"]
    table = scheme_table(data.groups())
    classic = next(r for r in table if r["scheme"] == "classic")
    assert classic["scenario"] == "lossy" and classic["reps"] == 2
    assert classic["premature_mean"] == 1.0 and classic["losses_mean"] == pytest.approx(2.5)


def test_figures_and_report_table_only_with_scenarios(tmp_path):
    from plots.figures import _save
    from plots.report import write_report
    from plots.schemes import SCHEME_METRICS, scheme_figure
    run = make_run(tmp_path / "a")
    data = load_run(run)
    for metric in SCHEME_METRICS:
        paths = scheme_figure(data.groups(), run / "figures", metric, _save)
        assert [p.name for p in paths] == [f"schemes_{metric}.png", f"schemes_{metric}.svg"]
    report = write_report(run, data, figures={}).read_text()
    assert "## Schemes per scenario" in report and "| lossy | classic | 2 |" in report
    plain = make_run(tmp_path / "b", scenarios=False)
    pdata = load_run(plain)
    assert scheme_figure(pdata.groups(), plain / "figures", "goodput", _save) == []
    assert "Schemes per scenario" not in write_report(plain, pdata, figures={}).read_text()


def test_the_figures_registry_draws_the_scheme_figures(tmp_path):
    from plots.figures import FIGURES
    run = make_run(tmp_path)
    draw, caption = FIGURES["schemes_goodput"]
    assert [p.name for p in draw(load_run(run).groups(), tmp_path / "out")] == \
        ["schemes_goodput.png", "schemes_goodput.svg"]
    assert "goodput" in caption
