"""Mahimahi mm-link traces (issue 25, item 4): a link of a trace exported as delivery opportunities, and a
Mahimahi trace imported as the link's rate (``link: {mahimahi: FILE}``) on sim, local (tests/routing/overlay/test_udp_link.py)
and netns, refused on pi.  The queue's rule in virtual time; a sim run's goodput under a trace whose rate changes; a netns
run (root) whose kernel TCP goodput tracks the trace's rate.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any
import pandas as pd
import pytest
import yaml
from experiments.cli import main
from experiments.runner import check_backend_support
from experiments.schema import ExperimentError, load_experiment
from experiments.trace import COLUMNS, write
import tracefiles
from routing.links import mahimahi
from routing.links.mahimahi import PACKET_SIZE, OpportunityQueue, Schedule
from tests.cores import FakePacket
import re
from tracefiles import MahimahiError


#: the rate at which a trace with one opportunity every millisecond carries its bytes
ONE_PER_MS_MBPS = PACKET_SIZE * 8 / 1000


def rows(link: str, deliveries: list[float | None]) -> list[dict[str, Any]]:
    """A trace of ``link``: one interval a second from t_s -2 (settling), None: a gap (nothing sent)."""
    out = []
    for i, d in enumerate(deliveries):
        out.append({"variant": "v", "repetition": 0, "link": link, "t_s": float(i - 2), "dt_s": 1.0,
                    "sent": 0 if d is None else 100, "heard": 0 if d is None else round(100 * d),
                    "delivery": math.nan if d is None else d, "etx": 1.0})
    return out


def test_export_writes_one_opportunity_per_1504_bytes_the_link_delivered(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """At the nominal rate 12.032 Mbit/s a fully delivering link gets one opportunity a millisecond; the
    recorded delivery scales that, a gap holds the last measured delivery, settling is not exported."""
    tr = tmp_path / "tr.csv"
    write(pd.DataFrame(rows("A>B", [0.0, 0.0, 1.0, 1.0, 0.5, None, 0.25]) + rows("B>A", [1.0] * 7), columns=COLUMNS), tr)
    out = tmp_path / "ab.mm"
    assert main(["trace", "export-mahimahi", str(tr), "--link", "A>B", "--rate-mbps", str(ONE_PER_MS_MBPS),
                 "-o", str(out)]) == 0
    assert "3250 delivery opportunities" in capsys.readouterr().out
    ms = tracefiles.read_mahimahi(out)
    per_s = [sum(1 for t in ms if s * 1000 <= t < (s + 1) * 1000) for s in range(5)]
    assert per_s == [1000, 1000, 500, 500, 250]
    assert ms == sorted(ms) and ms[0] == 0 and ms[-1] == 4999
    gaps = {b - a for a, b in zip(ms[1000:2000], ms[1001:2000])}
    assert gaps == {1}                                                   # spread evenly, not in bursts
    assert {b - a for a, b in zip(ms[2000:3000], ms[2001:3000])} == {2}
    # a link, run or source that is not there is named, exit 2
    assert main(["trace", "export-mahimahi", str(tr), "--link", "A>C", "-o", str(out)]) == 2
    assert "no link 'A>C'" in capsys.readouterr().err
    assert main(["trace", "export-mahimahi", str(tr), "--link", "A>B", "--run", "x/rep0", "-o", str(out)]) == 2
    assert main(["trace", "export-mahimahi", str(tmp_path / "none.csv"), "--link", "A>B", "-o", str(out)]) == 2


def test_parse_names_the_line_that_is_not_a_trace(tmp_path: Path) -> None:
    p = tmp_path / "bad.mm"
    for text, why in [("1\n2\nx\n", r"bad.mm:3: expected a whole number"), ("5\n3\n", r"bad.mm:2: 3 ms is before"),
                      ("", "at least one opportunity after 0 ms"), ("0\n0\n", "at least one opportunity after 0 ms")]:
        p.write_text(text)
        with pytest.raises(tracefiles.MahimahiError, match=why):
            tracefiles.read_mahimahi(p)


def test_an_opportunity_carries_1504_bytes_of_the_queue_and_an_idle_one_is_wasted() -> None:
    q = OpportunityQueue(Schedule([10, 20, 20, 30]), origin=100.0, delay_s=0.005, queue_packets=3)
    assert q.admit(100.0, 752) == pytest.approx(100.015)          # the first opportunity: 10 ms after the origin
    assert q.admit(100.001, 752) == pytest.approx(100.015)        # the rest of the same opportunity
    assert q.admit(100.002, 2000) == pytest.approx(100.025)       # 1504 at 20 ms, 496 in the second one at 20 ms
    assert q.admit(100.003, 100) is None and q.dropped == 1       # three queued: drop-tail
    assert q.admit(100.019, 1008) == pytest.approx(100.025)       # the rest of that second 20 ms opportunity
    assert q.admit(100.022, 100) == pytest.approx(100.035)        # 30 ms
    assert q.admit(100.031, 100) == pytest.approx(100.045)        # idle at 31 ms: the period is 30 ms, 40 ms is 10 ms
    assert q.admit(100.050, 100) == pytest.approx(100.055)        # idle: 40 ms's leftover is gone; 50 ms is 20 ms
    early = OpportunityQueue(Schedule([10, 20, 20, 30]), origin=100.0, delay_s=0.0, queue_packets=3)
    assert early.admit(99.975, 100) == pytest.approx(99.98)       # before the origin the trace loops too (-20 ms)


def test_a_saturated_queue_carries_the_traces_rate_second_by_second() -> None:
    """Virtual time: 1500-byte packets offered at 20 Mbit/s into a trace of 12 Mbit/s for a second, then
    3 Mbit/s: what leaves each second is the trace's opportunities x 1504 bytes, within one packet."""
    ms = list(range(1000)) + [1000 + 4 * i for i in range(250)]
    q = OpportunityQueue(Schedule(ms + [2000]), origin=0.0, delay_s=0.0, queue_packets=10_000)
    out = [q.admit(i * 0.0006, 1500) for i in range(int(2 / 0.0006))]
    done = [t for t in out if t is not None]
    for s, opp in ((0, 1000), (1, 251)):
        got = sum(1500 for t in done if s <= t < s + 1)
        assert abs(got - opp * PACKET_SIZE) <= 1500, (s, got, opp * PACKET_SIZE)


