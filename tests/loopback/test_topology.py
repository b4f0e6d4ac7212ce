"""Issue 22, items 1, 2 and 4: a topology is a graph; routes by hop count or ETX over it; crossing flows."""
import json
import pandas as pd
from tests.experiments.test_topology import DIAMOND


def test_a_link_loss_on_the_local_backend_hits_only_what_crosses_that_link(tmp_path, no_leftover_nodes):
    """The UDP driver names the sender of each datagram when a link has its own loss model: what B hears from
    A is lost, nothing else.  The probes (10 a second on every directed link, 10 s of settling) carry the
    check; the flow, C -> D, crosses no lossy link.  (A flow A -> D over the lossy link failed a CI run: the
    user-space TCP with too few segments in flight for three dupacks lives on RTOs, and Karn's rule kept the
    timer backed off to 25.6 s: 300 segments unfinished at 90 s.)"""
    import yaml
    from tests.runs import start_run
    doc = {"name": "ll", "backend": "local", "repetitions": 1, "etx": {"settle_s": 10.0},
           "limits": {"max_duration_s": 90}, "topology": {"links": DIAMOND},
           "loss": {"links": {"A>B": {"model": "bernoulli", "rate": 0.2}}},
           "tcp": {"variant": "sack"}, "flows": [{"sender": "C", "receiver": "D", "segments": 50}]}
    f = tmp_path / "ll.yaml"
    f.write_text(yaml.safe_dump(doc))
    p = start_run(f, tmp_path / "runs", "--no-plot")
    out, _ = p.communicate(timeout=240)
    assert p.returncode == 0, out
    [run] = list((tmp_path / "runs" / "ll").iterdir())
    assert pd.read_csv(run / "summary.csv")["integrity_ok"].all()
    rep = run / "default" / "rep0"
    stops = {n: [json.loads(line) for line in (rep / f"{n}.log").open() if '"node_stop"' in line][0] for n in "ABCD"}
    assert stops["B"]["drops"]["loss"] > 8                        # what B heard from A: 20 % of about 100 probes
    assert all(stops[n]["drops"]["loss"] == 0 for n in "ACD")     # no other link or node loses anything
