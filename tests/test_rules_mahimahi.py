"""Rules of Mahimahi's mm-link traces (routing/links/mahimahi.py, issue 25 item 4) one by one (issue 30, item 4):
what a trace file may hold (ASCII whole milliseconds, not decreasing, a last line after 0 ms, a bounded
number of lines), the export's rate arithmetic, and the opportunity queue: an opportunity carries 1504 bytes
of the queue's head, a busy queue goes on where its last packet ended, an idle one starts at the first
opportunity from now, drop-tail and its counters."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import tracefiles
from routing.links import mahimahi
from routing.links.mahimahi import PACKET_SIZE, OpportunityQueue, Schedule
from tracefiles import MahimahiError


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
