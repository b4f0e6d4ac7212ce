"""The replays of what the data met (routing/links/trace_replay.py), in virtual time: ``fates`` plays the
recorded sequence, ``markov`` a process fitted to its bursts, and no replay runs past its recording silently."""
from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import pytest

from experiments.trace import FATE_COLUMNS, write
from routing.links.loss import build_loss_model
from routing.links.trace_loss import TraceLoss
from routing.links.trace_replay import (GMIN, FateReplay, MarkovReplay, TraceEnded, fates_of, fit_window)

PROBES_LOSSLESS = [(float(t), 1.0, 1.0) for t in range(0, 10)]          # 0-10 s, every probe heard
PROBES_LOSSY = [(float(t), 0.0, 1.0) for t in range(0, 10)]             # 0-10 s, every probe lost


def test_fates_replay_the_recorded_sequence_packet_for_packet() -> None:
    times = [1.0 + 0.001 * i for i in range(100)]
    heard = [i % 7 != 3 for i in range(100)]
    m = FateReplay(PROBES_LOSSY, times, heard, at=0.0, offset_s=0.0, loop=False, past_end="stop", gap_s=0.05,
                   rng=random.Random(1))
    assert [m.drop(t) for t in times] == [not h for h in heard]


def test_fates_skip_what_is_older_than_gap_and_fall_back_to_the_probes() -> None:
    times, heard = [1.0, 1.001, 1.002], [False, True, False]
    m = FateReplay(PROBES_LOSSLESS, times, heard, 0.0, 0.0, False, "stop", 0.05, random.Random(1))
    assert m.drop(0.5) is False            # no fate within 0.05 s: the probes (lossless)
    assert m.drop(1.0015) is True          # the first fate within gap_s not played yet: lost at 1.0
    assert m.drop(1.0016) is False         # then 1.001 (heard)
    assert m.drop(1.03) is True            # then 1.002 (lost), 28 ms later
    assert m.drop(1.031) is False          # all played: the probes again
    lossy = FateReplay(PROBES_LOSSY, times, heard, 0.0, 0.0, False, "stop", 0.05, random.Random(1))
    assert lossy.drop(1.2) is True         # 1.002 is 0.198 s old: skipped, the probes (all lost) decide


def test_a_replay_past_its_recording_stops_holds_or_loops() -> None:
    times, heard = [9.5], [False]
    stop = FateReplay(PROBES_LOSSLESS, times, heard, 0.0, 0.0, False, "stop", 0.05, random.Random(1))
    assert stop.drop(9.99) is False
    with pytest.raises(TraceEnded, match=r"trace time 10.000 s, past the recording's end at 10.000 s"):
        stop.drop(10.0)
    hold = FateReplay(PROBES_LOSSY, times, heard, 0.0, 0.0, False, "hold", 0.05, random.Random(1))
    assert hold.drop(50.0) is True         # the last probe interval (all lost), held: asked for
    loop = FateReplay(PROBES_LOSSLESS, times, heard, 0.0, 0.0, True, "stop", 0.05, random.Random(1))
    assert loop.drop(9.5) is True and loop.drop(9.6) is False
    assert loop.drop(19.5) is True         # second time round: the fate plays again
    m = MarkovReplay(PROBES_LOSSLESS, times, heard, 0.0, 0.0, False, "stop", 5.0, random.Random(1))
    with pytest.raises(TraceEnded):
        m.drop(12.0)


def ge_fates(seconds: float, pps: float, seed: int = 3) -> tuple[list[float], list[bool]]:
    """A Gilbert-Elliott link (good 1.0 s, bad 0.1 s, 0.2 % / 30 % loss) sampled by packets at ``pps``."""
    rng = random.Random(seed)
    times, heard, t, good, switch = [], [], 0.0, True, rng.expovariate(1.0)
    while t < seconds:
        while t >= switch:
            good = not good
            switch += rng.expovariate(1.0 if good else 10.0)
        times.append(t)
        heard.append(rng.random() >= (0.002 if good else 0.3))
        t += 1.0 / pps
    return times, heard


