"""The adaptive A-SPAN sender (issue 29; aspan/adaptive.py): the learner in virtual time against a
synthetic path, its bounds, its YAML, and the two data planes that stamp its choice.
"""
import pandas as pd
from tests.system.test_adaptive import DIAMOND, _qos_events


def test_on_the_local_backend_the_nodes_sender_learns_over_udp(tmp_path, no_leftover_nodes):
    """The overlay's user-space TCP on loopback processes (the Pis' overlay runs the same node)."""
    import yaml
    from tests.runs import start_run
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
