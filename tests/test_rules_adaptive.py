"""The adaptive sender's rules one by one (issue 30, item 4; aspan/adaptive.py): the statistics it switches
by, the ACK accounting, the schedule of re-probes, the events.  Each test builds the learner's state by
hand or drives it a few epochs, and checks exact values derived from the module's docstring."""
import math
import statistics

import pytest

from aspan.adaptive import CHANGE, HALF, SEQ_MOD, WINDOW, Z, AdaptiveQosConfig, QosLearner, QosLearners


class Events(list):
    def emit(self, now, ev, **fields):
        self.append({"t": now, "ev": ev, **fields})


def learner(arms=(0.0, 1.0), **kw) -> tuple[QosLearner, Events]:
    ev = Events()
    return QosLearner(AdaptiveQosConfig(arms=arms, **kw), "f", ev.emit), ev


def pooled_sd(groups: list[list[float]]) -> float:
    """The pooled standard deviation, written independently: sum of (n_i - 1) s_i^2 over sum of (n_i - 1)."""
    num = sum((len(g) - 1) * statistics.variance(g) for g in groups if len(g) > 1)
    dof = sum(len(g) - 1 for g in groups)
    return math.sqrt(num / dof)


# ---- the configuration's bounds --------------------------------------------------------------------------

def test_the_configuration_accepts_its_bounds_exactly():
    AdaptiveQosConfig(arms=tuple(i / 10 for i in range(8)))          # 8 arms: the most
    AdaptiveQosConfig(margin=0.0, recheck_epochs=1, reprobe_epochs=1, max_backoff=1)
    with pytest.raises(ValueError, match="2 to 8"):
        AdaptiveQosConfig(arms=tuple(i / 10 for i in range(9)))
    with pytest.raises(ValueError, match=r"^snoop\.qos_recheck_epochs, qos_reprobe_epochs and the backoff must be >= 1$"):
        AdaptiveQosConfig(max_backoff=0)


# ---- statistics ---------------------------------------------------------------------------------------------

def test_mean_is_the_mean_of_the_arms_scores_and_zero_without_any():
    q, _ = learner()
    assert q.mean(0) == 0.0
    q._scores[0] = [2.0, 4.0, 9.0]
    assert q.mean(0) == 5.0


def test_noise_is_the_standard_deviation_pooled_over_the_arms():
    q, _ = learner(arms=(0.0, 0.5, 1.0))
    q._scores = {0: [1.0, 3.0], 1: [10.0], 2: []}
    assert q.noise() == pytest.approx(pooled_sd([[1.0, 3.0], [10.0]]))      # sqrt(2 / 1)
    q._scores = {0: [1.0], 1: [2.0], 2: []}
    assert q.noise() == 0.0                                                  # as many scores as arms


def test_noise_split_counts_the_arms_last_two_scores_as_their_own_group():
    q, _ = learner(arms=(0.0, 0.5, 1.0))
    q._scores = {0: [1.0, 2.0, 3.0, 4.0, 5.0], 1: [10.0, 12.0], 2: []}
    assert q.noise(split=0) == pytest.approx(pooled_sd([[10.0, 12.0], [1.0, 2.0, 3.0], [4.0, 5.0]]))
    assert q.noise() == pytest.approx(pooled_sd([[10.0, 12.0], [1.0, 2.0, 3.0, 4.0, 5.0]]))


def _two_arms(a: list[float], b: list[float], margin: float = 0.1) -> QosLearner:
    q, _ = learner(margin=margin)
    q._scores = {0: list(a), 1: list(b)}
    return q


def test_clearly_better_needs_two_scores_of_each():
    assert not _two_arms([100.0, 100.0], [1.0]).clearly_better(0, 1)
    assert not _two_arms([100.0], [1.0, 1.0]).clearly_better(0, 1)
    assert _two_arms([100.0, 100.0], [1.0, 1.0]).clearly_better(0, 1)


def test_clearly_better_needs_the_margin_exactly():
    assert not _two_arms([10.0, 10.0], [8.0, 8.0], margin=0.25).clearly_better(0, 1)    # 10 = 8 x 1.25: not ahead
    assert _two_arms([10.01, 10.01], [8.0, 8.0], margin=0.25).clearly_better(0, 1)
    assert not _two_arms([10.5, 10.5], [10.0, 10.0], margin=0.1).clearly_better(0, 1)   # 5 % ahead of 10 % asked


@pytest.mark.parametrize("na,nb", [(2, 2), (2, 3), (3, 5)])
def test_clearly_better_needs_z_standard_errors_of_the_difference(na, nb):
    """Scores with a known spread: ahead by 3 % more than Z standard errors passes, 3 % fewer does not."""
    for factor, expect in ((1.03, True), (0.97, False)):
        e = 1.0
        a = [100.0 + e * (1 if i % 2 else -1) for i in range(na)] if na % 2 == 0 else [99.0, 100.0, 101.0]
        b0 = [e * (1 if i % 2 else -1) for i in range(nb)] if nb % 2 == 0 else [-1.0, 0.0, 1.0, -1.0, 1.0][:nb]
        sd = pooled_sd([a, b0])
        se = sd * math.sqrt(1 / na + 1 / nb)
        shift = statistics.mean(a) - Z * se * factor
        b = [x + shift for x in b0]
        q = _two_arms(a, b, margin=0.0)
        assert q.clearly_better(0, 1) is expect, (factor, sd, se)


