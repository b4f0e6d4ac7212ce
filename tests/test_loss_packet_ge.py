"""routing.links.loss.PacketGilbertElliott: two states stepped per packet heard (issue 28, item 8).

Each statistical test uses a fixed seed and a bound derived from the chain itself (a binomial
standard error for the transition estimates; the Markov chain's asymptotic variance for the
long-run loss rate), at 5 standard errors: with a fixed seed the test is deterministic, and the
bound is loose enough that any seed passes while a wrong rule (transitions per second, swapped
probabilities, the state moved before the packet's draw with the wrong probability) does not.
"""
from __future__ import annotations

import math
import random

import pytest

from experiments.schema import ExperimentError, load_experiment
from routing.links.loss import GilbertElliott, PacketGilbertElliott, build_loss_model

N = 300_000
SEED = 28


def states_and_drops(model: PacketGilbertElliott, n: int, dt: float = 0.001) -> tuple[list[bool], list[bool]]:
    """The state each packet met (True: good) and whether it was lost, ``dt`` seconds apart."""
    good, lost = [], []
    for k in range(n):
        good.append(model.state == "good")
        lost.append(model.drop(k * dt))
    return good, lost


@pytest.mark.parametrize("p_gb, p_bg", [(0.01, 0.3), (0.05, 0.05), (0.2, 0.6)])
def test_transition_probabilities_are_per_packet(p_gb: float, p_bg: float) -> None:
    m = PacketGilbertElliott(random.Random(SEED), p_good_bad=p_gb, p_bad_good=p_bg)
    good, _ = states_and_drops(m, N)
    from_good = sum(1 for a in good[:-1] if a)
    from_bad = len(good) - 1 - from_good
    gb = sum(1 for a, b in zip(good, good[1:]) if a and not b)
    bg = sum(1 for a, b in zip(good, good[1:]) if not a and b)
    # each step from a state is one Bernoulli trial of that state's transition probability
    assert abs(gb / from_good - p_gb) < 5 * math.sqrt(p_gb * (1 - p_gb) / from_good), (gb, from_good)
    assert abs(bg / from_bad - p_bg) < 5 * math.sqrt(p_bg * (1 - p_bg) / from_bad), (bg, from_bad)


@pytest.mark.parametrize("p_gb, p_bg, loss_good, loss_bad", [(0.01, 0.3, 0.0, 0.5), (0.02, 0.1, 0.01, 0.8)])
def test_stationary_loss_rate_within_the_chains_bound(p_gb, p_bg, loss_good, loss_bad) -> None:
    m = PacketGilbertElliott(random.Random(SEED), p_good_bad=p_gb, p_bad_good=p_bg,
                             loss_good=loss_good, loss_bad=loss_bad)
    pi_b = p_gb / (p_gb + p_bg)
    mean = loss_good * (1 - pi_b) + loss_bad * pi_b
    assert m.mean_loss == pytest.approx(mean) and m.bad_fraction == pytest.approx(pi_b)
    _, lost = states_and_drops(m, N)
    # The loss indicator is f(S_k) plus independent noise, f = the state's loss probability.  Its
    # asymptotic variance per packet: E[f(1 - f)] + Var(f) (1 + lam) / (1 - lam), where
    # lam = 1 - p_gb - p_bg is the chain's second eigenvalue (the lag-k autocorrelation of f(S)
    # is lam^k).  Starting in the good state biases the mean by at most pi_b |dloss| / ((1 - lam) N).
    lam = 1 - p_gb - p_bg
    noise = loss_good * (1 - loss_good) * (1 - pi_b) + loss_bad * (1 - loss_bad) * pi_b
    var_f = pi_b * (1 - pi_b) * (loss_bad - loss_good) ** 2
    sigma = math.sqrt((noise + var_f * (1 + lam) / (1 - lam)) / N)
    bias = pi_b * abs(loss_bad - loss_good) / ((1 - lam) * N)
    assert abs(sum(lost) / N - mean) < 5 * sigma + bias, (sum(lost) / N, mean, sigma)


def test_the_loss_process_does_not_depend_on_the_clock() -> None:
    """The same packets, 1 ms or 2 s apart (a fast and a slow backend): the same losses.  The
    time-based model does depend on it (that is the difference documented in docs/LOGS.md)."""
    fast = states_and_drops(PacketGilbertElliott(random.Random(SEED)), 20_000, dt=0.001)[1]
    slow = states_and_drops(PacketGilbertElliott(random.Random(SEED)), 20_000, dt=2.0)[1]
    assert fast == slow and 0 < sum(fast) < len(fast)
    ge_fast, ge_slow = GilbertElliott(random.Random(SEED)), GilbertElliott(random.Random(SEED))
    a = [ge_fast.drop(k * 0.001) for k in range(20_000)]
    b = [ge_slow.drop(k * 2.0) for k in range(20_000)]
    assert a != b


def test_reproducible_and_built_from_the_registry() -> None:
    spec = {"model": "gilbert-elliott-packet", "p_good_bad": 0.05, "p_bad_good": 0.2, "loss_bad": 0.9}
    a = build_loss_model(spec, random.Random(3))
    b = build_loss_model(spec, random.Random(3))
    assert isinstance(a, PacketGilbertElliott) and (a.p_good_bad, a.p_bad_good, a.loss_bad) == (0.05, 0.2, 0.9)
    assert [a.drop(0.0) for _ in range(5000)] == [b.drop(0.0) for _ in range(5000)]


@pytest.mark.parametrize("bad, where, says", [
    ({"p_good_bad": 1.5}, "loss.default.p_good_bad", "1"),
    ({"good_mean_s": 6}, "loss.default.good_mean_s", "not a setting of model 'gilbert-elliott-packet'"),
])
def test_the_schema_refuses_bad_settings_before_anything_starts(bad, where, says) -> None:
    doc = {"name": "ge", "backend": "sim", "flows": [{"sender": "A", "receiver": "D"}],
           "loss": {"default": {"model": "gilbert-elliott-packet", **bad}}}
    with pytest.raises(ExperimentError) as e:
        load_experiment(doc, "ge.yaml")
    assert any(err.path == where and says in err.message for err in e.value.errors), str(e.value)


def test_with_no_transitions_the_state_stays_where_it_started() -> None:
    for start_good, rate in ((True, 0.0), (False, 0.5)):
        m = PacketGilbertElliott(random.Random(SEED), p_good_bad=0, p_bad_good=0, start_good=start_good)
        good, lost = states_and_drops(m, 20_000)
        assert set(good) == {start_good} and m.mean_loss == rate
        assert abs(sum(lost) / len(lost) - rate) < 5 * math.sqrt(rate * (1 - rate) / len(lost)) + 1e-12


def test_the_schema_fills_the_defaults() -> None:
    doc = {"name": "ge", "backend": "sim", "flows": [{"sender": "A", "receiver": "D"}],
           "loss": {"default": {"model": "gilbert-elliott-packet"}}}
    exp = load_experiment(doc, "ge.yaml")
    spec = exp.base["loss"]["default"]
    assert spec == {"model": "gilbert-elliott-packet", "p_good_bad": 0.01, "p_bad_good": 0.3,
                    "loss_good": 0.0, "loss_bad": 0.5, "start_good": True, "down": []}
