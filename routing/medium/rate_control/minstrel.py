"""Rate control per link as cores without I/O, in virtual time (issue 24, item 3): fixed, or Minstrel-like.

:class:`Minstrel` follows Linux's mac80211 minstrel_ht as of Linux 5.10 (net/mac80211/rc80211_minstrel_ht.c,
the LTS kernel before the later rework of its sampling into MINSTREL_SAMPLE_TYPE_INC/JUMP/SLOW) run with
its ``new_avg`` debugfs switch off, i.e. with the EWMA minstrel_ht used before its noise filter
(``minstrel_filter_avg_add``) became the default:

* statistics per rate, folded every update interval: 50 ms (``update_interval`` HZ/10, halved in
  ``minstrel_ht_tx_status``); success probability p = EWMA with ``EWMA_LEVEL`` 96/128, i.e.
  p <- p + (1 - 0.75) x (this interval's successes / attempts - p) (``minstrel_ewma``), the first
  measurement taken as is; a rate not tried in an interval keeps its p (``minstrel_calc_rate_stats``);
* throughput estimate per rate (``minstrel_ht_get_tp_avg``): 0 below p = 10 %, else min(p, 90 %) / the
  airtime of one average frame at that rate.  minstrel_ht takes that airtime from its own duration
  table; here it is :func:`routing.medium.rates.access_ns` of a 1200-byte packet (``AVG_PKT_SIZE``), without
  aggregation (A-MPDU length 1);
* max_tp[0], max_tp[1]: the two best estimates (ties: the higher p; ``minstrel_ht_sort_best_tp_rates``);
  max_prob: of the rates above p = 75 %, the best estimate, else the highest p
  (``minstrel_ht_set_best_prob_rate``); before any statistics, the slowest rate;
* tries per stage (``minstrel_calc_retransmit``, ``minstrel_ht_set_rate``): as many as fit in
  ``segment_size`` 6 ms with the contention window doubling from aCWmin (at least 2, at most
  ``max_retry`` 7); 2 when p < 20 % or not yet measured (minstrel_calc_retransmit's 1 below 10 % is
  raised to 2 by minstrel_ht_set_rate);
* sampling (``minstrel_get_sample_rate``): the candidate comes from a table of ``SAMPLE_COLUMNS`` = 10
  random permutations of the rates (``init_sample_table``; seeded here), walked in order; it is not
  sampled when it is max_tp[0] or max_prob, when its p is above 95 %, when its airtime is more than
  3 x max_prob's, when it is no faster than the faster of max_tp[0..1] and was already tried this
  interval; a rate no faster than max_tp[1]'s is sampled only after 20 intervals untried and at most
  3 times an interval (``sample_skipped``, ``sample_slow``).  A sampling frame carries the sample rate
  once, then the normal chain (``rate->count = 1`` with ``IEEE80211_TX_CTL_RATE_CTRL_PROBE``).

Where it follows the older legacy minstrel (net/mac80211/rc80211_minstrel.c, same kernel) instead:

* how often it samples: ``lookaround_rate_mrr`` = 10 % of frames (the counter of
  ``minstrel_get_rate``: a frame samples while 10 % of the frames so far minus the samples is >= 0;
  counters reset at 10,000 frames; a backlog of more than 2 x the rates is forgiven; its
  ``sample_deferred`` bookkeeping for second-stage samples is left out).  minstrel_ht instead waits ``16 + 2 x A-MPDU length``
  frames between samples (about 1 in 19 without aggregation);
* the retry chain max_tp[0], max_tp[1], max_prob, then the lowest rate (minstrel_ht stops at max_prob).

Left out: MCS groups of several streams, bandwidths and the CCK group (the rate set is one list
given by the caller); the "sudden death" stream downgrade (one stream only); the A-MPDU length
average (no aggregation); the initial burst of 16 samples.  Adjacent chain stages at the same rate
are merged, and the chain is cut to the caller's retry limit (the medium's dot11ShortRetryLimit).

Bounded state: per rate, a fixed record; a sample table of 10 x the rates; counters that wrap at
10,000 frames; ``sample_skipped`` saturates.  Nothing grows with the number of frames.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence

from routing.medium.rates import Rate, Timing, access_ns, txtime_ns

__all__ = ["FixedRate", "Minstrel", "Chain", "UPDATE_INTERVAL_NS", "EWMA_LEVEL", "SAMPLING_PERCENT",
           "SAMPLE_COLUMNS", "MAX_RETRY", "SEGMENT_NS", "AVG_PKT_SIZE", "fit_retry_limit"]

Chain = list[tuple[Rate, int]]

MS = 1_000_000
UPDATE_INTERVAL_NS = 50 * MS  # minstrel_ht: mp->update_interval = HZ / 10, checked against update_interval / 2
EWMA_LEVEL = 96 / 128         # EWMA_LEVEL / EWMA_DIV: weight of the old value
SAMPLING_PERCENT = 10         # legacy minstrel's lookaround_rate_mrr
SAMPLE_COLUMNS = 10           # SAMPLE_COLUMNS
MAX_RETRY = 7                 # mp->max_retry's default (hw->max_rate_tries unset)
SEGMENT_NS = 6000 * 1000      # mp->segment_size: 6000 us per retry stage
AVG_PKT_SIZE = 1200           # AVG_PKT_SIZE: the packet the throughput estimate is made for
PROB_TP_MIN = 0.10            # minstrel_ht_get_tp_avg: no throughput below 10 %
PROB_TP_CAP = 0.90            # ... and p capped at 90 %
PROB_GOOD = 0.75              # minstrel_ht_set_best_prob_rate: "more than 75 %"
PROB_NO_SAMPLE = 0.95         # minstrel_get_sample_rate: not sampled above 95 %
PROB_FEW_TRIES = 0.20         # minstrel_ht_set_rate: 2 tries below 20 %
SLOW_FACTOR = 3               # not sampled when 3 x slower than max_prob
SAMPLE_SKIPPED_SLOW = 20      # a slow rate is sampled after 20 intervals untried ...
SAMPLE_SLOW_MAX = 3           # ... at most 3 times an interval (sample_slow++ > 2)
PACKETS_WRAP = 10_000         # legacy minstrel resets its frame counters here
CW_MAX = 1023                 # mp->cw_max


def fit_retry_limit(chain: Chain, retry_limit: int) -> Chain:
    """The chain cut so that its tries add up to at most ``retry_limit`` (stages in order, the last
    one shortened); adjacent stages at one rate merged."""
    if retry_limit < 1:
        raise ValueError(f"retry_limit {retry_limit}: expected at least 1")
    out: Chain = []
    left = retry_limit
    for rate, tries in chain:
        if left <= 0:
            break
        n = min(tries, left)
        if out and out[-1][0] == rate:
            out[-1] = (rate, out[-1][1] + n)
        else:
            out.append((rate, n))
        left -= n
    return out


class FixedRate:
    """``medium.rate_control: fixed``: every frame at one rate, up to the retry limit."""

    def __init__(self, rate: Rate, retry_limit: int) -> None:
        self.rate = rate
        self.chain: Chain = fit_retry_limit([(rate, retry_limit)], retry_limit)

    def choose(self, now_ns: int) -> Chain:
        return list(self.chain)

    def report(self, now_ns: int, rate: Rate, attempts: int, success: int) -> None:
        _check_report(rate, attempts, success, (self.rate,))


def _check_report(rate: Rate, attempts: int, success: int, rates: Sequence[Rate]) -> None:
    if rate not in rates:
        raise ValueError(f"report for rate {rate.name}, which this controller does not use")
    if attempts < 0 or not 0 <= success <= attempts:
        raise ValueError(f"report for {rate.name}: {success} successes in {attempts} attempts")


@dataclass
class _Stats:
    """One rate's record (struct minstrel_rate_stats)."""
    attempts: int = 0        # this interval
    success: int = 0         # this interval
    prob: float | None = None  # EWMA of the success probability; None: never measured
    sample_skipped: int = 0  # intervals in a row without attempts (saturates)
    retry_count: int = 2