def test_the_shaper_holds_each_verdict_until_its_opportunity() -> None:
    from routing.drivers.link_shaper import LinkShaper
    t = [0.0]
    q = OpportunityQueue(Schedule([5, 10]), origin=0.0, delay_s=0.001, queue_packets=5)
    sh = LinkShaper.without_queue({3: ("A->B", q)}, lambda *a, **f: None, 100, lambda: t[0])
    pkts = [FakePacket(3, 1500), FakePacket(3, 1500)]
    for p in pkts:
        sh._on_packet(p)
    assert sh.next_due() == pytest.approx(0.006)
    sh.release(0.0065)
    assert [p.verdict for p in pkts] == ["accept", None]
    sh.release(0.0111)
    assert [p.verdict for p in pkts] == ["accept", "accept"] and sh.stats["released"] == 2


def exp_doc(backend: str, link: dict[str, Any], **over: Any) -> dict[str, Any]:
    d = {"name": "mm", "backend": backend, "seed": 1, "repetitions": 1,
         "topology": {"nodes": ["A", "B", "C", "D"], "links": [["A", "B"], ["A", "C"], ["B", "D"], ["C", "D"]]},
         "link": link, "etx": {"settle_s": 2.0}, "limits": {"max_duration_s": 120},
         "flows": [{"sender": "A", "receiver": "D", "segments": 3000, "segment_size": 1000}],
         "variants": [{"name": "v"}]}
    d.update(over)
    return d


def steady_trace(path: Path, mbps: float, seconds: int = 60) -> None:
    tracefiles.write_mahimahi(path, mahimahi.opportunities(lambda t: 1.0, seconds, mbps))


def test_the_schema_reads_the_trace_and_pi_refuses_it(tmp_path: Path) -> None:
    steady_trace(tmp_path / "l.mm", 2.0)
    exp = load_experiment(exp_doc("sim", {"mahimahi": "l.mm"}), str(tmp_path / "t.yaml"))
    assert exp.variants[0].config["link"]["mahimahi"] == str((tmp_path / "l.mm").resolve())
    check_backend_support(exp, "sim")
    check_backend_support(exp, "netns")
    check_backend_support(exp, "local")
    with pytest.raises(ExperimentError, match=r"link\.mahimahi: cannot run on backend pi"):
        check_backend_support(exp, "pi")
    (tmp_path / "bad.mm").write_text("1\nx\n")
    with pytest.raises(ExperimentError, match=r"link\.mahimahi: .*bad\.mm:2: expected a whole number"):
        load_experiment(exp_doc("sim", {"mahimahi": "bad.mm"}), str(tmp_path / "t.yaml"))
    with pytest.raises(ExperimentError, match=r"link\.rate_mbps: a Mahimahi trace is the link's rate"):
        load_experiment(exp_doc("sim", {"mahimahi": "l.mm", "rate_mbps": 5}), str(tmp_path / "t.yaml"))
    p = tmp_path / "t.yaml"
    p.write_text(yaml.safe_dump(exp_doc("local", {"mahimahi": "l.mm"})))
    assert main(["validate", str(p)]) == 0
    assert main(["validate", str(p), "--backend", "pi"]) == 2