def test_clearly_better_is_the_difference_not_the_sum():
    # 20 % ahead, but the difference (15) is under Z standard errors (30); the sum (45) would pass
    assert not _two_arms([40.0, 20.0], [15.0, 15.0]).clearly_better(0, 1)


def _changed(xs: list[float]) -> bool:
    q, _ = learner()
    q._scores = {0: list(xs), 1: []}
    return q.path_changed(0)


def test_path_changed_compares_the_last_two_with_the_three_before_by_change_exactly():
    assert WINDOW == 5 and CHANGE == 0.25
    assert not _changed([10.0, 10.0, 10.0, 7.0])              # fewer than five scores: never
    assert _changed([10.0, 10.0, 10.0, 7.0, 7.0])             # 30 % down
    assert not _changed([10.0, 10.0, 10.0, 7.5, 7.5])         # 25 % exactly: not more than CHANGE
    assert not _changed([10.0, 10.0, 10.0, 7.6, 7.6])
    assert _changed([10.0, 10.0, 10.0, 13.0, 13.0])           # up counts too
    # the three before are the first three: (11 + 10 + 9) / 3 = 10, 7.6 is 24 % below it
    assert not _changed([11.0, 10.0, 9.0, 7.6, 7.6])
    assert not _changed([10.0, 10.0, 10.0, 10.0, 7.0])        # one low score is not the last two


@pytest.mark.parametrize("factor,expect", [(0.97, True), (1.03, False)])
def test_path_changed_needs_z_standard_errors(factor, expect):
    """A 40 % drop whose size is 3 % above or below Z standard errors (noise from the three before)."""
    diff = 4.0
    # before = [10 - e, 10, 10 + e]: pooled sd over ([before], [recent]) = e x sqrt(2 / 3)
    e = diff * factor / (Z * math.sqrt(2 / 3) * math.sqrt(1 / 2 + 1 / 3))
    xs = [10.0 - e, 10.0, 10.0 + e, 10.0 - diff, 10.0 - diff]
    assert _changed(xs) is expect


# ---- what the sender sees ------------------------------------------------------------------------------------

def test_an_ack_before_the_first_data_packet_starts_nothing_and_raises_nothing():
    q, ev = learner()
    q.on_ack(5.0, 1000)
    q.on_ack(6.0, 3000)
    assert q._acked == 0 and not ev
    q.pkt_qos(7.0)
    assert q._start == 7.0


@pytest.mark.parametrize("first,second,counted", [
    (1, 1002, 1001),                    # odd numbers: every bit of the 32-bit number counts
    (500, 501, 1),                      # one byte (a FIN's)
    (0, HALF, 0),                       # half the space ahead: older, not newer
    (0, HALF - 1, HALF - 1),
    (SEQ_MOD - 10, 20, 30),             # across the wrap
])
def test_ack_progress_is_counted_modulo_2_32(first, second, counted):
    q, _ = learner(guard=0.0)
    q.pkt_qos(0.0)
    q.on_ack(0.1, first)
    q.on_ack(0.2, second)
    assert q._acked == counted


def test_the_guard_ends_exactly_at_guard_times_the_epoch():
    q, _ = learner(epoch_s=2.0, guard=0.25)          # the first 0.5 s of each epoch are not scored
    q.pkt_qos(0.0)
    q.on_ack(0.0, 0)
    q.on_ack(0.2, 100)                               # in the guard
    q.on_ack(0.49, 200)
    assert q._acked == 0
    q.on_ack(0.5, 1200)                              # the guard's end: scored
    assert q._acked == 1000


# ---- epochs and events --------------------------------------------------------------------------------------

def drive_rates(q: QosLearner, rate, seconds: float, dt: float = 0.01) -> None:
    ack = 0
    for i in range(int(seconds / dt)):
        t = i * dt
        arm = q.pkt_qos(t)
        ack = (ack + int(rate(arm, t) * dt)) % SEQ_MOD
        q.on_ack(t, ack)


def test_events_number_the_epochs_from_one_at_their_ends_and_round_the_score():
    q, ev = learner(guard=0.0)
    drive_rates(q, lambda arm, t: 123457.0, 3.5)
    assert [(e["epoch"], e["t"]) for e in ev] == [(1, 1.0), (2, 2.0), (3, 3.0)]
    assert [e["decision"] for e in ev] == ["hold", "undecided", "hold"]
    q2, ev2 = learner(guard=0.0)
    q2.pkt_qos(0.0)
    q2.on_ack(0.1, 0)
    q2.on_ack(0.5, 123457)                           # 123,457 bytes in a 1 s epoch: 0.987656 Mbit/s
    q2.pkt_qos(1.0)
    assert ev2[0]["score_mbps"] == 0.9877            # rounded to 4 decimals


