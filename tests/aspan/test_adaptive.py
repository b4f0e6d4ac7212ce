"""The adaptive A-SPAN sender (issue 29; aspan/adaptive.py): the learner in virtual time against a
synthetic path, its bounds, its YAML, and the two data planes that stamp its choice.
"""
import random
import pytest
from scapy.all import IP, TCP, Raw
from aspan.adaptive import HALF, SEQ_MOD, AdaptiveQosConfig, QosLearner, QosLearners, CHANGE, WINDOW, Z
from aspan.agent import SnoopAgent
from aspan.fields import AspanFields
from aspan.policy import SnoopConfig
from experiments.schema import ExperimentError, load_experiment
from routing.kernel.ip_option import decode_option
from routing.kernel.ipv4 import find_option
from routing.kernel.forwarder import HOOK_IN, HOOK_OUT, KernelForwarder
from routing.links.loss import NoLoss
import math
import statistics


class Events(list):
    def emit(self, now, ev, **fields):
        self.append({"t": now, "ev": ev, **fields})

    def of(self, ev):
        return [e for e in self if e["ev"] == ev]


def drive(learner: QosLearner, rate, seconds: float, seed: int = 0, noise: float = 0.2,
          dt: float = 0.01) -> list[float]:
    """A synthetic path: every ``dt`` the sender stamps a segment and an ACK advances by
    ``rate(pkt_qos, t)`` bytes/s x dt, times a factor drawn every 0.1 s from N(1, noise) (clipped at 0).
    Returns the pkt_qos of every step."""
    rng = random.Random(seed)
    ack = 1000
    factor = 1.0
    used = []
    steps = int(seconds / dt)
    for i in range(steps):
        t = i * dt
        if i % 10 == 0:
            factor = max(0.0, rng.gauss(1.0, noise))
        q = learner.pkt_qos(t)
        used.append(q)
        ack = (ack + int(rate(q, t) * dt * factor)) % SEQ_MOD
        learner.on_ack(t, ack)
    return used


def two_rates(r0: float, r1: float):
    return lambda q, t: r0 if q == 0.0 else r1


# ---- the learner ----------------------------------------------------------------------------------

@pytest.mark.parametrize("start,first", [(1.0, 1.0), (0.0, 0.0), (0.6, 1.0), (0.4, 0.0)])
def test_the_warmup_runs_the_arm_nearest_the_experiments_pkt_qos_then_each_other_arm_once(start, first):
    ev = Events()
    learner = QosLearner(AdaptiveQosConfig(arms=(0.0, 1.0), start=start), "f", ev.emit)
    used = drive(learner, two_rates(1e6, 1e6), 3.5, noise=0.0)
    assert used[:100] == [first] * 100 and used[100:200] == [1.0 - first] * 100 and used[200:300] == [first] * 100
    assert [(e["phase"], e["pkt_qos"]) for e in ev.of("qos")] == [
        ("warmup", first), ("reprobe", 1.0 - first), ("hold", first)]
    assert learner.arms[learner.incumbent] == first


@pytest.mark.parametrize("best,start", [(0.0, 1.0), (1.0, 1.0), (1.0, 0.0), (0.0, 0.0)])
def test_it_converges_on_the_clearly_better_arm_from_either_start(best, start):
    """One arm carries twice the other's goodput (20 % noise per 0.1 s): the learner holds it within ten
    epochs, switching once if it started on the other, and spends more than 85 % of two minutes on it
    (the rest: re-probes that back off)."""
    ev = Events()
    learner = QosLearner(AdaptiveQosConfig(arms=(0.0, 1.0), start=start), "f", ev.emit)
    used = drive(learner, lambda q, t: 1e6 if q == best else 0.5e6, 120.0)
    assert learner.arms[learner.incumbent] == best
    assert learner.switches == (1 if best != start else 0)
    assert all(e["incumbent"] == best for e in ev.of("qos") if e["epoch"] >= 10)
    assert sum(q == best for q in used) / len(used) > 0.85


def test_equal_arms_do_not_take_turns():
    """Two arms with the same goodput and 20 % noise per 0.1 s: the incumbent changes at most once in
    five minutes, over ten seeds (the switching rule needs the margin and two standard errors)."""
    switches = []
    for seed in range(10):
        learner = QosLearner(AdaptiveQosConfig(arms=(0.0, 1.0)), "f")
        drive(learner, two_rates(1e6, 1e6), 300.0, seed=seed)
        switches.append(learner.switches)
    assert max(switches) <= 1 and sum(switches) <= 3, switches


def test_it_follows_a_path_whose_best_setting_changes():
    """Caching pays for the first minute, then costs half the goodput: the learner moves to not
    caching within 30 s of the change."""
    ev = Events()
    learner = QosLearner(AdaptiveQosConfig(arms=(0.0, 1.0)), "f", ev.emit)
    rate = lambda q, t: (1e6 if q == 1.0 else 0.6e6) if t < 60 else (0.5e6 if q == 1.0 else 1e6)   # noqa: E731
    drive(learner, rate, 90.0)
    at = {e["t"]: e for e in ev.of("qos")}
    assert at[60.0]["incumbent"] == 1.0 and at[89.0]["incumbent"] == 0.0 and learner.switches == 1
    assert [e["decision"] for e in ev.of("qos") if e["t"] > 60].count("path changed") >= 1


