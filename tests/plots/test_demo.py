"""make demo (issue 28, item 1): a mesh, not the CPU; its last lines say what to open and what the numbers mean."""
from __future__ import annotations

from tests import ROOT
import re
from pathlib import Path
import pandas as pd
import pytest
from experiments.schema import load_file
from plots.demo import demo_lines, latest_run, main




def make_target(name: str) -> list[str]:
    text = (ROOT / "Makefile").read_text()
    m = re.search(rf"^{re.escape(name)}:.*\n((?:\t.*\n)+)", text, re.M)
    assert m, f"no make target {name}"
    return [line.strip() for line in m.group(1).splitlines()]


def make_var(name: str) -> str:
    m = re.search(rf"^{name} \?= ?(.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert m, name
    return m.group(1).strip()


def test_make_demo_runs_the_papers_comparison_on_a_mesh() -> None:
    exp = load_file(ROOT / make_var("DEMO_EXPERIMENT"))
    assert make_var("DEMO_ARGS") == ""
    assert make_var("DEMO_RUNS") == f"runs/{exp.name}"
    for v in exp.variants:
        # numbers that mean a mesh: virtual time on the shared 802.11 medium
        assert v.config["backend"] == "sim" and v.config["medium"]["model"] == "dcf"
    assert [v.name for v in exp.variants] == ["reno", "sack", "aspan-0.99", "aspan-1.00"]
    assert make_target("demo")[-1] == "$(PY) -m plots.demo $(DEMO_RUNS)"
    # the loopback run without a medium stays available by name
    assert make_target("demo-loopback") == ["$(VENV)/bin/aspan run $(LOOPBACK_EXPERIMENT) $(LOOPBACK_ARGS)"]
    loop = load_file(ROOT / make_var("LOOPBACK_EXPERIMENT"))
    assert loop.name == "paper-lossy" and make_var("LOOPBACK_ARGS") == "--backend local --repetitions 2"


def fake_run(root: Path, name: str = "demo-mesh") -> Path:
    run = root / "20261126-120000"
    run.mkdir(parents=True)
    (run / "experiment.yaml").write_text(f"name: {name}\n")
    rows = []
    for variant, losses, cwnd in (("reno", 60, 11.0), ("sack", 50, 12.0), ("aspan-1.00", 25, 18.0)):
        for k in (0, 1):
            rows.append({"variant": variant, "flow": "A->D:6000", "repetition": k, "seed": k + 1,
                         "status": "ok", "goodput_mbps": 5.0, "losses_dupack": losses, "losses_rto": 0,
                         "cwnd_median": cwnd, "tx_per_pkt_p99": 4.0})
    pd.DataFrame(rows).to_csv(run / "summary.csv", index=False)
    return run


def test_the_last_lines_say_what_to_open_and_what_the_numbers_mean(tmp_path: Path) -> None:
    run = fake_run(tmp_path / "runs")
    assert latest_run(tmp_path / "runs") == run and latest_run(run) == run
    lines = demo_lines(run)
    text = "\n".join(lines)
    assert re.search(r"^  sack\s+5\s+50\s+12\s+4$", text, re.M)
    # the paper's claims with this run's ratios: 50 / 25 = 2x fewer losses, 18 / 12 = 1.5x the cwnd
    assert "Fig. 5a sack / aspan-1.00 losses (3 dupacks + RTO): paper 3-4x fewer" in text and "this run 2x" in text
    assert "Fig. 5b aspan-1.00 / sack cwnd median (segments): paper 2.5x" in text and "this run 1.50x" in text
    assert "the mesh's numbers, not this machine's CPU" in text
    assert str(run / "report.html") in lines[-2] and str(run / "figures") in lines[-1]
    # it claims only what the run has: the paper's references (demo-mesh has claims), no radio medium here
    assert "these numbers beside the references" in lines[-2] and "radio medium" not in text
    other = demo_lines(fake_run(tmp_path / "other", name="my-file"))
    assert "references" not in other[-2] and "radio medium" not in "\n".join(other)


def test_no_run_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path)]) == 1
    assert "no run with a summary.csv" in capsys.readouterr().err
    run = fake_run(tmp_path / "runs", name="my-file")
    assert main([str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "paper's claims" not in out and "not this machine's CPU" not in out   # not the demo's experiment


def _goodput_run(root: Path, aspan_goodput: float, name: str = "demo-mesh") -> Path:
    run = root / "20261126-130000"
    run.mkdir(parents=True)
    (run / "experiment.yaml").write_text(f"name: {name}\n")
    rows = []
    for variant, goodput, rtx in (("sack", 5.49, 0), ("aspan-0.99", aspan_goodput + 0.1, 9000),
                                  ("aspan-1.00", aspan_goodput, 20000)):
        for k in (0, 1):
            rows.append({"variant": variant, "flow": "A->D:6000", "repetition": k, "seed": k + 1, "status": "ok",
                         "segments": 4000, "goodput_mbps": goodput, "losses_dupack": 10, "losses_rto": 0,
                         "cwnd_median": 12.0, "tx_per_pkt_p99": 4.0, "local_retransmissions": rtx + k})
    pd.DataFrame(rows).to_csv(run / "summary.csv", index=False)
    return run


def test_the_demo_says_why_aspan_costs_goodput(tmp_path: Path) -> None:
    text = "\n".join(demo_lines(_goodput_run(tmp_path / "costs", 2.52)))
    why = [line for line in text.splitlines() if line.startswith("Why A-SPAN's goodput is lower")]
    assert len(why) == 1
    assert "paper's dupack rule" in why[0] and "every dupack" in why[0]
    assert "20000 local retransmissions for 4000 segments in aspan-1.00" in why[0]     # this run's numbers
    # what the line says the docs measure is there
    doc = (ROOT / "docs" / "REPRODUCTION.md").read_text()
    assert "The paper's dupack rule feeds on itself" in doc
    assert "holds 37 % of the air" in doc and "interface-queue drops are at C" in doc
    # no cost in the run, or another experiment: no explanation
    assert "Why A-SPAN" not in "\n".join(demo_lines(_goodput_run(tmp_path / "ahead", 6.0)))
    assert "Why A-SPAN" not in "\n".join(demo_lines(_goodput_run(tmp_path / "other", 2.52, name="my-file")))
    assert "Why A-SPAN" not in "\n".join(demo_lines(fake_run(tmp_path / "old")))     # no local_retransmissions column