def test_the_warmup_is_not_scored_and_an_unscored_warmup_names_no_incumbent():
    q, ev = learner()
    q.pkt_qos(0.0)
    q.pkt_qos(1.5)                                   # the warmup had no ACK
    assert ev[0]["decision"] == "again" and "incumbent" not in ev[0]
    q2, _ = learner(guard=0.0)
    drive_rates(q2, lambda arm, t: 1e6, 1.05)        # the warmup closes with a score
    assert q2._scores[1] == [] and q2._scores[0] == []


def test_the_most_overdue_arm_is_reprobed_first():
    q, ev = learner(arms=(0.0, 0.5, 1.0), guard=0.0)
    drive_rates(q, lambda arm, t: 1e6, 1.05)         # warmup on 1.0 closed: 0 and 0.5 due at once
    assert q.current == 0                            # equal: the lower index
    q._next_probe = {0: 9, 1: 7}
    q.phase, q.current, q.epoch = "hold", q.incumbent, 10
    q._decide()
    assert q.current == 1 and q.phase == "reprobe"   # 0.5 is overdue since epoch 7, 0 since 9


def test_an_equal_arm_is_rechecked_after_waits_that_double_up_to_the_cap():
    q, ev = learner(recheck_epochs=2, reprobe_epochs=4, max_backoff=4, guard=0.0)
    drive_rates(q, lambda arm, t: 1e6, 80.0)         # both arms alike, no noise: never clearly better
    probes = [e["epoch"] for e in ev if e["phase"] == "reprobe"]
    assert [b - a for a, b in zip(probes, probes[1:])][:5] == [3, 5, 9, 17, 17]   # 2, 4, 8, then 16 = 4 x 4
    assert {e["decision"] for e in ev if e["phase"] == "reprobe"} == {"undecided"}
    assert {e["decision"] for e in ev if e["phase"] == "hold"} == {"hold"}


def test_a_switch_counts_and_the_old_incumbent_is_rechecked_after_recheck_epochs():
    q, ev = learner(guard=0.0, recheck_epochs=2, reprobe_epochs=4)
    # 1.00 (the start) is half as good as 0 until 40 s, then twice as good: two switches
    drive_rates(q, lambda arm, t: (0.5e6 if arm == 1.0 else 1e6) if t < 40 else (1e6 if arm == 1.0 else 0.5e6), 90.0)
    assert q.switches == 2 and q.arms[q.incumbent] == 1.0
    first = next(i for i, e in enumerate(ev) if e["decision"] == "switched")
    after = [e["phase"] for e in ev[first + 1:first + 4]]
    assert after == ["hold", "hold", "reprobe"] and ev[first + 3]["pkt_qos"] == 1.0
    assert q._backoff[0] >= 1


def test_a_loser_after_a_switch_waits_reprobe_epochs_times_two():
    q, ev = learner(guard=0.0, recheck_epochs=2, reprobe_epochs=4, max_backoff=8)
    drive_rates(q, lambda arm, t: 1e6 if arm == 0.0 else 0.25e6, 120.0)
    (sw,) = [e for e in ev if e["decision"] == "switched"]
    kept = [e["epoch"] for e in ev if e["phase"] == "reprobe" and e["epoch"] > sw["epoch"]]
    # rechecked after 2 epochs, then kept: waits of 4 x 2, 4 x 4, 4 x 8 (the old incumbent's backoff was 1)
    assert [b - a for a, b in zip(kept, kept[1:])][:3] == [9, 17, 33]
    assert [e["decision"] for e in ev if e["epoch"] in kept[1:4]] == ["incumbent kept"] * 3


def test_a_path_change_keeps_the_incumbents_last_two_scores_and_forgets_the_rest():
    q, ev = learner(guard=0.0, reprobe_epochs=4, max_backoff=8)
    q._scores = {0: [5.0, 5.0, 5.0], 1: [10.0, 10.0, 10.0, 7.0, 6.0]}
    q.incumbent = q.current = 1
    q.phase, q.epoch = "hold", 20
    q._backoff = {0: 8}
    q._next_probe = {0: 99}
    assert q._decide() == "path changed"
    assert q._scores == {0: [], 1: [7.0, 6.0]} and q._backoff == {0: 1}
    assert q.phase == "reprobe" and q.current == 0


def test_the_learners_of_a_sender_forget_the_least_recently_used_first():
    learners = QosLearners(AdaptiveQosConfig(), max_flows=2)
    a, b = learners.get("a"), learners.get("b")
    assert learners.get("a") is a
    learners.get("c")                                # b is the least recently used
    assert learners.known("a") is a and learners.known("b") is None and learners.evicted == 1