# ====================================================================================================
# Rules of Mahimahi's mm-link traces (routing/links/mahimahi.py, issue 25 item 4) one by one (issue 30, item 4):
# what a trace file may hold (ASCII whole milliseconds, not decreasing, a last line after 0 ms, a bounded
# number of lines), the export's rate arithmetic, and the opportunity queue: an opportunity carries 1504 bytes
# of the queue's head, a busy queue goes on where its last packet ended, an idle one starts at the first
# opportunity from now, drop-tail and its counters.


def f(tmp: Path, content: bytes | str, name: str = "t.mm") -> Path:
    p = tmp / name
    p.write_bytes(content.encode() if isinstance(content, str) else content)
    return p


# ---- the file -------------------------------------------------------------------------------------------
def test_a_trace_is_whole_milliseconds_one_a_line_blank_lines_skipped(tmp_path):
    assert tracefiles.read_mahimahi(f(tmp_path, "0\n\n0\n3\n")) == [0, 0, 3]   # a repeated millisecond; a blank line
    assert tracefiles.read_mahimahi(f(tmp_path, "1\n")) == [1]
    with pytest.raises(MahimahiError, match=re.escape(f"{tmp_path / 'no.mm'}: no such Mahimahi trace file")):
        tracefiles.read_mahimahi(tmp_path / "no.mm")


def test_a_line_that_is_not_ascii_digits_is_named_with_its_first_40_characters(tmp_path):
    junk = "x" * 50
    with pytest.raises(MahimahiError, match=re.escape(f"{tmp_path / 't.mm'}:2: expected a whole number of "
                                                      f"milliseconds, got {junk[:40]!r}")):
        tracefiles.read_mahimahi(f(tmp_path, f"1\n{junk}\n"))
    # a digit of another script is no millisecond of this format (the file is ASCII) ...
    with pytest.raises(MahimahiError, match=r":1: expected a whole number"):
        tracefiles.read_mahimahi(f(tmp_path, "\u0661\u0662\n".encode("utf-8")))
    # ... and bytes that are no text at all are named the same way, not a decoding error
    with pytest.raises(MahimahiError, match=r":2: expected a whole number"):
        tracefiles.read_mahimahi(f(tmp_path, b"1\n\xff\n"))


def test_lines_may_not_decrease_and_the_last_is_the_period_after_0_ms(tmp_path):
    with pytest.raises(MahimahiError, match=re.escape(":3: 2 ms is before the line above (5 ms)")):
        tracefiles.read_mahimahi(f(tmp_path, "1\n5\n2\n"))
    for content in ("0\n", "0\n0\n", "\n"):
        with pytest.raises(MahimahiError, match=re.escape("a trace needs at least one opportunity after 0 ms "
                                                          "(its last line is its period)")):
            tracefiles.read_mahimahi(f(tmp_path, content))


def test_the_number_of_lines_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(tracefiles, "MAX_LINES", 3)
    assert tracefiles.read_mahimahi(f(tmp_path, "1\n2\n3\n\n")) == [1, 2, 3]
    with pytest.raises(MahimahiError, match=re.escape(f"{tmp_path / 't.mm'}: more than 3 opportunities")):
        tracefiles.read_mahimahi(f(tmp_path, "1\n2\n3\n4\n"))


def test_write_returns_the_lines_written_and_parse_reads_them_back(tmp_path):
    assert tracefiles.write_mahimahi(tmp_path / "w.mm", [0, 2, 2, 7]) == 4
    assert (tmp_path / "w.mm").read_text() == "0\n2\n2\n7\n"
    assert tracefiles.read_mahimahi(tmp_path / "w.mm") == [0, 2, 2, 7]
    s = Schedule.read(tmp_path / "w.mm")
    assert s.times == [0.0, 0.002, 0.002, 0.007] and s.period == 0.007


# ---- the export -----------------------------------------------------------------------------------------
ONE_PER_MS = PACKET_SIZE * 8 * 1000 / 1e6      # 12.032 Mbit/s: one opportunity a millisecond at delivery 1


