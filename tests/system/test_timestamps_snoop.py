"""RFC 7323 timestamps (tcp.timestamps) under every snoop scheme on the sim: the agents cache and retransmit the
sender's segments with the timestamps it put in them, and forge or hold ACKs; with the option on, every scheme's
flow must still complete intact, and the caching ones must still retransmit locally (tcp_user/connection.py's
RTTM and PAWS beside aspan/)."""
import pandas as pd
import pytest

from experiments.runner import run_experiment
from experiments.schema import load_experiment

SCHEMES = {
    "sack": {"tcp": {"variant": "sack", "timestamps": True}},
    "aspan": {"tcp": {"variant": "sack", "timestamps": True},
              "snoop": {"policy": "adaptive", "pkt_qos": 0.99, "dupack": "once"}},
    "classic": {"tcp": {"variant": "reno", "timestamps": True},
                "snoop": {"scheme": "classic", "policy": "fixed", "fixed_hop": 2}},
    "multihop": {"tcp": {"variant": "reno", "timestamps": True}, "snoop": {"scheme": "multihop"}},
    "slack": {"tcp": {"variant": "reno", "timestamps": True},
              "snoop": {"scheme": "slack", "policy": "fixed", "fixed_hop": 2}},
    # ACK-all acknowledges the data to the sender itself: a copy the receiver's PAWS check drops is sent by nobody
    # else, so its local retransmissions must carry the flow's latest TSval (routing.overlay.engine.LatestTsval)
    "ackall": {"tcp": {"variant": "reno", "timestamps": True},
               "snoop": {"scheme": "ackall", "policy": "fixed", "fixed_hop": 2}},
}
CHAIN = ({"chain": ["A", "B", "C", "D"]}, [{"sender": "A", "receiver": "D", "segments": 1500}])


def run(tmp_path, topology, flows, schemes):
    exp = load_experiment({"name": "ts", "backend": "sim", "repetitions": 1, "seed": 5, "topology": topology,
                           "loss": {"default": {"model": "bernoulli", "rate": 0.02}}, "flows": flows,
                           "limits": {"max_duration_s": 300},
                           "variants": [{"name": n, **v} for n, v in schemes.items()]}, "ts.yaml")
    return pd.read_csv(run_experiment(exp, out=tmp_path, plot=False, progress=lambda s: None) / "summary.csv")


@pytest.mark.parametrize("topology,flows", [
    CHAIN,
    # a graph with two paths and two flows crossing at B
    ({"nodes": ["A", "B", "C", "D", "E"], "links": [["A", "B"], ["B", "D"], ["A", "C"], ["C", "D"], ["E", "B"]]},
     [{"sender": "A", "receiver": "D", "segments": 800}, {"sender": "E", "receiver": "C", "segments": 800}]),
], ids=["chain", "two-paths-crossing"])
def test_every_scheme_completes_with_timestamps_and_the_caching_ones_retransmit_locally(tmp_path, topology, flows):
    df = run(tmp_path, topology, flows, SCHEMES)
    assert len(df) == len(SCHEMES) * len(flows)
    assert (df["status"] == "ok").all(), df[["variant", "flow", "status"]]
    assert df["integrity_ok"].all()
    local = df.groupby("variant")["local_retransmissions"].sum()
    for scheme in ("aspan", "classic", "multihop"):
        assert local[scheme] > 0, (scheme, local.to_dict())
    assert local["sack"] == 0

