"""The virtual-time backend: complete, deterministic runs of the same cores."""
import json
from pathlib import Path
import pandas as pd
import yaml
from experiments.runner import run_experiment
from experiments.schema import load_experiment


DOC = {
    "name": "simt", "backend": "sim", "seed": 4, "repetitions": 2,
    "loss": {"default": {"model": "bernoulli", "rate": 0.005}},
    "etx": {"settle_s": 2.0},
    "flows": [{"sender": "A", "receiver": "D", "segments": 1500}],
    "variants": [
        {"name": "reno", "tcp": {"variant": "reno"}},
        {"name": "aspan", "tcp": {"variant": "sack"}, "snoop": {"policy": "adaptive", "pkt_qos": 1.0, "dupack": "once"}},
    ],
}


def run(tmp: Path, doc=DOC, jobs=1) -> Path:
    return run_experiment(load_experiment(doc, "simt.yaml"), out=tmp, jobs=jobs, plot=False,
                          progress=lambda s: None)


def test_same_seed_gives_byte_identical_summary(tmp_path):
    a = run(tmp_path / "a", jobs=1)
    b = run(tmp_path / "b", jobs=2)
    assert (a / "summary.csv").read_bytes() == (b / "summary.csv").read_bytes()
    for rep in ("reno/rep0", "aspan/rep1"):
        assert (a / rep / "C.log").read_bytes() == (b / rep / "C.log").read_bytes()


def test_a_different_seed_gives_different_results(tmp_path):
    a = pd.read_csv(run(tmp_path / "a") / "summary.csv")
    b = pd.read_csv(run(tmp_path / "b", dict(DOC, seed=99)) / "summary.csv")
    assert not a["duration_s"].equals(b["duration_s"])


def test_sim_run_completes_with_integrity_and_snooping(tmp_path):
    d = run(tmp_path)
    df = pd.read_csv(d / "summary.csv")
    assert list(df["variant"]) == ["reno", "reno", "aspan", "aspan"]
    assert list(df["seed"]) == [4, 5, 4, 5]
    assert df["integrity_ok"].all() and (df["status"] == "ok").all()
    aspan = df[df["variant"] == "aspan"]
    reno = df[df["variant"] == "reno"]
    assert (aspan["cache_max_segments"] > 0).all() and (aspan["snoop_hits"] > 0).all()
    assert (reno["cache_max_segments"] == 0).all() and (reno["local_retransmissions"] == 0).all()
    resolved = yaml.safe_load((d / "experiment.yaml").read_text())
    assert [v["name"] for v in resolved["variants"]] == ["reno", "aspan"]
    meta = json.loads((d / "aspan" / "rep0" / "meta.json").read_text())
    assert meta["backend"] == "sim" and meta["status"] == "ok"


def test_no_loss_means_three_transmissions_per_packet(tmp_path):
    doc = dict(DOC, repetitions=1, loss={"default": {"model": "none"}},
               link={"queue_packets": 1000}, variants=[{"name": "sack", "tcp": {"variant": "sack"}}])
    df = pd.read_csv(run(tmp_path, doc) / "summary.csv")
    row = df.iloc[0]
    assert (row["tx_per_pkt_p50"], row["tx_per_pkt_p99"], row["tx_per_pkt_max"]) == (3, 3, 3)
    assert row["losses_dupack"] == 0 and row["losses_rto"] == 0


def test_a_flow_that_cannot_finish_is_incomplete_not_hung(tmp_path):
    doc = dict(DOC, repetitions=1, limits={"max_duration_s": 3.0},
               loss={"default": {"model": "none"}, "nodes": {"C": {"model": "none", "down": [[0.5, 1000]]}}},
               variants=[{"name": "reno"}])
    d = run(tmp_path, doc)
    meta = json.loads((d / "reno" / "rep0" / "meta.json").read_text())
    assert meta["status"] == "incomplete"
    df = pd.read_csv(d / "summary.csv")
    assert df["status"].iloc[0] == "incomplete"


def test_each_flow_has_its_own_tcp_variant_and_all_contract_columns(tmp_path):
    doc = dict(DOC, repetitions=1, variants=[{"name": "mixed"}],
               topology={"chain": ["A", "B", "C", "D"]},
               flows=[{"sender": "A", "receiver": "D", "segments": 300, "variant": "sack"},
                      {"sender": "D", "receiver": "A", "segments": 300, "variant": "reno"}])
    d = run(tmp_path, doc)
    meta = json.loads((d / "mixed" / "rep0" / "meta.json").read_text())
    assert [f["variant"] for f in meta["flows"]] == ["sack", "reno"]
    starts = [json.loads(l) for n in "AD" for l in (d / "mixed" / "rep0" / f"{n}.log").read_text().splitlines()
              if '"flow_start"' in l]
    assert sorted((e["node"], e["variant"]) for e in starts) == [("A", "sack"), ("D", "reno")]
    df = pd.read_csv(d / "summary.csv")
    assert list(df.columns[:16]) == ["variant", "flow", "repetition", "seed", "segments", "duration_s", "goodput_mbps",
                                     "losses_dupack", "losses_rto", "cwnd_median", "tx_per_pkt_p50",
                                     "tx_per_pkt_p99", "tx_per_pkt_max", "cache_max_segments", "snoop_hits",
                                     "local_retransmissions"]
    assert df["integrity_ok"].all()


def test_a_sweep_is_plotted_against_the_swept_value(tmp_path):
    doc = dict(DOC, repetitions=1, flows=[{"sender": "A", "receiver": "D", "segments": 300}],
               variants=[{"name": "aspan", "tcp": {"variant": "sack"}, "snoop": {"policy": "adaptive"}}],
               sweep={"field": "snoop.pkt_qos", "values": [0.98, 1.0]})
    d = run_experiment(load_experiment(doc, "simt.yaml"), out=tmp_path, jobs=1, plot=True, progress=lambda s: None)
    assert yaml.safe_load((d / "experiment.yaml").read_text())["sweep"] == {"field": "snoop.pkt_qos", "values": [0.98, 1.0]}
    sweep_pngs = sorted(p.name for p in (d / "figures").glob("sweep_*.png"))
    assert "sweep_memory.png" in sweep_pngs and len(sweep_pngs) >= 4
    assert all((d / "figures" / n).stat().st_size > 1000 for n in sweep_pngs)
