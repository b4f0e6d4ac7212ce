"""pkt_qos that sets itself: the adaptive A-SPAN sender (issue 29).

The A-SPAN paper leaves ``pkt_qos`` to the sender and names learning it as future work (paper,
"Conclusion and Future Work").  No fixed value wins everywhere on this testbed: on independent lossy
links caching at every lossy hop (1.00) is best, in one shared cell the local retransmissions take the
air from the whole chain and not caching (plain SACK) is best, and under bursty loss they are level
(docs/REPRODUCTION.md).  The sender can see which: its goodput moves with the setting.

:class:`QosLearner` is a small, explainable bandit over a short list of settings (its *arms*,
e.g. pkt_qos 0, 0.99 and 1.00; 0 never caches anywhere, because ``pkt_effort x p < 0`` never holds).
It measures the only thing every data plane's sender sees, the flow's ACK progress, in epochs of fixed
length: an epoch's *score* is the goodput acknowledged in it after a guard (the first ``guard`` of the
epoch, while the previous setting's packets still drain, is not counted).  Three phases:

1. **warmup**: the first epoch runs the arm nearest the experiment's ``pkt_qos`` and is not scored (slow
   start would bias it).  That arm becomes the *incumbent*: the researcher's setting stands until the
   flow's own goodput says otherwise.
2. **hold**: the incumbent runs.
3. **reprobe**: now and then another arm runs for one epoch (each one at once after the warmup).  It
   replaces the incumbent only when it is *clearly better*: its mean over its last five scores is ahead
   by ``margin`` and by :data:`Z` standard errors of the difference (:meth:`QosLearner.clearly_better`,
   the one switching rule), so two equal arms do not take turns and one noisy epoch decides nothing.
   An arm that may still be better is re-probed again after ``recheck_epochs``, one the incumbent is
   clearly better than after ``reprobe_epochs``; each wait doubles while the re-probes decide the same
   (up to ``max_backoff x reprobe_epochs``), so a worse or an equal arm costs less and less.

When the incumbent's own goodput moves clearly (:meth:`QosLearner.path_changed`), the other arms' scores
are forgotten and each is re-probed at once: what they scored describes a path that is gone.

An epoch in which no ACK advanced (the path is down, or the flow idle) scores nothing and is run again
with the same arm.  Every epoch's end is one ``qos`` event (arm, score, phase, decision), at most one
per flow per epoch.  Nothing here does I/O or reads a clock: the data plane passes ``now`` in, so the
same learner runs in the user-space TCP's node (routing.overlay.node) and in the kernel data plane's handler at
the sender (routing.kernel.forwarder).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

from aspan.fields import quantise

Emit = Callable[..., None]

SEQ_MOD = 1 << 32
HALF = 1 << 31
#: Flows with a learner per sender (issue 13's bounds): beyond it the least recently used flow's
#: learner is forgotten (counted in :attr:`QosLearners.evicted`) and starts again if the flow returns.
MAX_FLOWS = 64
#: Scores kept per arm: the last five epochs it ran (older ones describe a path that may have changed).
WINDOW = 5
#: How many standard errors a challenger must be ahead by (one-sided: a chance of about 1 in 700 per
#: comparison that an equal arm passes on noise alone, before the margin).
Z = 3.0
#: How far (a fraction) the incumbent's goodput must move for the path to count as changed
#: (:meth:`QosLearner.path_changed`): a link that fades from 0.995 to 0.9 delivery moves it more.
CHANGE = 0.25


@dataclass(frozen=True, slots=True)
class AdaptiveQosConfig:
    """The learner's settings (experiment YAML ``snoop.qos_*``; docs/VARIANTS.md, "Adaptive pkt_qos")."""

    arms: tuple[float, ...] = (0.0, 1.0)   # never cache; cache wherever the effort falls below 1
    epoch_s: float = 1.0         # one measurement; much longer than the path's RTT
    guard: float = 0.25          # fraction of an epoch after a change of arm that is not scored
    margin: float = 0.10         # a challenger must beat the incumbent by this fraction (and two std. errors)
    recheck_epochs: int = 2      # hold epochs between re-probes of an arm that may still be better
    reprobe_epochs: int = 8      # ... and of one the incumbent is clearly better than (doubling each time)
    max_backoff: int = 4         # an arm that keeps losing is re-probed at most every 4 x 8 epochs
    start: float = 1.0           # the warmup and the first probe run the arm nearest this (snoop.pkt_qos)

    def __post_init__(self) -> None:
        if not 2 <= len(self.arms) <= 8 or len(set(self.arms)) != len(self.arms):
            raise ValueError(f"snoop.qos_arms: expected 2 to 8 distinct values, got {list(self.arms)}")
        if any(not 0.0 <= a <= 1.0 for a in self.arms):
            raise ValueError(f"snoop.qos_arms: expected values in [0, 1], got {list(self.arms)}")
        if self.epoch_s <= 0 or not 0.0 <= self.guard < 1.0 or self.margin < 0:
            raise ValueError(f"snoop.qos_epoch_s > 0, 0 <= qos_guard < 1, qos_margin >= 0 expected, "
                             f"got {self.epoch_s}, {self.guard}, {self.margin}")
        if self.recheck_epochs < 1 or self.reprobe_epochs < 1 or self.max_backoff < 1:
            raise ValueError("snoop.qos_recheck_epochs, qos_reprobe_epochs and the backoff must be >= 1")