def test_the_fit_finds_the_bursts_length_in_time() -> None:
    times, heard = ge_fates(200.0, 1000.0)
    f = fit_window(times, heard, 200.0)
    assert f.bad_mean_s == pytest.approx(0.1, rel=0.35)      # burst from first to last loss: a bit shorter
    assert f.good_mean_s == pytest.approx(1.0, rel=0.35)
    assert f.loss_bad == pytest.approx(0.3, abs=0.1)
    assert f.loss_good < 0.01


def test_a_silence_ends_a_burst() -> None:
    """Two losses GMIN - 2 packets apart are one burst at a steady rate, two isolated losses across a silence."""
    times = [0.001 * i for i in range(40)] + [1.0 + 0.001 * i for i in range(40)]
    heard = [True] * 80
    heard[30], heard[30 + GMIN - 2] = False, False           # 14 heard between them, 1 s of silence inside
    assert fit_window(times[:30] + times[40:], heard[:30] + heard[40:], 2.0).bad_mean_s == 0.0
    steady = [0.001 * i for i in range(80)]
    assert fit_window(steady, heard, 2.0).bad_mean_s > 0.0


def test_markov_keeps_the_bursts_in_time_under_another_packet_rate() -> None:
    """Fitted to a recording at 1,000 packets a second, replayed at 250: the loss rate and the share of
    lost packets that follow a loss within 0.02 s stay near the recording's."""
    times, heard = ge_fates(100.0, 1000.0)
    probes = [(float(t), 1.0, 1.0) for t in range(0, 100)]
    m = MarkovReplay(probes, times, heard, 0.0, 0.0, False, "stop", 10.0, random.Random(5))
    replay = [0.004 * i for i in range(int(99.9 / 0.004))]
    lost = [t for t in replay if m.drop(t)]
    rec_lost = [t for t, h in zip(times, heard) if not h]
    assert len(lost) / len(replay) == pytest.approx(len(rec_lost) / len(times), rel=0.35)

    def clustered(ts: list[float]) -> float:
        return sum(1 for a, b in zip(ts, ts[1:]) if b - a < 0.02) / max(len(ts) - 1, 1)
    assert clustered(lost) > 0.3 and clustered(rec_lost) > 0.3
    # an independent loss at that rate and packet rate would rarely cluster
    assert len(lost) / len(replay) * 5 < 0.2


def trace_file(tmp: Path) -> Path:
    rows = [{"variant": "v", "repetition": 0, "link": "A>B", "t_s": float(t), "dt_s": 1.0, "sent": 10, "heard": 10,
             "delivery": 1.0, "source": "probes"} for t in range(0, 5)]
    rows += [{"variant": "v", "repetition": 0, "link": "A>B", "t_s": 1.0 + 0.01 * i, "dt_s": 0.0, "sent": 1,
              "heard": int(i % 2 == 0), "delivery": float(i % 2 == 0), "source": "data", "delay_s": 0.002}
             for i in range(10)]
    p = tmp / "t.csv"
    write(pd.DataFrame(rows, columns=FATE_COLUMNS), p)
    return p


def test_build_selects_the_replay_and_the_default_is_the_probes(tmp_path: Path) -> None:
    p = trace_file(tmp_path)
    prob = build_loss_model({"model": "trace", "file": str(p), "link": "A>B"}, random.Random(1))
    assert isinstance(prob, TraceLoss)                      # today's replay, holding past the end as before
    assert prob.drop(1.0) is False and prob.drop(100.0) is False
    fates = build_loss_model({"model": "trace", "file": str(p), "link": "A>B", "replay": "fates"}, random.Random(1))
    assert [fates.drop(1.0 + 0.01 * i) for i in range(10)] == [i % 2 == 1 for i in range(10)]
    with pytest.raises(TraceEnded):
        fates.drop(5.0)
    assert fates_of([], "A>B", None) == ([], [])
    with pytest.raises(ValueError, match="'replay' must be one of"):
        build_loss_model({"model": "trace", "file": str(p), "link": "A>B", "replay": "mean"}, random.Random(1))
    ending = build_loss_model({"model": "trace", "file": str(p), "link": "A>B", "past_end": "stop"}, random.Random(1))
    with pytest.raises(TraceEnded):
        ending.drop(5.0)
