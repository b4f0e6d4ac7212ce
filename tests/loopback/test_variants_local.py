"""The snoop schemes that put something new on the wire (SNACK entries, generated ACKs) on the
local backend: node processes on loopback UDP, the same cores as in virtual time.
"""
import json
import pandas as pd
from tests.runs import start_run
from tests.loopback.test_local_backend import only_run_dir, write_exp


def test_snack_and_ackall_over_udp(tmp_path, no_leftover_nodes):
    exp = write_exp(tmp_path, segments=300, loss=0.01, variants=[
        {"name": "snack", "tcp": {"variant": "reno", "snack": True},
         "snoop": {"scheme": "snack", "policy": "every"}},
        {"name": "ackall", "tcp": {"variant": "reno"},
         "snoop": {"scheme": "ackall", "policy": "fixed", "fixed_hop": 2}},
    ])
    p = start_run(exp, tmp_path / "runs", "--no-plot")
    out, _ = p.communicate(timeout=240)
    assert p.returncode == 0, out
    run = only_run_dir(tmp_path / "runs")
    df = pd.read_csv(run / "summary.csv")
    assert list(df["variant"]) == ["snack", "ackall"]
    assert df["integrity_ok"].all() and (df["status"] == "ok").all()
    gen = [json.loads(line) for line in (run / "ackall" / "rep0" / "C.log").read_text().splitlines()
           if '"ev":"ack_gen"' in line]
    assert len(gen) >= 250                      # one per data segment C cached, at least