class QosLearner:
    """The pkt_qos of one flow, chosen online from its ACK progress (see the module docstring)."""

    def __init__(self, config: AdaptiveQosConfig, flow: str, emit: Emit | None = None) -> None:
        self.config = config
        self.flow = flow
        self._emit = emit
        self.arms = tuple(quantise(a) for a in config.arms)   # on the header's grid (aspan.fields)
        #: index of the arm in use: first the one nearest ``config.start`` (the experiment's pkt_qos)
        self.current = min(range(len(self.arms)), key=lambda i: (abs(self.arms[i] - config.start), i))
        self.incumbent: int | None = None
        self.phase = "warmup"
        self.epoch = 0                   # epochs closed so far
        self.switches = 0                # times the incumbent changed
        self._scores: dict[int, list[float]] = {i: [] for i in range(len(self.arms))}  # last WINDOW, bytes/s
        self._next_probe: dict[int, int] = {}        # epoch at which each other arm is re-probed next
        self._backoff: dict[int, int] = {}
        self._undecided: dict[int, int] = {}        # re-probes in a row that decided nothing, per arm
        self._start: float | None = None             # start of the current epoch
        self._acked = 0                              # bytes acknowledged in the scored part of the epoch
        self._last_ack: int | None = None            # the highest ACK number seen (32-bit)

    # ---- what the sender sees ------------------------------------------------------------------
    def pkt_qos(self, now: float) -> float:
        """The pkt_qos to stamp on a data segment sent at ``now`` (the first call starts the clock)."""
        if self._start is None:
            self._start = now
        else:
            self._advance(now)
        return self.arms[self.current]

    def on_ack(self, now: float, ack: int) -> None:
        """An ACK of this flow reached the sender: count the bytes it newly acknowledges (32-bit ACK
        numbers, compared modulo 2^32 as TCP does; an older ACK counts nothing)."""
        if self._start is not None:
            self._advance(now)
        last = self._last_ack
        ack &= SEQ_MOD - 1
        if last is None:
            self._last_ack = ack
            return
        delta = (ack - last) % SEQ_MOD
        if 0 < delta < HALF:
            self._last_ack = ack
            if self._start is not None and now >= self._start + self.config.guard * self.config.epoch_s:
                self._acked += delta

    # ---- the statistics an arm is judged by ----------------------------------------------------
    def mean(self, arm: int) -> float:
        """The mean of ``arm``'s last :data:`WINDOW` epoch scores (bytes/s; 0 before any)."""
        xs = self._scores[arm]
        return sum(xs) / len(xs) if xs else 0.0

    def noise(self, split: int | None = None) -> float:
        """The standard deviation of one epoch's score, pooled over the arms: each score against the mean
        of its own arm (0 before there are more scores than arms).  With ``split``, that arm's scores count
        as two groups, its last two and the ones before (:meth:`path_changed`: a change of the path must
        not pass for noise)."""
        groups = [xs for i, xs in self._scores.items() if xs and i != split]
        if split is not None:
            xs = self._scores[split]
            groups += [xs[:-2], xs[-2:]]
        ss, n = 0.0, 0
        for xs in groups:
            m = sum(xs) / len(xs)
            ss += sum((x - m) ** 2 for x in xs)
            n += len(xs)
        return (ss / (n - len(groups))) ** 0.5 if n > len(groups) else 0.0

    def clearly_better(self, a: int, b: int) -> bool:
        """Is arm ``a`` ahead of arm ``b`` by the margin *and* by :data:`Z` standard errors of the
        difference of their means (from the pooled :meth:`noise`), on at least two scores each?  The one
        switching rule: equal arms almost never pass it, so the incumbent does not flip between them;
        an arm twice as good passes it on its second score."""
        na, nb = len(self._scores[a]), len(self._scores[b])
        if na < 2 or nb < 2:
            return False
        ma, mb = self.mean(a), self.mean(b)
        se = self.noise() * (1.0 / na + 1.0 / nb) ** 0.5
        return ma > mb * (1.0 + self.config.margin) and ma - mb > Z * se

    def path_changed(self, arm: int) -> bool:
        """Did ``arm``'s goodput move, its last two scores against the three before them, by
        :data:`CHANGE` and by :data:`Z` standard errors?  (A link faded or recovered, a route changed: what the other
        arms scored before no longer says what they would score now.)"""
        xs = self._scores[arm]
        if len(xs) < WINDOW:
            return False
        recent, before = xs[-2:], xs[:-2]
        mr, mb = sum(recent) / len(recent), sum(before) / len(before)
        se = self.noise(split=arm) * (1.0 / len(recent) + 1.0 / len(before)) ** 0.5
        return abs(mr - mb) > mb * CHANGE and abs(mr - mb) > Z * se

    def _forget_others(self, inc: int) -> str:
        """The path changed under the incumbent ``inc``: keep its two recent scores, forget every other
        arm's, and re-probe each of them from the next epoch on."""
        del self._scores[inc][:-2]
        for i in range(len(self.arms)):
            if i != inc:
                self._scores[i].clear()
                self._backoff[i] = 1
                self._next_probe[i] = self.epoch
        self._undecided.clear()
        return "path changed"

    # ---- epochs --------------------------------------------------------------------------------
    def _advance(self, now: float) -> None:
        cfg = self.config
        assert self._start is not None
        while now >= self._start + cfg.epoch_s:
            end = self._start + cfg.epoch_s
            scored_s = cfg.epoch_s * (1.0 - cfg.guard)
            self._close(end, self._acked / scored_s if self._acked else None)
            self._start = end
            self._acked = 0

    def _close(self, t: float, score: float | None) -> None:
        """One epoch ended at ``t`` with ``score`` (None: no ACK advanced): decide the next arm."""
        arm, phase = self.current, self.phase
        self.epoch += 1
        decision = "again"                  # no score: the same arm runs the next epoch
        if score is not None:
            if phase != "warmup":
                xs = self._scores[arm]
                xs.append(score)
                del xs[:-WINDOW]
            decision = self._decide()
        if self._emit is not None:
            fields: dict[str, Any] = {"flow": self.flow, "epoch": self.epoch, "phase": phase,
                                      "pkt_qos": self.arms[arm], "next_qos": self.arms[self.current],
                                      "decision": decision}
            if score is not None:
                fields["score_mbps"] = round(score * 8e-6, 4)
            if self.incumbent is not None:
                fields["incumbent"] = self.arms[self.incumbent]
            self._emit(t, "qos", **fields)

    def _decide(self) -> str:
        if self.phase == "warmup":
            self._start_holding()
        inc = self.incumbent
        assert inc is not None
        decision = "hold"
        if self.phase == "hold" and self.path_changed(inc):
            decision = self._forget_others(inc)
        if self.phase == "reprobe":
            arm = self.current
            if self.clearly_better(arm, inc):
                return self._switch_to(arm)
            decision = self._schedule(arm)
        self.phase, self.current = "hold", inc
        due = [i for i, at in self._next_probe.items() if at <= self.epoch and i != inc]
        if due:
            self.phase = "reprobe"
            self.current = min(due, key=lambda i: (self._next_probe[i], i))   # the most overdue first
        return decision

    def _schedule(self, arm: int) -> str:
        """When ``arm`` (just re-probed, not clearly better) runs again.  Once the incumbent is clearly
        better than it: after ``reprobe_epochs``, doubling each time it loses again.  While undecided (the
        two may be equal): after ``recheck_epochs``, doubling each time it stays undecided.  Both waits
        stop growing at ``max_backoff x reprobe_epochs``."""
        cfg = self.config
        inc = self.incumbent
        assert inc is not None
        cap = cfg.reprobe_epochs * cfg.max_backoff
        if self.clearly_better(inc, arm):
            self._backoff[arm] = min(self._backoff.get(arm, 1) * 2, cfg.max_backoff)
            self._next_probe[arm] = self.epoch + cfg.reprobe_epochs * self._backoff[arm]
            return "incumbent kept"
        self._undecided[arm] = self._undecided.get(arm, 0) + 1
        self._next_probe[arm] = self.epoch + min(cfg.recheck_epochs * 2 ** (self._undecided[arm] - 1), cap)
        return "undecided"

    def _start_holding(self) -> None:
        """After the warmup: the warmup's arm (the experiment's pkt_qos) is the incumbent, and every
        other arm is due for its first re-probe (:meth:`_decide` then sets the phase)."""
        self.incumbent = self.current
        for i in range(len(self.arms)):
            if i != self.incumbent:
                self._backoff[i] = 1
                self._next_probe[i] = self.epoch

    def _switch_to(self, arm: int) -> str:
        old = self.incumbent
        assert old is not None
        self.incumbent = self.current = arm
        self.phase = "hold"
        self.switches += 1
        self._next_probe.pop(arm, None)
        self._backoff[old] = 1
        self._undecided.clear()
        self._next_probe[old] = self.epoch + self.config.recheck_epochs
        return "switched"


class QosLearners:
    """The learners of one sender's flows, by flow name, bounded by :data:`MAX_FLOWS` (least recently
    used first out)."""

    def __init__(self, config: AdaptiveQosConfig, emit: Emit | None = None, max_flows: int = MAX_FLOWS) -> None:
        self.config = config
        self._emit = emit
        self.max_flows = max_flows
        self.evicted = 0
        self._by_flow: OrderedDict[str, QosLearner] = OrderedDict()

    def get(self, flow: str) -> QosLearner:
        """The learner of ``flow``, made on first use."""
        learners = self._by_flow
        learner = learners.get(flow)
        if learner is None:
            if len(learners) >= self.max_flows:
                learners.popitem(last=False)
                self.evicted += 1
            learner = learners[flow] = QosLearner(self.config, flow, self._emit)
        else:
            learners.move_to_end(flow)
        return learner

    def known(self, flow: str) -> QosLearner | None:
        """The learner of ``flow`` if it has one (an ACK of a flow this node never sent makes none)."""
        return self._by_flow.get(flow)

    def __len__(self) -> int:
        return len(self._by_flow)