class Minstrel:
    """A Minstrel-HT-like controller for one link (module docstring).  Pure: no clock, no I/O; the
    caller passes virtual time.  ``rates`` are the link's usable rates; ``timing`` and ``basic_rates``
    give the airtime of a frame and its Ack (routing.medium.rates)."""

    def __init__(self, rates: Sequence[Rate], timing: Timing, basic_rates: Sequence[Rate], *, seed: int,
                 retry_limit: int = MAX_RETRY, update_interval_ns: int = UPDATE_INTERVAL_NS,
                 sampling_percent: int = SAMPLING_PERCENT) -> None:
        if not rates:
            raise ValueError("Minstrel needs at least one rate")
        if len(set(rates)) != len(rates):
            raise ValueError("Minstrel: a rate is listed twice")
        if update_interval_ns <= 0 or not 0 <= sampling_percent <= 100 or retry_limit < 1:
            raise ValueError("Minstrel: update interval must be > 0, sampling percent in 0..100, retry limit >= 1")
        self.rates: tuple[Rate, ...] = tuple(rates)
        self.timing = timing
        self.retry_limit = retry_limit
        self.update_interval_ns = update_interval_ns
        self.sampling_percent = sampling_percent
        n = len(self.rates)
        # Airtime of one average frame per rate: what the throughput estimate divides by.
        self._frame_ns = [access_ns(r, AVG_PKT_SIZE, timing, basic_rates) for r in self.rates]
        self._data_ns = [txtime_ns(r, AVG_PKT_SIZE) for r in self.rates]
        self._overhead_ns = [f - timing.difs_ns - timing.mean_backoff_ns - d
                             for f, d in zip(self._frame_ns, self._data_ns)]
        self._stats = [_Stats() for _ in range(n)]
        self._lowest = max(range(n), key=lambda i: self._frame_ns[i])
        rng = random.Random(seed)
        self._sample_table = [rng.sample(range(n), n) for _ in range(SAMPLE_COLUMNS)]
        self._column = 0
        self._row = 0
        self._total_packets = 0
        self._sample_packets = 0
        self._sample_slow = 0
        self._last_update_ns: int | None = None
        self.max_tp = [self._lowest, self._lowest]
        self.max_prob = self._lowest
        self.updates = 0
        self._update_retry_counts()

    # --- the API the medium calls --------------------------------------------------------------------

    def choose(self, now_ns: int) -> Chain:
        """The retry chain for the next frame: [(rate, tries), ...], tries adding up to at most the
        retry limit.  A sampling frame starts with the sample rate, once."""
        self._maybe_update(now_ns)
        stages = [self.max_tp[0], self.max_tp[1], self.max_prob, self._lowest]
        chain: Chain = [(self.rates[i], self._stats[i].retry_count) for i in stages]
        sample = self._sample_rate()
        if sample is not None:
            chain.insert(0, (self.rates[sample], 1))
        return fit_retry_limit(chain, self.retry_limit)

    def report(self, now_ns: int, rate: Rate, attempts: int, success: int) -> None:
        """The outcome of one stage of a frame: ``attempts`` tries at ``rate``, ``success`` of them
        acknowledged (0 or 1 for one MPDU)."""
        _check_report(rate, attempts, success, self.rates)
        st = self._stats[self.rates.index(rate)]
        st.attempts += attempts
        st.success += success
        self._maybe_update(now_ns)

    # --- introspection (tests, logs) -----------------------------------------------------------------

    def best_rate(self) -> Rate:
        """max_tp[0]: the rate normal frames start with."""
        return self.rates[self.max_tp[0]]

    def prob(self, rate: Rate) -> float | None:
        return self._stats[self.rates.index(rate)].prob

    def throughput(self, i: int) -> float:
        """minstrel_ht_get_tp_avg: frames per second the rate is expected to carry (0 below 10 %)."""
        p = self._stats[i].prob
        if p is None or p < PROB_TP_MIN:
            return 0.0
        return min(p, PROB_TP_CAP) * 1e9 / self._frame_ns[i]

    # --- statistics ----------------------------------------------------------------------------------

    def _maybe_update(self, now_ns: int) -> None:
        if self._last_update_ns is None:
            self._last_update_ns = now_ns
        elif now_ns - self._last_update_ns > self.update_interval_ns:  # time_after(jiffies, last + interval)
            self._update()
            self._last_update_ns = now_ns

    def _update(self) -> None:
        """minstrel_ht_update_stats: fold the interval into the EWMA, choose max_tp and max_prob."""
        self.updates += 1
        for st in self._stats:
            if st.attempts > 0:
                cur = st.success / st.attempts
                st.prob = cur if st.prob is None else st.prob + (1 - EWMA_LEVEL) * (cur - st.prob)
                st.sample_skipped = 0
            else:
                st.sample_skipped = min(st.sample_skipped + 1, SAMPLE_SKIPPED_SLOW)
            st.attempts = st.success = 0
        self._sample_slow = 0
        n = len(self.rates)
        ranked = sorted((i for i in range(n) if self.throughput(i) > 0),
                        key=lambda i: (self.throughput(i), self._stats[i].prob), reverse=True)
        self.max_tp = (ranked + [self._lowest, self._lowest])[:2]  # unfilled places keep the lowest rate
        measured = [i for i in range(n) if self._stats[i].prob is not None]
        good = [i for i in measured if self._stats[i].prob > PROB_GOOD]
        if good:
            self.max_prob = max(good, key=self.throughput)
        elif measured:
            self.max_prob = max(measured, key=lambda i: self._stats[i].prob)
        else:
            self.max_prob = self._lowest
        self._update_retry_counts()

    def _update_retry_counts(self) -> None:
        for i, st in enumerate(self._stats):
            st.retry_count = self._retry_count(i)

    def _retry_count(self, i: int) -> int:
        """minstrel_calc_retransmit: 2 tries, then more while the stage's airtime (each try's contention
        with CW doubling from aCWmin, its DIFS, data, SIFS and Ack) stays under ``segment_size``, at most
        ``max_retry``; minstrel_ht_set_rate: 2 when p < 20 % (and a rate never measured counts as 0)."""
        p = self._stats[i].prob
        if p is None or p < PROB_FEW_TRIES:
            return 2
        slot_ns = self.timing.slot_us * 1000
        per_try = self.timing.difs_ns + self._data_ns[i] + self._overhead_ns[i]
        cw = self.timing.cw_min
        tx_time = 0
        count = 0
        while count < MAX_RETRY:
            tx_time += slot_ns * cw // 2 + per_try
            cw = min(2 * cw + 1, CW_MAX)
            if count >= 2 and tx_time >= SEGMENT_NS:
                break
            count += 1
        return count

    # --- sampling ------------------------------------------------------------------------------------

    def _sample_rate(self) -> int | None:
        """Whether this frame samples, and which rate (module docstring)."""
        self._total_packets += 1
        if self._total_packets >= PACKETS_WRAP:
            self._total_packets = self._sample_packets = 0
        delta = self._total_packets * self.sampling_percent // 100 - self._sample_packets
        if delta < 0 or self.sampling_percent == 0:
            return None
        n = len(self.rates)
        if delta > 2 * n:
            self._sample_packets += delta - 2 * n
        idx = self._sample_table[self._column][self._row]
        self._row += 1
        if self._row == n:
            self._row = 0
            self._column = (self._column + 1) % SAMPLE_COLUMNS
        if not self._may_sample(idx):
            return None
        self._sample_packets += 1
        return idx

    def _may_sample(self, idx: int) -> bool:
        """minstrel_get_sample_rate's filters: never a rate much worse than the current best."""
        st = self._stats[idx]
        if idx in (self.max_tp[0], self.max_prob):
            return False
        dur = self._frame_ns[idx]
        if (st.prob is not None and st.prob > PROB_NO_SAMPLE) or dur > SLOW_FACTOR * self._frame_ns[self.max_prob]:
            return False
        tp1, tp2 = sorted(self.max_tp, key=lambda i: self._frame_ns[i])  # faster, slower of max_tp[0..1]
        if dur >= self._frame_ns[tp1] and st.attempts:
            return False
        if dur >= self._frame_ns[tp2]:
            if st.sample_skipped < SAMPLE_SKIPPED_SLOW:
                return False
            self._sample_slow += 1
            if self._sample_slow > SAMPLE_SLOW_MAX:
                return False
        return True
