"""Tests for routing.links.loss."""
from __future__ import annotations

import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

from routing.links.loss import (Bernoulli, Composite, GilbertElliott, LinkDown, LossModel, NoLoss,
                          build_loss_model, node_rng)


ROOT = Path(__file__).resolve().parents[1]


def drops(model: LossModel, times) -> list[bool]:
    return [model.drop(t) for t in times]


def test_protocol():
    for m in (NoLoss(), Bernoulli(0.1, random.Random(1)), GilbertElliott(random.Random(1)),
              LinkDown([(0, 1)]), Composite([])):
        assert isinstance(m, LossModel)


def test_no_loss():
    assert not any(drops(NoLoss(), range(1000)))


# -- Bernoulli --------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("rate,n,lo,hi", [
    # P(Binomial(200000, 0.005) outside [850, 1150]) = 2.4e-6 (4.8 sd)
    (0.005, 200_000, 850, 1150),
    # P(Binomial(100000, 0.2) outside [19400, 20600]) = 2.1e-6 (4.7 sd)
    (0.2, 100_000, 19_400, 20_600),
])
def test_bernoulli_rate(seed, rate, n, lo, hi):
    m = Bernoulli(rate, random.Random(seed))
    assert lo <= sum(m.drop(i * 0.01) for i in range(n)) <= hi


def test_bernoulli_reproducible_and_edges():
    a = drops(Bernoulli(0.3, random.Random(42)), range(5000))
    b = drops(Bernoulli(0.3, random.Random(42)), range(5000))
    assert a == b
    assert a != drops(Bernoulli(0.3, random.Random(43)), range(5000))
    assert not any(drops(Bernoulli(0.0, random.Random(1)), range(1000)))
    assert all(drops(Bernoulli(1.0, random.Random(1)), range(1000)))
    # one draw per call whatever the rate: the RNG stream stays aligned
    r1, r2 = random.Random(5), random.Random(5)
    drops(Bernoulli(0.0, r1), range(10))
    for _ in range(10):
        r2.random()
    assert r1.random() == r2.random()


@pytest.mark.parametrize("rate", [-0.1, 1.1, float("nan"), "0.1", True])
def test_bernoulli_bad_rate(rate):
    with pytest.raises(ValueError, match="rate"):
        Bernoulli(rate, random.Random(1))


# -- Gilbert-Elliott --------------------------------------------------------------------------

def run_ge(seed: int, n: int = 1_000_000, dt: float = 0.05, **kw):
    """Hear a packet every dt seconds (20 packets/s for 50,000 virtual seconds by default)."""
    g = GilbertElliott(random.Random(seed), **kw)
    states, lost = [], []
    for k in range(n):
        lost.append(g.drop(k * dt))
        states.append(g.state == "bad")
    return states, lost


@pytest.mark.parametrize("seed", [11, 12])
def test_ge_stationary_fractions_and_bursts(seed):
    states, lost = run_ge(seed)
    n = len(states)
    # Bad-state fraction.  The state is a two-state Markov chain with rates a = 1/6 (good ->
    # bad) and b = 1/0.2 (bad -> good); stationary pi_bad = 0.2/6.2 = 0.03226.  Over T
    # seconds the time average has variance ~ 2 pi_bad pi_good / ((a + b) T)
    # = 0.01209 / T, i.e. sd 4.9e-4 for T = 50,000 s.  Band +-0.0025 = 5 sd.
    pi_bad = 0.2 / 6.2
    bad_frac = sum(states) / n
    assert abs(bad_frac - pi_bad) <= 0.0025
    # Loss rate 0.5 * pi_bad = 0.01613; sd ~ sqrt((0.5 * 4.9e-4)^2 + 0.25 * 32000 / n^2)
    # = 2.6e-4.  Band +-0.0013 = 5 sd.
    assert abs(sum(lost) / n - 0.5 * pi_bad) <= 0.0013
    # Losses only in the bad state (loss_good = 0) ...
    assert all(bad for bad, l in zip(states, lost) if l)
    # ... and bursty: after a lost packet the next one (50 ms later) is lost with probability
    # ~0.5 * exp(-0.05 / 0.2) = 0.39, against 0.016 overall.
    after_loss = [lost[i + 1] for i in range(n - 1) if lost[i]]
    assert sum(after_loss) / len(after_loss) > 0.25
    # Bad periods: cycles of mean 6.2 s give ~8065 bad periods in 50,000 s, of which a
    # 20 Hz sampling sees a fraction 4 * (1 - exp(-0.25)) = 0.885 -> ~7135, sd ~92
    # (renewal count variance T * 36.04 / 6.2^3 plus thinning).  Band +-500 = 5.4 sd.
    runs = sum(1 for i in range(1, n) if states[i] and not states[i - 1])
    assert abs(runs - 7135) <= 500


