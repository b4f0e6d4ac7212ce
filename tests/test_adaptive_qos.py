"""The adaptive A-SPAN sender (issue 29; aspan/adaptive.py): the learner in virtual time against a
synthetic path, its bounds, its YAML, and the two data planes that stamp its choice."""
import json
import random

import pandas as pd
import pytest
from scapy.all import IP, TCP, Raw

from aspan.adaptive import HALF, SEQ_MOD, AdaptiveQosConfig, QosLearner, QosLearners
from aspan.agent import SnoopAgent
from aspan.fields import AspanFields
from aspan.policy import SnoopConfig
from experiments.runner import run_experiment
from experiments.schema import ExperimentError, load_experiment
from routing.kernel.ip_option import decode_option
from routing.kernel.ipv4 import find_option
from routing.kernel.forwarder import HOOK_IN, HOOK_OUT, KernelForwarder
from routing.links.loss import NoLoss

DIAMOND = [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"]]
GRID = [[f"N{r}{c}", f"N{r}{c + 1}"] for r in range(3) for c in range(2)] + \
       [[f"N{r}{c}", f"N{r + 1}{c}"] for r in range(2) for c in range(3)]


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


# ---- end to end on the sim: the lossy chain, a diamond, crossing flows ---------------------------------------

def _run(tmp_path, doc, plot=False):
    exp = load_experiment(dict({"name": "ad", "backend": "sim", "repetitions": 1, "seed": 3}, **doc), "ad.yaml")
    d = run_experiment(exp, out=tmp_path, plot=plot, progress=lambda s: None)
    return d, pd.read_csv(d / "summary.csv")


def _qos_events(path):
    return [e for e in (json.loads(line) for line in path.open()) if e.get("ev") == "qos"]


def test_on_the_lossy_chain_it_turns_the_papers_dupack_rule_off_and_the_once_rule_on(tmp_path):
    """With the paper's dupack rule, caching feeds a cascade of local retransmissions that halves the
    goodput (docs/REPRODUCTION.md): the sender stops caching, and keeps a third more goodput than the
    fixed setting it started from (it pays for finding out: docs/REPRODUCTION.md, "The adaptive sender").
    With classic Snoop's rule caching pays: the sender keeps it and beats SACK."""
    doc = {"topology": {"chain": ["A", "B", "C", "D"]}, "tcp": {"variant": "sack"},
           "loss": {"default": {"model": "bernoulli", "rate": 0.005}},
           "flows": [{"sender": "A", "receiver": "D", "segments": 16000}],
           "variants": [{"name": "sack"},
                        {"name": "fixed-every", "snoop": {"policy": "adaptive", "dupack": "every", "pkt_qos": 1.0}},
                        {"name": "every", "snoop": {"policy": "adaptive", "dupack": "every", "sender_qos": "adaptive"}},
                        {"name": "once", "snoop": {"policy": "adaptive", "dupack": "once", "sender_qos": "adaptive"}}]}
    d, df = _run(tmp_path, doc, plot=True)
    g = df.set_index("variant")["goodput_mbps"]
    assert df["integrity_ok"].all()
    assert (d / "figures" / "qos_time.png").is_file()              # cwnd and pkt_qos on one time axis
    last = {v: _qos_events(d / v / "rep0" / "A.log")[-1]["incumbent"] for v in ("every", "once")}
    assert last == {"every": 0.0, "once": 1.0}
    assert g["every"] > 1.3 * g["fixed-every"] and g["once"] > g["sack"]


@pytest.mark.parametrize("topology,flows", [
    ({"links": DIAMOND}, [("A", "D")]),
    ({"links": GRID}, [("N01", "N21"), ("N10", "N12"), ("N21", "N01")]),
])
def test_every_flow_on_a_graph_has_its_own_learner(tmp_path, topology, flows):
    doc = {"topology": topology, "tcp": {"variant": "sack"}, "etx": {"settle_s": 1.0},
           "loss": {"default": {"model": "bernoulli", "rate": 0.005}},
           "snoop": {"policy": "adaptive", "dupack": "once", "sender_qos": "adaptive", "qos_epoch_s": 0.5},
           "flows": [{"sender": s, "receiver": r, "segments": 1500} for s, r in flows]}
    d, df = _run(tmp_path, doc)
    assert len(df) == len(flows) and df["integrity_ok"].all() and (df["status"] == "ok").all()
    addr = json.loads((d / "default" / "rep0" / "meta.json").read_text())["nodes"]
    for s, r in flows:
        q = _qos_events(d / "default" / "rep0" / f"{s}.log")
        (flow,) = {e["flow"] for e in q}               # one learner, for the one flow this node sends
        assert flow.startswith(f"{addr[s]}:") and f">{addr[r]}:" in flow
        assert len(q) >= 3 and {e["phase"] for e in q} >= {"warmup", "reprobe"}
    for node in {n for link in topology["links"] for n in link} - {s for s, _ in flows}:
        assert not _qos_events(d / "default" / "rep0" / f"{node}.log")   # only senders learn


def test_on_the_local_backend_the_nodes_sender_learns_over_udp(tmp_path, no_leftover_nodes):
    """The overlay's user-space TCP on loopback processes (the Pis' overlay runs the same node)."""
    import yaml
    from conftest import start_run
    doc = {"name": "al", "backend": "local", "repetitions": 1, "etx": {"settle_s": 1.0},
           "limits": {"max_duration_s": 90}, "topology": {"links": DIAMOND},
           "loss": {"default": {"model": "bernoulli", "rate": 0.005}}, "tcp": {"variant": "sack"},
           # short epochs: on an idle machine the flow runs at about 50 Mbit/s over loopback (1.3 s)
           "snoop": {"policy": "adaptive", "dupack": "once", "sender_qos": "adaptive", "qos_epoch_s": 0.05},
           "flows": [{"sender": "A", "receiver": "D", "segments": 8000}]}
    f = tmp_path / "al.yaml"
    f.write_text(yaml.safe_dump(doc))
    p = start_run(f, tmp_path / "runs", "--no-plot")
    out, _ = p.communicate(timeout=240)
    assert p.returncode == 0, out
    [run] = list((tmp_path / "runs" / "al").iterdir())
    assert pd.read_csv(run / "summary.csv")["integrity_ok"].all()
    q = _qos_events(run / "default" / "rep0" / "A.log")
    assert len(q) >= 3 and {e["phase"] for e in q} >= {"warmup", "reprobe"}
    assert {e["pkt_qos"] for e in q} == {0.0, 1.0} and all(e["score_mbps"] > 0 for e in q if "score_mbps" in e)


def test_the_kernel_data_plane_refuses_an_adaptive_sender_without_its_snoop_handler():
    from experiments.runner import check_backend_support
    exp = load({"snoop": {"policy": "adaptive", "sender_qos": "adaptive"}, "netns": {"handlers": "kernel"}})
    with pytest.raises(ExperimentError, match="sender_qos") as e:
        check_backend_support(exp, "netns")
    assert "handler" in str(e.value)
    check_backend_support(exp, "sim")


def test_the_qos_series_steps_through_what_each_epoch_ran(tmp_path):
    """plots.qos: the pkt_qos in use from the qos events, on the time since the flow start."""
    from plots.data import load_run
    from plots.qos import is_adaptive, qos_series
    from plots.testing import FLOW, basic_flow_events, write_rep
    events = basic_flow_events(t_start=1.0)
    for k, (ran, nxt, dec) in enumerate([(1.0, 0.0, "hold"), (0.0, 1.0, "undecided"), (1.0, 0.0, "hold"),
                                         (0.0, 0.0, "switched"), (0.0, 0.0, "hold")]):
        events.append({"t": 2.0 + k, "node": "A", "ev": "qos", "flow": FLOW, "epoch": k + 1,
                       "phase": "hold" if ran == 1.0 else "reprobe", "pkt_qos": ran, "next_qos": nxt,
                       "decision": dec, "score_mbps": 1.0})
    run = tmp_path / "run"
    write_rep(run, "v", 0, events, snoop={"sender_qos": "adaptive", "qos_epoch_s": 1.0})
    write_rep(run, "w", 0, basic_flow_events(t_start=1.0), snoop={"sender_qos": "fixed"})
    reps = {r.variant: r for r in load_run(run, write=False).reps}
    assert is_adaptive(reps["v"]) and not is_adaptive(reps["w"])
    s = qos_series(reps["v"])
    assert list(s.t) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and list(s.qos) == [1.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert list(s.switches) == [4.0]
    assert qos_series(reps["w"]) is None


def _summary(run: "Path", rows: dict[str, list[float]], losses: int = 10) -> "Path":
    run.mkdir(parents=True)
    lines = ["variant,flow,repetition,goodput_mbps,losses_dupack,losses_rto"]
    for variant, goodputs in rows.items():
        lines += [f"{variant},A->D:6000,{i},{g},{losses},0" for i, g in enumerate(goodputs)]
    (run / "summary.csv").write_text("\n".join(lines) + "\n")
    return run


def test_the_judge_finds_the_best_fixed_setting_and_says_which_target_is_missed(tmp_path):
    """plots.adaptive: the best fixed A-SPAN setting of a scenario, the candidate against it and SACK, the
    average over scenarios of goodput as a fraction of each scenario's best; a later run replaces a variant."""
    from plots.adaptive import judge, per_setting
    base = {"sack": [4.0, 4.0], "classic": [5.0, 5.0], "ackall": [9.0, 9.0], "q1.00-once": [6.0, 6.0],
            "q0.90-once": [4.0, 4.0], "adaptive-once": [5.0, 5.0]}
    a = _summary(tmp_path / "adaptive-x" / "1", base)
    b = _summary(tmp_path / "adaptive-x" / "2", {"adaptive-once": [5.8, 5.9]})
    c = _summary(tmp_path / "adaptive-y" / "1", {**base, "cell-sack": [1.0], "cell-classic": [1.0],
                                                 "cell-ackall": [1.0], "cell-q1.00-once": [1.0],
                                                 "cell-adaptive-once": [1.0]})
    table = per_setting([a, b, c])
    verdict, averaged = judge(table)
    v = verdict.set_index("scenario")
    assert v.loc["x", "best fixed"] == "q1.00-once"                 # ACK-all is not an A-SPAN setting
    assert v.loc["x", "adaptive-once"] == pytest.approx(5.85)       # the rerun replaced the first run's
    assert bool(v.loc["x", "within 5 % of best"]) and not bool(v.loc["y", "within 5 % of best"])
    assert set(v.index) == {"x", "y", "y/cell"}
    assert averaged.loc["q1.00-once", "mean"] == pytest.approx(1.0)
    assert averaged.loc["adaptive-once", "mean"] == pytest.approx((5.85 / 6 + 5 / 6 + 1.0) / 3)
