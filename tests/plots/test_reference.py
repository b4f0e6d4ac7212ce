"""plots.reference: each figure's paper question, and reference numbers beside the run's (issue 28, item 2)."""
from __future__ import annotations

from tests import ROOT
import re
import pandas as pd
from plots.figures import FIGURES
from plots.numbers import plain
from plots.reference import CLAIMS, PAPER_FIGURES, REFERENCES, claim_ratio, figure_caption, figure_title, reference_section




def test_every_paper_figure_is_a_drawn_figure_and_its_title_names_it() -> None:
    assert set(PAPER_FIGURES) <= set(FIGURES)
    for key, (figs, question) in PAPER_FIGURES.items():
        title = figure_title(key, "Plain title")
        first, rest = title.split("\n", 1)
        assert first == "Plain title" and rest.replace("\n", " ") == f"Paper {figs}: {question}"
        assert re.search(r"Figs?\. \d+", rest)
        assert all(len(line) <= 58 for line in rest.split("\n"))     # fits the narrowest figure
    assert figure_title("snoop_hits", "Hits") == "Hits"                 # no paper figure: unchanged


def test_a_caption_carries_the_question_whole() -> None:
    """The report's heading of a figure: the caption, then the paper's figure and its question on one line,
    never joined at the places where the figure's title wraps."""
    for key, (figs, question) in PAPER_FIGURES.items():
        assert figure_caption(key, "Plain caption") == f"Plain caption. Paper {figs}: {question}"
    assert figure_caption("snoop_hits", "Hits") == "Hits"


def test_report_headings_join_the_question_right(tmp_path) -> None:
    from plots.cli import plot_command
    from tests.plots.test_figures import make_run
    run = make_run(tmp_path)
    plot_command([run])
    headings = [line for line in (run / "report.md").read_text().splitlines() if line.startswith("### ")]
    losses = next(h for h in headings if "losses the TCP sender" in h)
    assert losses.endswith("Paper Figs. 2a, 4a, 5a, 7a: does snooping lower the losses the TCP sender sees?")
    for figs, question in PAPER_FIGURES.values():
        for h in headings:
            if f"Paper {figs}:" in h:
                assert h.endswith(question), h
    assert not any(re.search(r"[a-z]\. [a-z]", h) for h in headings), headings   # no ". " inside a sentence


def test_every_reference_number_is_in_reproduction_md() -> None:
    """A reference number is one docs/REPRODUCTION.md states (the numbers are copied, not invented)."""
    text = (ROOT / "docs" / "REPRODUCTION.md").read_text()
    for ref in REFERENCES:
        assert ref.source.startswith("docs/REPRODUCTION.md")
        shown = f"{ref.value:,.0f}" if ref.value >= 100 else f"{ref.value:g}"
        assert shown in text, (ref, shown)
    for c in CLAIMS:
        assert c.paper.split("x")[0] in text, c


def summary(rows: dict[str, tuple[float, float]]) -> pd.DataFrame:
    """A summary with two repetitions per variant: (losses, cwnd_median) each."""
    out = []
    for variant, (losses, cwnd) in rows.items():
        for k, d in enumerate((-1.0, 1.0)):
            out.append({"variant": variant, "flow": "A->D:6000", "repetition": k, "status": "ok",
                        "losses_dupack": losses + d, "losses_rto": 0, "cwnd_median": cwnd + d / 10,
                        "goodput_mbps": 4.0, "tx_per_pkt_p99": 5.0, "cwnd_mean": cwnd})
    return pd.DataFrame(out)


def test_the_section_puts_this_runs_numbers_beside_the_references() -> None:
    frame = summary({"sack": (200.0, 11.0), "aspan-1.00": (100.0, 22.0), "reno": (250.0, 11.0)})
    lines = reference_section("paper-lossy", frame, plain)
    text = "\n".join(lines)
    assert lines[0] == "## This run against the references"
    # the paper's claims as ratios: this run's 200/100 = 2x fewer losses, 22/11 = 2x the cwnd
    assert "| Fig. 5a | sack / aspan-1.00, losses (3 dupacks + RTO) | 3-4x fewer | 1.60x | 2x |" in text
    assert "| Fig. 5b | aspan-1.00 / sack, cwnd median (segments) | 2.5x | 1.50x | 2x |" in text
    # our reference beside this run's mean, with its source
    assert "| sack | losses (3 dupacks + RTO) | 214 | 200 | docs/REPRODUCTION.md, Main comparison" in text
    assert "| reno | cwnd median (segments) | 11.5 | 11 |" in text
    assert "aspan-0.99" not in text            # a variant the run does not have is left out


def test_no_references_for_another_experiment_or_a_failed_variant() -> None:
    frame = summary({"sack": (200.0, 11.0), "aspan-1.00": (100.0, 22.0)})
    assert reference_section("my-own-file", frame, plain) == []
    frame.loc[frame["variant"] == "aspan-1.00", "status"] = "failed"
    claim = next(c for c in CLAIMS if "paper-lossy" in c.experiments)
    assert claim_ratio(frame, claim) is None
    assert "Fig. 5a" not in "\n".join(reference_section("paper-lossy", frame, plain))
