"""Issue 23: link-state routing by ETX (routing.topology.linkstate), each rule tested against its source.

Part 1 and 2 drive the core alone in virtual time (no I/O: LSAs are handed from router to router by
:class:`Mesh`); part 3 runs NodeCore on the sim backend.  The rules are the module docstring's:
flooding and sequence numbers (RFC 2328 Sec. 13), hold time (RFC 3626 Sec. 18.3, TOP_HOLD_TIME and
NEIGHB_HOLD_TIME), the two-way check (RFC 2328 Sec. 16.1, step 2b), feasibility (RFC 8966 Sec. 2.4)
and hysteresis (issue 23, item 1 and item 6: the route-flap case).
"""
from __future__ import annotations

import json
import pandas as pd
from tests.routing.topology.test_linkstate import DIAMOND
from tests.system.test_linkstate import _events


def test_the_local_backend_reroutes_with_the_mac_on(tmp_path, no_leftover_nodes):
    """The sim has no authenticated overlay; the local backend does (auth.mac, routing.overlay.auth): its nodes
    seal and verify every LSA, and A still moves its route to D from B to C when A-B goes down.  A-C
    loses 2 % so that the path via B is the cheaper one before the failure.  Real time: generous bounds."""
    import yaml
    from tests.runs import kill_group, start_run
    doc = {"name": "loc", "backend": "local", "repetitions": 1, "etx": {"settle_s": 1.0},
           "limits": {"max_duration_s": 90}, "topology": {"links": DIAMOND},
           "routing": {"metric": "etx", "dynamic": True}, "auth": {"mac": True},
           "loss": {"links": {"A-B": {"model": "bernoulli", "rate": 0.0, "down": [[0.0, 60]]},
                              "A-C": {"model": "bernoulli", "rate": 0.02}}},
           "tcp": {"variant": "sack"}, "flows": [{"sender": "A", "receiver": "D", "segments": 3000}]}
    f = tmp_path / "loc.yaml"
    f.write_text(yaml.safe_dump(doc))
    p = start_run(f, tmp_path / "runs", "--no-plot")
    try:
        out, _ = p.communicate(timeout=240)
    finally:
        kill_group(p)
    assert p.returncode == 0, out
    [run] = list((tmp_path / "runs" / "loc").iterdir())
    df = pd.read_csv(run / "summary.csv")
    assert df["integrity_ok"].all() and (df["status"] == "ok").all()
    rep = run / "default" / "rep0"
    assert json.loads((rep / "meta.json").read_text())["auth"] is True
    addrs = json.loads((rep / "A.node.json").read_text())["experiment"]["topology"]["addresses"]
    t_fail = _events(rep, "A", "flow_start")[0]["t"]    # A-B is down from the flow's start (a fast run ends sooner)
    to_d = [e for e in _events(rep, "A", "route") if e["dst"] == addrs["D"] and e["t"] > t_fail]
    assert to_d and to_d[0]["new"] == addrs["C"] and to_d[0]["t"] - t_fail < 10, to_d
    for n in "ABCD":
        drops = _events(rep, n, "node_stop")[0]["drops"]
        assert drops["forged"] == 0 and drops["replay"] == 0 and drops["ttl"] == 0, (n, drops)