def test_the_export_gives_rate_times_delivery_in_1504_byte_opportunities():
    assert mahimahi.opportunities(lambda t: 1.0, 0.005, ONE_PER_MS) == [0, 1, 2, 3, 4]
    assert mahimahi.opportunities(lambda t: 0.5, 0.006, ONE_PER_MS) == [1, 3, 5]
    # just under one opportunity in the first millisecond: none yet (the rate is taken exactly: 1e6 bit/Mbit)
    assert mahimahi.opportunities(lambda t: 1.0, 0.001, ONE_PER_MS * (1 - 5e-7)) == []
    assert mahimahi.opportunities(lambda t: 1.0, 0.5, 0.5)          # under 1 Mbit/s and 1 s: allowed


@pytest.mark.parametrize("rate, end", [(0.0, 1.0), (-1.0, 1.0), (1.0, 0.0), (0.0, 0.0)])
def test_the_export_refuses_a_rate_or_an_end_that_is_not_positive(rate, end):
    with pytest.raises(ValueError, match=re.escape(f"expected rate_mbps > 0 and a trace ending after 0 s, "
                                                   f"got {rate}, {end}")):
        mahimahi.opportunities(lambda t: 1.0, end, rate)


def test_a_schedule_needs_a_last_opportunity_after_0_ms():
    assert Schedule([0, 0, 3]).period == 0.003 and Schedule([0, 1]).period == 0.001
    for ms in ([], [0], [0, 0]):
        with pytest.raises(ValueError, match="^" + re.escape("an opportunity schedule needs a last opportunity "
                                                             "after 0 ms") + "$"):
            Schedule(ms)


# ---- the queue ------------------------------------------------------------------------------------------
def every_ms(n: int = 100) -> Schedule:
    """An opportunity every millisecond, 1 to n ms (period n ms)."""
    return Schedule(list(range(1, n + 1)))


def test_an_idle_queue_starts_at_the_first_opportunity_from_now_and_a_busy_one_where_it_ended():
    q = OpportunityQueue(every_ms(), origin=0.0, delay_s=0.0, queue_packets=50)
    assert q.admit(0.0, PACKET_SIZE) == pytest.approx(0.001)      # a whole opportunity
    assert q.admit(0.0005, PACKET_SIZE) == pytest.approx(0.002)   # busy: not the used one at 1 ms again
    # the next packet would start in the 3 ms opportunity; at 3.5 ms that has passed unused: idle, from now
    assert q.admit(0.0035, 100) == pytest.approx(0.004)


def test_bytes_left_in_an_opportunity_carry_the_next_packet():
    q = OpportunityQueue(every_ms(), origin=0.0, delay_s=0.0, queue_packets=50)
    assert q.admit(0.0, PACKET_SIZE - 1) == pytest.approx(0.001)
    assert q.admit(0.0, 1) == pytest.approx(0.001)                # the byte left in the same opportunity
    assert q.admit(0.0, 1) == pytest.approx(0.002)                # that one is used up: the next
    r = OpportunityQueue(every_ms(), origin=0.0, delay_s=0.0, queue_packets=50)
    assert r.admit(0.0, 1000) == pytest.approx(0.001)             # 504 bytes left in the 1 ms opportunity
    # at exactly 1 ms the queue is still busy with that opportunity: 504 bytes there, 496 in the next
    assert r.admit(0.001, 1000) == pytest.approx(0.002)


def test_drop_tail_and_the_counters():
    q = OpportunityQueue(every_ms(), origin=0.0, delay_s=0.010, queue_packets=2)
    assert q.admit(0.0, PACKET_SIZE) == pytest.approx(0.011)      # the delay after its opportunity
    assert q.admit(0.0, PACKET_SIZE) == pytest.approx(0.012)
    assert q.admit(0.0, PACKET_SIZE) is None and q.admit(0.0, 10) is None
    assert (q.admitted, q.dropped) == (2, 2)
    assert q.admit(0.0015, 10) == pytest.approx(0.013)            # the first has left at 1 ms
    assert (q.admitted, q.dropped) == (3, 2)


def test_the_schedule_loops_from_its_origin():
    q = OpportunityQueue(Schedule([5, 10]), origin=100.0, delay_s=0.0, queue_packets=50)
    assert q.admit(100.0, 10) == pytest.approx(100.005)
    assert q.admit(100.011, 10) == pytest.approx(100.015)         # the next cycle (period 10 ms)
    before = OpportunityQueue(Schedule([5, 10]), origin=100.0, delay_s=0.0, queue_packets=50)
    assert before.admit(99.999, 10) == pytest.approx(100.0)       # before the origin: the cycle before's end