def test_a_clearly_worse_arm_is_reprobed_ever_more_rarely():
    """The gaps between re-probes of the losing arm double up to max_backoff x reprobe_epochs."""
    ev = Events()
    cfg = AdaptiveQosConfig(arms=(0.0, 1.0), reprobe_epochs=4, max_backoff=4)
    learner = QosLearner(cfg, "f", ev.emit)
    drive(learner, two_rates(0.3e6, 1e6), 200.0, noise=0.05)
    probes = [e["epoch"] for e in ev.of("qos") if e["phase"] == "reprobe"]
    gaps = [b - a for a, b in zip(probes, probes[1:])]
    # undecided on one score (re-checked 2 epochs later), then kept: 8 hold epochs, then 16 (the cap)
    assert gaps[:4] == [3, 9, 17, 17] and len(probes) < 15, probes


def test_an_epoch_without_ack_progress_scores_nothing_and_runs_the_same_arm_again():
    ev = Events()
    learner = QosLearner(AdaptiveQosConfig(arms=(0.0, 1.0), epoch_s=1.0), "f", ev.emit)
    drive(learner, two_rates(1e6, 1e6), 3.0)         # warmup, probe 0.0, probe 1.0 ...
    learner.pkt_qos(3.0)                              # closes the third epoch, which had ACKs
    phase, current = learner.phase, learner.current
    learner.pkt_qos(6.5)                              # three epochs with no ACK at all
    again = ev.of("qos")[-3:]
    assert [e["decision"] for e in again] == ["again"] * 3 and all("score_mbps" not in e for e in again)
    assert (learner.phase, learner.current) == (phase, current)


def test_ack_numbers_wrap_modulo_2_32_and_old_acks_count_nothing():
    cfg = AdaptiveQosConfig(arms=(0.0, 1.0), epoch_s=1.0, guard=0.0)
    learner = QosLearner(cfg, "f")
    learner.pkt_qos(0.0)
    learner.on_ack(0.1, SEQ_MOD - 500)
    learner.on_ack(0.2, 500)                          # 1000 bytes across the wrap
    learner.on_ack(0.3, 400)                          # older: nothing
    learner.on_ack(0.4, (500 + HALF + 10) % SEQ_MOD)  # more than half the space ahead: old, nothing
    assert learner._acked == 1000


def test_acks_in_the_guard_are_not_scored():
    ev = Events()
    learner = QosLearner(AdaptiveQosConfig(arms=(0.0, 1.0), epoch_s=1.0, guard=0.5), "f", ev.emit)
    learner.pkt_qos(0.0)
    learner.on_ack(0.1, 1)
    for k in range(1, 40):
        learner.on_ack(k / 100, 1 + 1000 * k)         # all within the first 0.4 s: the guard
    learner.on_ack(0.7, 1 + 1000 * 40)                # 1000 bytes after the guard
    learner.pkt_qos(1.0)
    (e,) = ev.of("qos")
    assert e["score_mbps"] == round(1000 / 0.5 * 8e-6, 4)


def test_every_epoch_is_one_event_with_what_ran_and_what_runs_next():
    ev = Events()
    learner = QosLearner(AdaptiveQosConfig(arms=(0.0, 0.99, 1.0)), "A->D", ev.emit)
    drive(learner, lambda q, t: 1e6 if round(q, 4) == 0.99 else 0.4e6, 15.0, noise=0.0)   # 0.99 on the header grid
    q = ev.of("qos")
    assert [e["t"] for e in q] == [float(i) for i in range(1, 15)]
    assert [(e["phase"], round(e["pkt_qos"], 2)) for e in q[:4]] == [
        ("warmup", 1.0), ("reprobe", 0.0), ("reprobe", 0.99), ("hold", 1.0)]
    assert all(a["next_qos"] == b["pkt_qos"] for a, b in zip(q, q[1:]))
    (switch,) = [e for e in q if e["decision"] == "switched"]
    assert round(switch["next_qos"], 4) == 0.99 and q[-1]["incumbent"] == switch["next_qos"]


def test_the_learners_of_a_sender_are_bounded_least_recently_used_first():
    learners = QosLearners(AdaptiveQosConfig(), max_flows=3)
    for f in "abcde":
        learners.get(f)
    learners.get("c")
    learners.get("x")
    assert len(learners) == 3 and learners.evicted == 3
    assert learners.known("a") is None and learners.known("c") is not None and learners.known("d") is None


@pytest.mark.parametrize("kw", [{"arms": (0.5,)}, {"arms": (0.5, 0.5)}, {"arms": (0.0, 1.5)}, {"epoch_s": 0},
                                {"guard": 1.0}, {"margin": -0.1}, {"reprobe_epochs": 0}])