def test_ge_bursts_contiguous_in_time():
    # With loss_bad = 1 every packet in a bad period is lost: losses come in runs that are
    # exactly the bad periods, each run contiguous in time.
    states, lost = run_ge(3, n=200_000, dt=0.01, loss_bad=1.0)
    assert states == lost
    assert any(lost)


def test_ge_reproducible_and_independent_of_traffic():
    a = run_ge(5, n=20_000)
    assert a == run_ge(5, n=20_000)
    assert a != run_ge(6, n=20_000)
    # The state trajectory depends only on the seed and the time origin, not on how many
    # packets are heard: a sparse caller sees the same states at the same times.
    dense = GilbertElliott(random.Random(9))
    sparse = GilbertElliott(random.Random(9))
    dense_states = {}
    for k in range(100_000):
        dense.drop(k * 0.01)
        dense_states[k] = dense.state
    for k in range(0, 100_000, 37):
        sparse.drop(k * 0.01)
        assert sparse.state == dense_states[k]


def test_ge_time_origin_is_first_call():
    # Epoch-seconds clocks are fine: the first sojourn starts at the first call.
    g = GilbertElliott(random.Random(1))
    h = GilbertElliott(random.Random(1))
    for k in range(10_000):
        assert g.advance(k * 0.1) == h.advance(1.7e9 + k * 0.1)


def test_ge_state_and_errors():
    g = GilbertElliott(random.Random(1), start_good=False)
    assert g.state == "bad"
    assert GilbertElliott(random.Random(1)).state == "good"
    g.drop(10.0)
    g.drop(10.0)                                   # equal time is fine
    with pytest.raises(ValueError, match="backwards"):
        g.drop(9.0)
    for kw, key in [({"good_mean_s": 0}, "good_mean_s"), ({"bad_mean_s": -1}, "bad_mean_s"),
                    ({"bad_mean_s": math.inf}, "bad_mean_s"), ({"loss_good": 2}, "loss_good"),
                    ({"loss_bad": -0.5}, "loss_bad"), ({"start_good": 1}, "start_good")]:
        with pytest.raises(ValueError, match=key):
            GilbertElliott(random.Random(1), **kw)
    m = GilbertElliott(random.Random(1), loss_good=0.01)
    assert m.bad_fraction == 0.2 / 6.2
    assert m.mean_loss == pytest.approx(0.01 * 6 / 6.2 + 0.5 * 0.2 / 6.2)


def test_ge_loss_good_state():
    # Bad periods practically never: loss is the good-state rate.  Binomial(100000, 0.1):
    # sd 95, band +-600.
    states, lost = run_ge(4, n=100_000, good_mean_s=1e12, loss_good=0.1)
    assert not any(states)
    assert abs(sum(lost) - 10_000) <= 600


# -- LinkDown / Composite ---------------------------------------------------------------------

def test_link_down_exact():
    m = LinkDown([(10, 12), (20.5, math.inf), [1, 2]])
    assert [m.drop(t) for t in (0, 0.99, 1, 1.5, 1.999, 2, 9.99, 10, 11.9, 12, 20.4, 20.5, 1e9)] == \
        [False, False, True, True, True, False, False, True, True, False, False, True, True]
    assert not LinkDown([]).drop(5)
    for bad in ([(2, 1)], [(1, 1)], [(1,)], [(0, float("nan"))], ["ab"], [("0", 1)]):
        with pytest.raises(ValueError, match="down"):
            LinkDown(bad)


class Scripted:
    def __init__(self, pattern):
        self.pattern, self.calls = list(pattern), 0

    def drop(self, now: float) -> bool:
        self.calls += 1
        return self.pattern.pop(0)


def test_composite_any_and_consults_all():
    a, b = Scripted([True, False, False, True]), Scripted([True, True, False, False])
    c = Composite([a, b])
    assert drops(c, range(4)) == [True, True, False, True]
    assert a.calls == b.calls == 4                 # no short-circuit
    assert not Composite([]).drop(0)


def test_composite_streams_independent():
    # The Bernoulli part drops the same packets with or without a LinkDown in front.
    alone = drops(Bernoulli(0.3, random.Random(2)), range(100))
    combined = Composite([LinkDown([(10, 20)]), Bernoulli(0.3, random.Random(2))])
    got = drops(combined, range(100))
    assert got == [True if 10 <= t < 20 else alone[t] for t in range(100)]