def test_a_wrong_learner_setting_is_refused(kw):
    with pytest.raises(ValueError, match="snoop.qos"):
        AdaptiveQosConfig(**kw)


# ---- the YAML ------------------------------------------------------------------------------------------

def load(doc):
    return load_experiment(dict({"name": "t", "backend": "sim", "topology": {"chain": ["A", "B", "C", "D"]},
                                 "flows": [{"sender": "A", "receiver": "D", "segments": 10}]}, **doc), "t.yaml")


def errors(doc) -> dict[str, str]:
    with pytest.raises(ExperimentError) as e:
        load(doc)
    return {err.path: err.message for err in e.value.errors}


def test_the_yaml_refuses_an_adaptive_sender_where_nothing_reads_pkt_qos_and_bad_arms():
    errs = errors({"snoop": {"scheme": "classic", "policy": "fixed", "sender_qos": "adaptive"}})
    assert "policy adaptive or perfect" in errs["snoop.sender_qos"]
    errs = errors({"snoop": {"policy": "none", "sender_qos": "adaptive"}})
    assert "snoop.sender_qos" in errs
    assert "2 to 8" in errors({"snoop": {"policy": "adaptive", "sender_qos": "adaptive", "qos_arms": [1.0]}})[
        "snoop.qos_arms"]
    assert "distinct" in errors({"snoop": {"policy": "adaptive", "sender_qos": "adaptive",
                                           "qos_arms": [1.0, 1.0]}})["snoop.qos_arms"]
    assert "[0, 1]" in errors({"snoop": {"policy": "adaptive", "qos_arms": [0, 2]}})["snoop.qos_arms"]
    ok = load({"snoop": {"policy": "adaptive", "sender_qos": "adaptive", "qos_arms": [0, 0.99, 1]}})
    assert ok.variants[0].config["snoop"]["qos_arms"] == [0, 0.99, 1]


# ---- the kernel data plane's handler at the sender --------------------------------------------------------

ADDR = {"A": "10.2.1.1", "B": "10.2.1.2", "D": "10.2.1.4"}


FLOW = "10.2.1.1:5000>10.2.1.4:6000"


def _data(seq):
    return bytes(IP(src=ADDR["A"], dst=ADDR["D"], ttl=64) / TCP(sport=5000, dport=6000, seq=seq, ack=1, flags="PA")
                 / Raw(b"d" * 1000))


def _ack(n):
    return bytes(IP(src=ADDR["D"], dst=ADDR["A"], ttl=64) / TCP(sport=6000, dport=5000, seq=1, ack=n, flags="A"))


def test_the_kernel_handler_stamps_the_learners_choice_and_scores_the_acks_it_hears():
    ev = Events()
    agent = SnoopAgent("A", SnoopConfig(policy="adaptive"), ev.emit)
    fw = KernelForwarder(ADDR["A"], lambda dst: ADDR["B"], lambda nbr: 0.995, agent, NoLoss(),
                         AspanFields(1.0, 0.5, 0, 0, 0), 94, ev.emit, AdaptiveQosConfig(arms=(0.0, 1.0)))
    stamped = []
    seq = 1
    for i in range(400):                               # 4 s, a segment and its ACK every 10 ms
        now = i * 0.01
        v = fw.on_packet(HOOK_OUT, _data(seq), now)
        fields, _hops = decode_option(v.payload, find_option(v.payload, (v.payload[0] & 15) * 4, 94))
        stamped.append(round(fields.pkt_qos, 4))
        seq += 1000
        fw.on_packet(HOOK_IN, _ack(seq), now + 0.005)
    q = ev.of("qos")
    assert [e["flow"] for e in q] == [FLOW] * 3 and [e["phase"] for e in q] == ["warmup", "reprobe", "hold"]
    # the warmup on the arm nearest the experiment's pkt_qos (the default start, 1.0), a re-probe of 0
    assert stamped[:100] == [1.0] * 100 and stamped[100:200] == [0.0] * 100 and stamped[200:300] == [1.0] * 100
    assert all(e["score_mbps"] > 0.5 for e in q)       # 1000 bytes per 10 ms: 0.8 Mbit/s
    assert len(fw.qos) == 1


def test_the_kernel_data_plane_refuses_an_adaptive_sender_without_its_snoop_handler():
    from experiments.runner import check_backend_support
    exp = load({"snoop": {"policy": "adaptive", "sender_qos": "adaptive"}, "netns": {"handlers": "kernel"}})
    with pytest.raises(ExperimentError, match="sender_qos") as e:
        check_backend_support(exp, "netns")
    assert "handler" in str(e.value)
    check_backend_support(exp, "sim")


# ====================================================================================================
# The adaptive sender's rules one by one (issue 30, item 4; aspan/adaptive.py): the statistics it switches
# by, the ACK accounting, the schedule of re-probes, the events.  Each test builds the learner's state by
# hand or drives it a few epochs, and checks exact values derived from the module's docstring.


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