# -- build_loss_model -------------------------------------------------------------------------

def test_build_models():
    rng = random.Random(1)
    assert isinstance(build_loss_model(None, rng), NoLoss)
    assert isinstance(build_loss_model({"model": "none"}, rng), NoLoss)
    assert isinstance(build_loss_model({}, rng), NoLoss)
    b = build_loss_model({"model": "bernoulli", "rate": 0.005}, rng)
    assert isinstance(b, Bernoulli) and b.rate == 0.005
    g = build_loss_model({"model": "gilbert-elliott", "good_mean_s": 6, "bad_mean_s": 0.2,
                          "loss_good": 0, "loss_bad": 0.5}, rng)
    assert isinstance(g, GilbertElliott)
    assert (g.good_mean_s, g.bad_mean_s, g.loss_good, g.loss_bad) == (6.0, 0.2, 0.0, 0.5)
    g2 = build_loss_model({"model": "gilbert-elliott"}, rng)          # SNACK-paper defaults
    assert (g2.good_mean_s, g2.bad_mean_s, g2.loss_good, g2.loss_bad) == (6.0, 0.2, 0.0, 0.5)
    d = build_loss_model({"model": "bernoulli", "rate": 0.005, "down": [[10, 12]]}, rng)
    assert isinstance(d, Composite)
    assert isinstance(d.models[0], Bernoulli) and isinstance(d.models[1], LinkDown)
    assert all(d.drop(t) for t in (10, 11, 11.99))
    n = build_loss_model({"model": "none", "down": [[10, 12]]}, rng)
    assert isinstance(n, LinkDown) and n.drop(10) and not n.drop(12)


def test_build_same_seed_same_drops():
    spec = {"model": "bernoulli", "rate": 0.2}
    a = build_loss_model(spec, node_rng(3, "B"))
    b = build_loss_model(spec, node_rng(3, "B"))
    assert drops(a, range(1000)) == drops(b, range(1000))


@pytest.mark.parametrize("spec,match", [
    ({"model": "markov"}, "'model' must be one of"),
    ({"model": "bernoulli"}, "'rate' is required"),
    ({"model": "bernoulli", "rate": 1.5}, "'rate'.*in \\[0, 1\\]"),
    ({"model": "bernoulli", "rate": "0.1"}, "'rate'"),
    ({"model": "bernoulli", "rate": 0.1, "rat": 0.2}, "'rat'.*not valid for model 'bernoulli'"),
    ({"model": "none", "rate": 0.1}, "'rate'.*not valid for model 'none'"),
    ({"model": "gilbert-elliott", "bad_mean_s": 0}, "'bad_mean_s'.*> 0"),
    ({"model": "gilbert-elliott", "loss_bad": 2}, "'loss_bad'.*\\[0, 1\\]"),
    ({"model": "gilbert-elliott", "start_good": "yes"}, "'start_good'.*true or false"),
    ({"model": "gilbert-elliott", "rate": 0.1}, "'rate'.*not valid"),
    ({"model": "bernoulli", "rate": 0.1, "down": [[12, 10]]}, "'down'.*start < end"),
    ({"model": "bernoulli", "rate": 0.1, "down": [10, 12]}, "'down'.*pair"),
    ({"model": "bernoulli", "rate": 0.1, "down": "10-12"}, "'down'.*list"),
    (["bernoulli"], "mapping"),
])
def test_build_errors(spec, match):
    with pytest.raises(ValueError, match=match):
        build_loss_model(spec, random.Random(1))


# -- node_rng ---------------------------------------------------------------------------------

def test_node_rng_pinned_value():
    # Computed once from the derivation; guards against accidental changes to it.
    assert node_rng(1, "B").random() == 0.307914059110014


def test_node_rng_distinct_streams():
    firsts = {node_rng(s, n, st).random()
              for s in (0, 1, 2, -1, -2, 2**40) for n in ("A", "B", "C") for st in ("loss", "etx")}
    assert len(firsts) == 6 * 3 * 2
    assert node_rng(1, "B").random() == node_rng(1, "B", "loss").random()
    with pytest.raises(ValueError, match="seed"):
        node_rng("1", "B")


def test_node_rng_stable_across_processes():
    # hash() randomisation must not matter: a fresh interpreter with another PYTHONHASHSEED agrees.
    code = "from routing.links.loss import node_rng; print(repr(node_rng(7, 'node-C', 'etx').random()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}).stdout.strip()
    assert float(out) == node_rng(7, "node-C", "etx").random()
